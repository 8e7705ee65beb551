"""The client's side: where credentials are found, what a credentials file must be, what importing costs."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.auth.keys import generate_private_key
from legionrm.client import credentials
from legionrm.client.credentials import Credentials, find, read
from legionrm.client.errors import CredentialsError


def write(path: Path, user: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Credentials.of("http://127.0.0.1:1", user, generate_private_key()).write(path)
    os.chmod(path, mode)
    return path


@pytest.fixture
def places(tmp_path, monkeypatch) -> dict[str, Path]:
    home = tmp_path / "userhome"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LEGIONRM_HOME", str(tmp_path / "service"))
    monkeypatch.setenv("LEGIONRM_USER", "root")
    monkeypatch.delenv(credentials.ENV, raising=False)
    return {"flag": tmp_path / "flag.credentials", "env": tmp_path / "env.credentials",
            "user": home / ".legionrm" / "credentials",
            "service": tmp_path / "service" / "auth" / "users" / "root.credentials"}


# which files exist -> whose credentials are found (flag: --credentials; env: LEGIONRM_CREDENTIALS)
ORDER = [
    ("flag-first", ("flag", "env", "user", "service"), "flag"),
    ("then-env", ("env", "user", "service"), "env"),
    ("then-user-file", ("user", "service"), "user"),
    ("then-the-homes-admin", ("service",), "service"),
]


@pytest.mark.parametrize("present, want", [c[1:] for c in ORDER], ids=[c[0] for c in ORDER])
def test_lookup_order(places, monkeypatch, present, want) -> None:
    for name in present:
        write(places[name], name)
    if "env" in present:
        monkeypatch.setenv(credentials.ENV, str(places["env"]))
    got = find(places["flag"] if "flag" in present else None)
    assert got.user == want


def test_nothing_found_says_where_it_looked(places) -> None:
    with pytest.raises(CredentialsError, match="no credentials: looked at .*credentials"):
        find()


def test_a_named_file_that_is_missing_is_not_skipped(places) -> None:
    write(places["user"], "user")
    with pytest.raises(CredentialsError, match="no such credentials file"):
        find(places["flag"])


def test_a_file_others_can_read_is_refused(tmp_path) -> None:
    path = write(tmp_path / "c", "ann", 0o644)
    with pytest.raises(CredentialsError, match="chmod 600"):
        read(path)


def test_a_file_is_written_0600_and_reads_back(tmp_path) -> None:
    key = generate_private_key()
    c = Credentials.of("https://10.0.0.1:8470", "ann", key, "sha256:AB")
    path = c.write(tmp_path / "ann.credentials")
    assert path.stat().st_mode & 0o777 == 0o600
    back = read(path)
    assert (back.url, back.user, back.fingerprint, back.private_key_pem) == (c.url, c.user, c.fingerprint,
                                                                            c.private_key_pem)


@pytest.mark.parametrize("text, problem", [
    ("version = 2\n", "version must be 1"),
    ('version = 1\nurl = "http://x"\nuser = "ann"\n', "'private_key' is missing"),
    ('version = 1\nurl = "https://x"\nuser = "a"\nprivate_key = "k"\n', "needs the certificate's 'fingerprint'"),
    ("not toml [", "not a credentials file"),
], ids=["version", "no-key", "https-unpinned", "not-toml"])
def test_bad_files_say_what_is_wrong(tmp_path, text, problem) -> None:
    path = tmp_path / "c"
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(CredentialsError, match=problem):
        read(path)


def test_importing_the_client_imports_neither_ray_nor_numpy() -> None:
    code = ("import sys, legionrm.client, legionrm.client.client; from legionrm import Client; "
            "print(sorted(m for m in ('ray', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]", out.stderr


# --- the signature a client makes is the standard's, byte for byte -------------------------------

CALLS = [
    ("get-list", "GET", "/api/v1/requests", b"", None),
    ("get-query", "GET", "/api/v1/requests?user=ann&state=running", b"", None),
    ("post-body", "POST", "/api/v1/requests", b'{"toml":"[[object]]\\nclass_name = \\"Worker\\"\\n"}', None),
    ("quoted-id", "POST", "/api/v1/requests/a%2Fb/cancel", b"{}", None),
    ("as-another", "DELETE", "/api/v1/users/bob", b"", "carol"),
]


@pytest.mark.parametrize("sodium", [False, True], ids=["openssl", "libsodium"])
@pytest.mark.parametrize("method, target, body, as_user", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_the_signature_is_the_one_http_message_signatures_makes(method, target, body, as_user, sodium) -> None:
    import datetime

    import httpx
    from http_message_signatures import HTTPMessageSigner, HTTPSignatureKeyResolver, algorithms

    from legionrm.client.signing import RequestSigner
    from legionrm.protocol import AS_HEADER, COVERED, SIGNATURE_LABEL

    key, created, nonce = generate_private_key(), 1_700_000_000, "0123456789abcdef0123456789abcdef"

    class One(HTTPSignatureKeyResolver):
        def resolve_private_key(self, key_id: str):
            return key

    req = httpx.Request(method, "http://127.0.0.1:8470" + target, content=body or None,
                        headers={AS_HEADER: as_user} if as_user else None)
    covered = [c for c in COVERED if c != "content-digest"] + (["legionrm-as"] if as_user else [])
    HTTPMessageSigner(signature_algorithm=algorithms.ED25519, key_resolver=One()).sign(
        req, key_id="ann", created=datetime.datetime.fromtimestamp(created), nonce=nonce, label=SIGNATURE_LABEL,
        covered_component_ids=covered, body=body)
    ours = RequestSigner("ann", key, sodium=sodium).headers(method, target, body, as_user, created=created, nonce=nonce)
    assert ours == {k: req.headers[k] for k in ("Content-Digest", "Signature-Input", "Signature")}


def test_a_key_reads_back_as_it_was_written_and_a_wrong_one_is_one_line() -> None:
    from cryptography.hazmat.primitives import serialization

    from legionrm.client.signing import key_pem, load_key

    key = generate_private_key()
    pem = key_pem(key)
    assert pem == key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    assert load_key(pem).private_bytes_raw() == key.private_bytes_raw()
    with pytest.raises(CredentialsError, match="'private_key' is not an Ed25519 private key"):
        load_key(pem.replace("PRIVATE KEY", "PUBLIC KEY"))


def test_the_wire_knows_the_states_a_request_ends_in() -> None:
    from legionrm.client.wire import ENDED
    from legionrm.models import FINAL_STATES

    assert ENDED == FINAL_STATES


def test_a_connection_closed_between_calls_is_opened_anew(gateway) -> None:
    """Keep-alive: calls share one connection; after close() (or the gateway closing it) the next call reconnects."""
    with gateway.client("ann") as c:
        assert c.list() == [] and c.list() == []
        first = c.wire._connection()
        c.close()
        assert c.whoami().user == "ann" and c.wire._connection() is not first


# --- a credentials file as `user add` writes it is read without tomllib, as tomllib reads it -------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(url=_TEXT, user=_TEXT, fp=_TEXT, seed=st.binary(min_size=32, max_size=32))
def test_a_written_file_reads_the_same_without_tomllib(url: str, user: str, fp: str, seed: bytes) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = Credentials.of(url, user, Ed25519PrivateKey.from_private_bytes(seed), fp).text()
    fast = credentials.plain(text)
    try:
        want = tomllib.loads(text)
    except tomllib.TOMLDecodeError:  # e.g. a control character in the user's name, in the comment line
        assert fast is None
        return
    assert fast in (None, want)
    if all(c.isprintable() and c not in '"\\' for c in url + user + fp):
        assert fast == want  # the form text() writes for ordinary names is read without tomllib


@settings(max_examples=300, deadline=None)
@given(at=st.integers(0, 400), cut=st.integers(0, 5), put=st.text(st.sampled_from(' "\\=#\n\r\t[]x1\'.'), max_size=4))
def test_any_other_text_is_read_by_tomllib_or_as_tomllib_reads_it(at: int, cut: int, put: str) -> None:
    text = Credentials.of("http://127.0.0.1:8470", "ann", generate_private_key()).text()
    text = text[:at] + put + text[at + cut:]
    fast = credentials.plain(text)
    try:
        want = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        assert fast is None  # never a reading of a file that is not TOML
        return
    assert fast in (None, want)


def test_the_binding_makes_the_key_the_public_module_makes(monkeypatch) -> None:
    """:func:`~legionrm.client.signing.from_seed` signs as ``Ed25519PrivateKey.from_private_bytes``'s
    key does, through the compiled binding and, when the binding is not there, the public module."""
    import builtins

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from legionrm.client.signing import from_seed

    seed, message = bytes(range(32)), b"@method: GET"
    want = Ed25519PrivateKey.from_private_bytes(seed).sign(message)
    assert from_seed(seed).sign(message) == want
    real = builtins.__import__

    def no_binding(name: str, *a: object, **kw: object) -> object:
        if name == "cryptography.hazmat.bindings._rust":
            raise ImportError(name)
        return real(name, *a, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(builtins, "__import__", no_binding)
    assert from_seed(seed).sign(message) == want


def test_threads_share_a_wire_each_on_its_own_kept_connection(gateway) -> None:
    """Calls from many threads through one Wire: each answer is its caller's, and each thread keeps
    one connection across its calls (by its thread's id), none shared by two threads at once.  (80
    calls: under the gateway's burst of 100, whatever the machine's speed.)"""
    from concurrent.futures import ThreadPoolExecutor

    from legionrm.client.wire import Wire

    with Wire.from_credentials(gateway.credentials("ann")) as w:
        with ThreadPoolExecutor(6) as pool:
            got = list(pool.map(lambda i: (w.whoami()["user"], w.list(state="running"), i), range(40)))
        assert got == [("ann", [], i) for i in range(40)]
        assert 1 <= len(w._conns) <= 6 and len({id(c) for c in w._conns.values()}) == len(w._conns)
    assert w._conns == {}  # close() closed them all
