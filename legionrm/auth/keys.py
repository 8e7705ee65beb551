"""Ed25519 keys: making them, writing them safely, reading them carefully.

A principal's private key lives in one file readable only by its owner (mode
0600).  :func:`save_private_key` creates that file atomically with that mode
(a temporary file in the same directory, created 0600 with ``O_EXCL``, synced,
then linked or renamed into place), so no other user can ever read a partial
or permissive copy.  :func:`load_private_key` refuses a file whose mode lets
group or others read or write it, with a message naming the file, its mode
and the fix.

Public keys travel as base64 of the 32 raw bytes (:func:`encode_public_key`,
:func:`decode_public_key`); signatures as base64 of the 64 raw bytes.  A host
can verify any signature with a public key alone: it never holds a secret of
anyone else.

Signing and checking use libsodium's Ed25519 (PyNaCl) when it is installed,
in about half the CPU of OpenSSL's on the machines measured (every actor call
is signed once and checked once).  An Ed25519 signature is deterministic (RFC
8032), so libsodium signs the very bytes OpenSSL would (a test holds them
equal).  libsodium accepts no signature OpenSSL refuses (it refuses more:
small-order keys and points, non-canonical encodings), so :func:`verify_bytes`
takes libsodium's yes as it is and asks OpenSSL whenever libsodium says no:
its verdict is OpenSSL's, always.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from legionrm.auth.errors import KeyFileError, KeyPermissionError

try:  # libsodium's Ed25519 (see the module doc)
    from nacl.bindings import crypto_sign, crypto_sign_open
    from nacl.exceptions import CryptoError
except ImportError:  # pragma: no cover -- a dependency; OpenSSL's serves the same, slower
    crypto_sign = crypto_sign_open = None  # type: ignore[assignment]

PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64
PRIVATE_MODE = 0o600
MAX_KEY_FILE_BYTES = 4096  # a PEM Ed25519 key is ~120 bytes; anything much larger is not one


def generate_private_key() -> Ed25519PrivateKey:
    """A fresh Ed25519 private key from the OS's randomness."""
    return Ed25519PrivateKey.generate()


def encode_public_key(key: Ed25519PublicKey) -> str:
    """Base64 of the 32 raw bytes of ``key``."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def decode_public_key(text: str) -> Ed25519PublicKey:
    """The public key written by :func:`encode_public_key`; ``ValueError`` if it is not one."""
    if not isinstance(text, str):
        raise ValueError("public key is not base64 text")
    return _decoded_key(text)


@functools.lru_cache(maxsize=4096)  # every verifier decodes the same few keys at every call: each once
def _decoded_key(text: str) -> Ed25519PublicKey:
    raw = b64decode_exact(text, PUBLIC_KEY_BYTES, what="public key")
    return Ed25519PublicKey.from_public_bytes(raw)


def b64decode_exact(text: str, length: int, *, what: str) -> bytes:
    """Strict base64 decode of ``text`` to exactly ``length`` bytes, else ``ValueError``."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError(f"{what} is not base64 text")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{what} is not valid base64: {exc}") from None
    if len(raw) != length:
        raise ValueError(f"{what} is {len(raw)} bytes, expected {length}")
    return raw


def sign_bytes(key: Ed25519PrivateKey, message: bytes) -> str:
    """Base64 Ed25519 signature of ``message`` (libsodium's when installed: the same bytes)."""
    return base64.b64encode(sign_raw(key, message)).decode("ascii")


def sign_raw(key: Ed25519PrivateKey, message: bytes) -> bytes:
    """The 64 bytes of ``key``'s Ed25519 signature of ``message``: libsodium's when installed (the
    same bytes as OpenSSL's, see the module doc), else OpenSSL's."""
    if crypto_sign is None:
        return key.sign(message)
    return crypto_sign(message, _sodium_secret(key))[:SIGNATURE_BYTES]  # a "signed message": the signature first


_SECRETS: dict[int, tuple[Ed25519PrivateKey, bytes]] = {}
"""libsodium's form of each key this process signs with (seed and public key), by the key object's
id (the object is kept beside it, so an id is never another key's)."""


