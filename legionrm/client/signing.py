"""Signing a call the way the gateway checks it: RFC 9421 with an RFC 9530 body digest.

One signature labelled ``legionrm``, by the user's Ed25519 key, over
``@method``, ``@path``, ``@query`` and ``Content-Digest`` (plus the
``Legionrm-As`` header when an administrator acts as someone), with
``created``, a fresh random ``nonce`` and ``keyid`` = the user.  The
``http-message-signatures`` package builds the signature base, so any
client that speaks the standard can call legionrm (see
:mod:`legionrm.gateway.signatures` for what the gateway refuses).
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from http_message_signatures import (
    HTTPMessageSigner,
    HTTPSignatureKeyResolver,
    algorithms,
)

from legionrm.client.errors import CredentialsError
from legionrm.models.api import AS_HEADER, COVERED, SIGNATURE_LABEL


def load_key(pem: str, where: str = "credentials") -> Ed25519PrivateKey:
    """The Ed25519 private key in PEM text; :class:`CredentialsError` if it is not one."""
    try:
        key = serialization.load_pem_private_key(pem.strip().encode("ascii") + b"\n", password=None)
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        raise CredentialsError(f"{where}: 'private_key' is not a readable private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CredentialsError(f"{where}: 'private_key' is not an Ed25519 key")
    return key


class _OneKey(HTTPSignatureKeyResolver):
    def __init__(self, key: Ed25519PrivateKey) -> None:
        self.key = key

    def resolve_private_key(self, key_id: str) -> Ed25519PrivateKey:
        return self.key


class RequestSigner:
    """Signs requests (anything with ``method``, ``url``, ``headers``: an ``httpx.Request``) as ``user``."""

    def __init__(self, user: str, key: Ed25519PrivateKey) -> None:
        self.user = user
        self._signer = HTTPMessageSigner(signature_algorithm=algorithms.ED25519, key_resolver=_OneKey(key))

    def sign(self, request: Any, body: bytes, created: datetime | None = None) -> None:
        """Add ``Content-Digest``, ``Signature-Input`` and ``Signature`` to ``request`` (in place),
        signed now (or at ``created``)."""
        covered = COVERED + (("legionrm-as",) if AS_HEADER in request.headers else ())
        self._signer.sign(request, key_id=self.user, nonce=secrets.token_hex(16), label=SIGNATURE_LABEL, created=created,
                          covered_component_ids=tuple(c for c in covered if c != "content-digest"), body=body)
