"""Signing and checking reservation tokens.

A :class:`~legionrm.models.ReservationToken` is signed with HMAC-SHA256 over a
canonical JSON form of every field but the signature, with a secret that only
the issuing resource holds.  Any change to any field (holder, resources, times,
issuer) breaks the signature, so a token cannot be forged or altered by its
holder; only the issuer can check it, which is all Legion asks (the token goes
back to the resource that made it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

from legionrm.models import ReservationToken

SECRET_BYTES = 32
TOKEN_ID_SEP = "~"  # token ids are "<resource>~<hex>": a host group routes by the prefix


def new_secret() -> bytes:
    """A fresh random secret for one resource."""
    return secrets.token_bytes(SECRET_BYTES)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""One encoder for every token (``json.dumps`` with options builds a new one per call)."""


def canonical(token: ReservationToken) -> bytes:
    """The bytes that are signed: every field except ``signature``, sorted keys."""
    body = token.model_dump(mode="json", exclude={"signature"})
    return _CANONICAL.encode(body).encode()


def signature(token: ReservationToken, secret: bytes) -> str:
    return hmac.new(secret, canonical(token), hashlib.sha256).hexdigest()


def sign(token: ReservationToken, secret: bytes) -> ReservationToken:
    """A copy of ``token`` carrying its signature."""
    return token.model_copy(update={"signature": signature(token, secret)})


def _equal(a: str, b: str) -> bool:
    """Constant-time equality of two signatures as the holder sent them: compared
    as bytes, since hmac.compare_digest takes str only when it is ASCII (a
    non-ASCII signature is simply a wrong one, never an exception)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))


def verify(token: ReservationToken, secret: bytes) -> bool:
    """True when ``token`` is exactly as the holder of ``secret`` signed it."""
    return _equal(token.signature, signature(token, secret))


def same(a: ReservationToken, b: ReservationToken) -> bool:
    """True when two tokens signed by one resource are the same grant (equal signatures)."""
    return _equal(a.signature, b.signature)


def make_token_id(resource: str, request_id: str, secret: bytes, serial: int = 0) -> str:
    """A token id unguessable without the secret, the same for the same
    ``(request_id, serial)``.  A resource passes the serial number of the
    grant, so a request id granted again after its first record was forgotten
    gets a new id (an old token or id never names the new reservation)."""
    digest = hmac.new(secret, f"id:{request_id}:{serial}".encode(), hashlib.sha256).hexdigest()[:20]
    return f"{resource}{TOKEN_ID_SEP}{digest}"


def issuer_of(token_id: str) -> str:
    """The resource name a token id was issued by ('' if it has no prefix)."""
    head, sep, _ = token_id.rpartition(TOKEN_ID_SEP)
    return head if sep else ""