def _sodium_secret(key: Ed25519PrivateKey) -> bytes:
    kept = _SECRETS.get(id(key))
    if kept is None or kept[0] is not key:
        if len(_SECRETS) > 256:  # a process signs as a few principals; keys made and dropped: start afresh
            _SECRETS.clear()
        kept = _SECRETS[id(key)] = (key, key.private_bytes_raw() + key.public_key().public_bytes_raw())
    return kept[1]


def sodium_accepts(public_raw: bytes, signature: bytes, message: bytes) -> bool:
    """Does libsodium accept ``signature`` (64 raw bytes) as the key ``public_raw``'s over ``message``?
    A yes is OpenSSL's yes too; a no (or no libsodium) decides nothing: ask OpenSSL (module doc)."""
    if crypto_sign_open is None:
        return False
    try:
        crypto_sign_open(signature + message, public_raw)
    except (CryptoError, ValueError, TypeError):
        return False
    return True


def verify_bytes(key: Ed25519PublicKey, message: bytes, signature: str) -> bool:
    """True when ``signature`` (base64) is ``key``'s signature of ``message``: libsodium's yes, else
    OpenSSL's verdict (see the module doc).

    Never raises for a bad signature: malformed text is simply not a signature.
    """
    try:
        raw = b64decode_exact(signature, SIGNATURE_BYTES, what="signature")
        if sodium_accepts(key.public_bytes_raw(), raw, message):
            return True
        key.verify(raw, message)
    except (ValueError, InvalidSignature):
        return False
    return True


@dataclass(frozen=True)
class Credential:
    """A principal's name and private key: what signs its calls.

    Never crosses an actor boundary and never prints its key (``repr`` shows
    the name and the public key only).
    """

    name: str
    private_key: Ed25519PrivateKey = field(repr=False)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def public_key_b64(self) -> str:
        return encode_public_key(self.public_key)

    def sign(self, message: bytes) -> str:
        """Base64 signature of ``message`` by this principal."""
        return sign_bytes(self.private_key, message)

    def __repr__(self) -> str:
        return f"Credential(name={self.name!r}, public_key={self.public_key_b64!r})"

    @classmethod
    def load(cls, name: str, path: str | os.PathLike[str]) -> Credential:
        """The credential of ``name`` from its private key file (see :func:`load_private_key`)."""
        return cls(name=name, private_key=load_private_key(path))


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def save_private_key(path: str | os.PathLike[str], key: Ed25519PrivateKey, *, overwrite: bool = False) -> Path:
    """Write ``key`` (PKCS#8 PEM) to ``path`` with mode 0600, atomically.

    The directory must exist.  Without ``overwrite`` an existing file is never
    replaced (``KeyFileError``), also not by a concurrent writer: the finished
    file is hard-linked into place, which fails if the name exists.  With
    ``overwrite`` it is renamed over the old file.  Returns the path.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_MODE)
    except OSError as exc:
        raise KeyFileError(f"cannot create key file: {exc.strerror}", path=str(target)) from None
    try:
        try:
            os.fchmod(fd, PRIVATE_MODE)  # the umask may only take bits away; make the mode exact
            os.write(fd, _pem(key))
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise KeyFileError("key file already exists; refusing to replace it", path=str(target)) from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """The Ed25519 private key in ``path``.

    Refuses (``KeyPermissionError``) a file that group or others may read or
    write, before reading a byte of it; ``KeyFileError`` for a missing file, a
    symlink, something that is not a regular file, or not an Ed25519 key.
    """
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise KeyFileError("no such key file", path=where) from None
    except OSError as exc:
        raise KeyFileError(f"cannot open key file: {exc.strerror}", path=where) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError("not a regular file", path=where)
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            raise KeyPermissionError(where, mode)
        data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise KeyFileError("key file is too large to be an Ed25519 key", path=where)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"not a readable private key: {exc}", path=where) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"not an Ed25519 key ({type(key).__name__})", path=where)
    return key
