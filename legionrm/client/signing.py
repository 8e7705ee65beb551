"""Signing a call the way the gateway checks it: RFC 9421 with an RFC 9530 body digest.

One signature labelled ``legionrm``, by the user's Ed25519 key, over
``@method``, ``@path``, ``@query``, the ``Legionrm-As`` header when an
administrator acts as someone, and ``Content-Digest`` (the SHA-256 of the
body), with ``created``, ``keyid`` (the user), ``alg`` and a fresh random
``nonce`` as its parameters.  These components and parameters are fixed, so
the signature base (RFC 9421 section 2.5) is built here directly, with
hashlib and Ed25519 alone: a CLI call pays for neither a structured-field
parser nor a signature framework.  It is the same base, byte for byte, that
the ``http-message-signatures`` package builds (a test signs both ways and
compares), and the gateway checks every call with that package
(:mod:`legionrm.gateway.signatures`), so any client that speaks the standard
can call legionrm.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import time
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from legionrm.client.errors import CredentialsError
from legionrm.errors import ConfigError
from legionrm.protocol import AS_HEADER, SIGNATURE_LABEL

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
            der = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            der = b""
        if len(der) == len(PKCS8_ED25519) + 32 and der.startswith(PKCS8_ED25519):
            return Ed25519PrivateKey.from_private_bytes(der[len(PKCS8_ED25519):])
    raise CredentialsError(f"{where}: 'private_key' is not an Ed25519 private key in PKCS#8 PEM "
                           "(-----BEGIN PRIVATE KEY-----)")


def key_pem(key: Ed25519PrivateKey) -> str:
    """``key`` as the PKCS#8 PEM text :func:`load_key` reads (what a credentials file holds)."""
    der = base64.b64encode(PKCS8_ED25519 + key.private_bytes_raw()).decode("ascii")
    lines = [der[i:i + 64] for i in range(0, len(der), 64)]
    return "\n".join(["-----BEGIN PRIVATE KEY-----", *lines, "-----END PRIVATE KEY-----", ""])


def content_digest(body: bytes) -> str:
    """The ``Content-Digest`` field of ``body`` (RFC 9530): its SHA-256, as a structured-field byte sequence."""
    return "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode("ascii") + ":"


def sf_string(text: str, what: str) -> str:
    """``text`` as a structured-field string (RFC 8941 section 3.3.3): printable ASCII only."""
    if not (text.isascii() and text.isprintable()):  # printable ASCII: " " to "~"
        raise ConfigError(f"{what} {text!r} must be printable ASCII to be signed", file=what)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class RequestSigner:
    """Signs calls as ``user`` with ``key`` (see the module doc)."""

    def __init__(self, user: str, key: Ed25519PrivateKey) -> None:
        self.user, self._key = user, key
        self._keyid = sf_string(user, "user")

    def headers(self, method: str, target: str, body: bytes, as_user: str | None = None, *,
                created: int | None = None, nonce: str | None = None) -> dict[str, str]:
        """The ``Content-Digest``, ``Signature-Input`` and ``Signature`` fields of the call
        ``method target`` (``target``: the path and query as sent) with ``body``; ``as_user``: the
        ``Legionrm-As`` field it carries, covered too.  ``created`` and ``nonce`` default to now
        and 32 random hex digits."""
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
                  f";nonce={sf_string(secrets.token_hex(16) if nonce is None else nonce, 'nonce')}")
        base = "\n".join([f'"{name}": {value}' for name, value in covered] + [f'"@signature-params": {params}'])
        signature = base64.b64encode(self._key.sign(base.encode("ascii"))).decode("ascii")
        return {"Content-Digest": digest, "Signature-Input": f"{SIGNATURE_LABEL}={params}",
                "Signature": f"{SIGNATURE_LABEL}=:{signature}:"}

    def sign(self, request: Any, body: bytes, created: datetime | None = None) -> None:
        """Add the three fields to ``request`` in place (anything with ``method``, ``url`` and
        ``headers``, e.g. an ``httpx.Request``), signed now (or at ``created``)."""
        url = urlsplit(str(request.url))
        target = url.path + (f"?{url.query}" if url.query else "")
        request.headers.update(self.headers(request.method, target, body, request.headers.get(AS_HEADER),
                                            created=None if created is None else int(created.timestamp())))
