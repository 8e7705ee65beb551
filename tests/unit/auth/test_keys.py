"""Key files: created 0600 atomically, never loaded when others can read them."""

from __future__ import annotations

import os
import stat

import pytest

from legionrm.auth import keys
from legionrm.auth.errors import KeyFileError, KeyPermissionError


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_saved_key_is_0600_and_round_trips(tmp_path) -> None:
    old = os.umask(0)  # even with a permissive umask the file is 0600
    try:
        path = keys.save_private_key(tmp_path / "ann.key", k := keys.generate_private_key())
    finally:
        os.umask(old)
    assert _mode(path) == 0o600
    loaded = keys.load_private_key(path)
    assert keys.encode_public_key(loaded.public_key()) == keys.encode_public_key(k.public_key())
    assert [p.name for p in tmp_path.iterdir()] == ["ann.key"]  # no temporary file left behind


def test_save_refuses_to_replace_unless_asked(tmp_path) -> None:
    path = keys.save_private_key(tmp_path / "k", keys.generate_private_key())
    with pytest.raises(KeyFileError, match="already exists"):
        keys.save_private_key(path, keys.generate_private_key())
    new = keys.generate_private_key()
    keys.save_private_key(path, new, overwrite=True)
    assert keys.encode_public_key(keys.load_private_key(path).public_key()) == keys.encode_public_key(new.public_key())
    assert _mode(path) == 0o600 and len(list(tmp_path.iterdir())) == 1


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o660], ids=lambda m: f"{m:04o}")
def test_load_refuses_a_key_others_may_read_or_write(tmp_path, mode: int) -> None:
    path = keys.save_private_key(tmp_path / "ann.key", keys.generate_private_key())
    os.chmod(path, mode)
    with pytest.raises(KeyPermissionError) as err:
        keys.load_private_key(path)
    msg = str(err.value)
    assert str(path) in msg and f"{mode:04o}" in msg and "chmod 600" in msg
    assert err.value.mode == mode and err.value.path == str(path)


def test_owner_read_only_is_fine(tmp_path) -> None:
    path = keys.save_private_key(tmp_path / "k", k := keys.generate_private_key())
    os.chmod(path, 0o400)
    loaded = keys.load_private_key(path)
    assert keys.encode_public_key(loaded.public_key()) == keys.encode_public_key(k.public_key())


BAD_FILES = [
    ("missing", None, "no such key file"),
    ("not-a-key", b"hello", "not a readable private key"),
    ("too-large", b"x" * 10_000, "too large"),
]


@pytest.mark.parametrize("content, message", [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_load_bad_files(tmp_path, content, message) -> None:
    path = tmp_path / "k"
    if content is not None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, content)
        os.close(fd)
    with pytest.raises(KeyFileError, match=message):
        keys.load_private_key(path)


def test_load_refuses_a_symlink(tmp_path) -> None:
    real = keys.save_private_key(tmp_path / "real", keys.generate_private_key())
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(KeyFileError):
        keys.load_private_key(tmp_path / "link")


def test_credential_repr_hides_the_private_key() -> None:
    cred = keys.Credential("ann", keys.generate_private_key())
    assert "PRIVATE" not in repr(cred) and cred.public_key_b64 in repr(cred)


@pytest.mark.parametrize(
    "text", ["", "!!!", "AAAA", "é", keys.encode_public_key(keys.generate_private_key().public_key()) + "AA=="],
    ids=["empty", "not-base64", "too-short", "not-ascii", "key-with-trailing-bytes"],  # stable across workers
)
def test_decode_public_key_rejects_non_keys(text: str) -> None:
    with pytest.raises(ValueError):
        keys.decode_public_key(text)


def test_verify_bytes_never_raises_on_garbage() -> None:
    k = keys.generate_private_key()
    sig = keys.sign_bytes(k, b"m")
    assert keys.verify_bytes(k.public_key(), b"m", sig)
    for bad in ("", "é", "A" * 88, sig[:-4] + "AAAA"):
        assert not keys.verify_bytes(k.public_key(), b"m", bad)
    assert not keys.verify_bytes(k.public_key(), b"n", sig)
