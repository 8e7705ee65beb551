"""Signing a call the way the gateway checks it: RFC 9421 with an RFC 9530 body digest.

One signature labelled ``legionrm``, by the user's Ed25519 key, over
``@method``, ``@path``, ``@query``, the ``Legionrm-As`` header when an
administrator acts as someone, and ``Content-Digest`` (the SHA-256 of the
body), with ``created``, ``keyid`` (the user), ``alg`` and a fresh random
``nonce`` as its parameters.  These components and parameters are fixed, so
the signature base (RFC 9421 section 2.5) is built here directly, with
SHA-256 and Ed25519 alone: a CLI call pays for neither a structured-field
parser nor a signature framework.  It is the same base, byte for byte, that
the ``http-message-signatures`` package builds (a test signs both ways and
compares), and the gateway checks every call with that package
(:mod:`legionrm.gateway.signatures`), so any client that speaks the standard
can call legionrm.
"""

from __future__ import annotations

import binascii  # base64's own base (b64encode and b64decode only forward to it)
import os
import time

from legionrm.client.errors import CredentialsError
from legionrm.errors import ConfigError
from legionrm.protocol import AS_HEADER, SIGNATURE_LABEL

try:  # CPython's own SHA-256 (3.12 on: _sha2): hashlib would also load OpenSSL's libcrypto, for one digest
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ALG = "ed25519"
"""RFC 9421's name for the algorithm (section 3.3.6)."""
PKCS8_ED25519 = bytes.fromhex("302e020100300506032b657004220420")
"""The DER a PKCS#8 Ed25519 private key starts with (RFC 8410 section 7); its 32-byte seed follows."""


def load_key(pem: str, where: str = "credentials") -> Ed25519PrivateKey:
    """The Ed25519 private key in PEM text (PKCS#8, as ``legionrm user add`` writes it);
    :class:`CredentialsError` if it is not one."""
    body = "".join(line.strip() for line in pem.strip().splitlines()[1:-1])
    if pem.strip().startswith("-----BEGIN PRIVATE KEY-----") and pem.strip().endswith("-----END PRIVATE KEY-----"):
        try:
            der = binascii.a2b_base64(body.encode("ascii"), strict_mode=True)  # = b64decode(validate=True)
        except (binascii.Error, ValueError):
            der = b""
        if len(der) == len(PKCS8_ED25519) + 32 and der.startswith(PKCS8_ED25519):
            return from_seed(der[len(PKCS8_ED25519):])
    raise CredentialsError(f"{where}: 'private_key' is not an Ed25519 private key in PKCS#8 PEM "
                           "(-----BEGIN PRIVATE KEY-----)")


def from_seed(seed: bytes) -> Ed25519PrivateKey:
    """The Ed25519 key of a 32-byte seed: the very object ``Ed25519PrivateKey.from_private_bytes``
    returns (that classmethod only forwards to cryptography's compiled binding), made by the binding
    directly when it is there: the public module's import (typing, cryptography's enums and
    serialization classes) costs a CLI call about 10 ms more than the binding's shared library
    alone (``benchmarks/README.md``).  Another cryptography, whose binding differs, goes through
    the public module."""
    try:
        from cryptography.hazmat.bindings._rust import openssl

        return openssl.ed25519.from_private_bytes(seed)  # type: ignore[no-any-return]
    except (ImportError, AttributeError):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return Ed25519PrivateKey.from_private_bytes(seed)


def key_pem(key: Ed25519PrivateKey) -> str:
    """``key`` as the PKCS#8 PEM text :func:`load_key` reads (what a credentials file holds)."""
    der = _b64(PKCS8_ED25519 + key.private_bytes_raw())
    lines = [der[i:i + 64] for i in range(0, len(der), 64)]
    return "\n".join(["-----BEGIN PRIVATE KEY-----", *lines, "-----END PRIVATE KEY-----", ""])


def _b64(data: bytes) -> str:
    """``base64.b64encode(data)`` as text."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def content_digest(body: bytes) -> str:
    """The ``Content-Digest`` field of ``body`` (RFC 9530): its SHA-256, as a structured-field byte sequence."""
    return "sha-256=:" + _b64(sha256(body).digest()) + ":"


def sf_string(text: str, what: str) -> str:
    """``text`` as a structured-field string (RFC 8941 section 3.3.3): printable ASCII only."""
    if not (text.isascii() and text.isprintable()):  # printable ASCII: " " to "~"
        raise ConfigError(f"{what} {text!r} must be printable ASCII to be signed", file=what)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class RequestSigner:
    """Signs calls as ``user`` with ``key`` (see the module doc).  ``sodium``: with libsodium's
    Ed25519 (PyNaCl) when it is installed, the same signature in about 40% of OpenSSL's CPU here,
    for a long-lived client (the typed :class:`~legionrm.client.Client`); its import (about 15 ms)
    is more than a one-call CLI saves, so the CLI signs with OpenSSL."""

    def __init__(self, user: str, key: Ed25519PrivateKey, *, sodium: bool = False) -> None:
        self.user, self._key = user, key
        self._keyid = sf_string(user, "user")
        self._sign = key.sign
        if sodium:
            try:
                from nacl.bindings import crypto_sign
            except ImportError:  # pragma: no cover -- a dependency of the package; OpenSSL signs the same
                pass
            else:
                secret = key.private_bytes_raw() + key.public_key().public_bytes_raw()
                self._sign = lambda data: crypto_sign(data, secret)[:64]  # a "signed message": signature first

    def headers(self, method: str, target: str, body: bytes, as_user: str | None = None, *,
                created: int | None = None, nonce: str | None = None) -> dict[str, str]:
        """The ``Content-Digest``, ``Signature-Input`` and ``Signature`` fields of the call
        ``method target`` (``target``: the path and query as sent) with ``body``; ``as_user``: the
        ``Legionrm-As`` field it carries, covered too.  ``created`` and ``nonce`` default to now
        and 32 random hex digits (``os.urandom``, what ``secrets.token_hex`` reads, without its imports)."""
        path, _, query = target.partition("?")
        digest = content_digest(body)
        covered = [("@method", method.upper()), ("@path", path or "/"), ("@query", "?" + query)]
        if as_user is not None:
            value = as_user.strip()
            sf_string(value, "--as")  # a field value the base can carry
            covered.append((AS_HEADER.lower(), value))
        covered.append(("content-digest", digest))
        ids = " ".join(f'"{name}"' for name, _ in covered)
        params = (f"({ids});created={int(time.time()) if created is None else created};keyid={self._keyid};alg=\"{ALG}\""
                  f";nonce={sf_string(os.urandom(16).hex() if nonce is None else nonce, 'nonce')}")
        base = "\n".join([f'"{name}": {value}' for name, value in covered] + [f'"@signature-params": {params}'])
        signature = _b64(self._sign(base.encode("ascii")))
        return {"Content-Digest": digest, "Signature-Input": f"{SIGNATURE_LABEL}={params}",
                "Signature": f"{SIGNATURE_LABEL}=:{signature}:"}

    def sign(self, request: Any, body: bytes, created: datetime | None = None) -> None:
        """Add the three fields to ``request`` in place (anything with ``method``, ``url`` and
        ``headers``, e.g. an ``httpx.Request``), signed now (or at ``created``)."""
        from urllib.parse import urlsplit  # here: the CLI's calls never come this way

        url = urlsplit(str(request.url))
        target = url.path + (f"?{url.query}" if url.query else "")
        request.headers.update(self.headers(request.method, target, body, request.headers.get(AS_HEADER),
                                            created=None if created is None else int(created.timestamp())))
