"""Signing and checking reservation tokens.

A :class:`~legionrm.models.ReservationToken` is signed with HMAC-SHA256 over a
canonical JSON form of every field but the signature, with a secret that only
the issuing resource holds.  Any change to any field (holder, resources, times,
issuer) breaks the signature, so a token cannot be forged or altered by its
holder; only the issuer can check it, which is all Legion asks (the token goes
back to the resource that made it).

A resource signs and checks through its :class:`Signer`: the HMAC keyed once
(each signature copies the keyed state instead of hashing the key again), and
the canonical bytes written directly for the usual field types, byte for byte
what the model's JSON dump gives (anything else takes the dump itself).

A token presented to use it (to start an instance, to take a vault's space)
is checked by its resource through :class:`TokenChecks`: issuer, signature,
record, holder, class, status, start, in that order.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import operator
import secrets
from collections.abc import Mapping
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

from pydantic import BaseModel

from legionrm import codes
from legionrm.hostobj.records import Reservation
from legionrm.models import Holder, Refusal, ReservationToken, Resources

SECRET_BYTES = 32
TOKEN_ID_SEP = "~"  # token ids are "<resource>~<hex>": a host group routes by the prefix


try:
    from _hashlib import hmac_new as _c_hmac  # (CPython's OpenSSL binding, under hmac.new; absent: hmac.new)
except ImportError:  # pragma: no cover - a Python built without OpenSSL
    _c_hmac = None


def new_secret() -> bytes:
    """A fresh random secret for one resource."""
    return secrets.token_bytes(SECRET_BYTES)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""One encoder for every token (``json.dumps`` with options builds a new one per call)."""

_SIGNED = tuple(sorted(k for k in ReservationToken.model_fields if k != "signature"))
"""The signed fields, in the canonical (sorted) order."""
_HEADS = tuple(("{" if i == 0 else ",") + _quote(k) + ":" for i, k in enumerate(_SIGNED))

_NESTED = frozenset({Holder, Resources})
"""The nested models of a token (frozen: a model's text never changes)."""
_parts: dict[int, tuple[BaseModel, str]] = {}
"""The canonical JSON of nested models (a holder, an amount) by identity: a
batch's tokens share them.  The model is kept with its text, so an id is never
taken for another object's."""


_PARTS_KEPT = 64
"""A batch's tokens share one holder and one amount: a few batches' worth is enough, and a larger
table would keep a request's models long after it finished."""


def _part(model: BaseModel) -> str:
    got = _parts.get(id(model))
    if got is not None and got[0] is model:
        return got[1]
    text = _CANONICAL.encode(model.model_dump(mode="json"))
    if len(_parts) >= _PARTS_KEPT:  # (a bound: a long-lived resource meets a holder and an amount a request)
        _parts.clear()
    _parts[id(model)] = (model, text)
    return text


def _value(v: Any) -> str | None:
    """``v`` as the JSON dump writes it, or None when only the dump may say."""
    t = type(v)
    if t is str:
        return _quote(v)
    if t is float:
        return float.__repr__(v) if math.isfinite(v) else None
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return int.__repr__(v)
    if t in _NESTED:
        return _part(v)
    return None


_FAST_ORDER = ("end", "expires_at", "holder", "issuer", "resources", "reusable", "start", "token_id", "vault")
"""The signed fields :func:`canonical_of` writes in one expression when they have their usual types."""
_fields_of = operator.itemgetter(*_SIGNED)
_finite = math.isfinite
_float_text = float.__repr__


def canonical_of(fields: Mapping[str, Any]) -> bytes:
    """The bytes that are signed for a token of ``fields`` (every field but
    ``signature``, all given): sorted keys, compact JSON."""
    if _SIGNED == _FAST_ORDER:  # (a token of the usual types, every time a host grants or checks one)
        end, expires, holder, issuer, amount, reusable, start, tid, vault = _fields_of(fields)
        if (type(start) is float and type(expires) is float and _finite(start) and _finite(expires)
                and (end is None or (type(end) is float and _finite(end))) and type(issuer) is str
                and type(tid) is str and type(reusable) is bool and (vault is None or type(vault) is str)
                and type(holder) is Holder and type(amount) is Resources):
            return (f'{{"end":{"null" if end is None else _float_text(end)},"expires_at":{_float_text(expires)},'
                    f'"holder":{_part(holder)},"issuer":{_quote(issuer)},"resources":{_part(amount)},'
                    f'"reusable":{"true" if reusable else "false"},"start":{_float_text(start)},'
                    f'"token_id":{_quote(tid)},"vault":{"null" if vault is None else _quote(vault)}}}').encode()
    out = []
    for head, key in zip(_HEADS, _SIGNED):
        text = _value(fields[key])
        if text is None:  # an unusual value (a non-finite time): the model's own dump
            return _CANONICAL.encode(ReservationToken.model_construct(**fields).model_dump(
                mode="json", exclude={"signature"})).encode()
        out.append(head)
        out.append(text)
    out.append("}")
    return "".join(out).encode()


def canonical(token: ReservationToken) -> bytes:
    """The bytes that are signed: every field except ``signature``, sorted keys."""
    return canonical_of(token.__dict__)


def _equal(a: str, b: str) -> bool:
    """Constant-time equality of two signatures as the holder sent them: compared
    as bytes, since hmac.compare_digest takes str only when it is ASCII (a
    non-ASCII signature is simply a wrong one, never an exception)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))


class Signer:
    """HMAC-SHA256 under one resource's ``secret``, keyed once."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret
        # OpenSSL's HMAC object itself when there is one: copied, fed and read in C at every token
        self._mac = _c_hmac(secret, digestmod="sha256") if _c_hmac is not None else hmac.new(secret, digestmod=hashlib.sha256)

    def _hex(self, data: bytes) -> str:
        mac = self._mac.copy()
        mac.update(data)
        return mac.hexdigest()

    def signature(self, token: ReservationToken) -> str:
        return self._hex(canonical(token))

    def signed(self, **fields: Any) -> ReservationToken:
        """A new token of ``fields`` (validated as the model does), signed."""
        token = ReservationToken(**fields)
        return token.replaced(signature=self.signature(token))

    def granted(self, token_id: str, issuer: str, holder: Holder, resources: Resources, vault: str | None,
                start: float, end: float | None, expires_at: float, reusable: bool) -> ReservationToken:
        """A new token of these fields, signed, built without validation: for a
        resource's own grant, whose every value is already of the field's type
        (the request's validated holder and amount, names and floats it made).
        The same token, byte for byte, as :meth:`signed` makes of them."""
        fields = {"token_id": token_id, "issuer": issuer, "holder": holder, "resources": resources, "vault": vault,
                  "start": start, "end": end, "expires_at": expires_at, "reusable": reusable, "signature": ""}
        token = ReservationToken.adopt(fields)
        mac = self._mac.copy()  # (:meth:`signature` spelt out: once per grant)
        mac.update(canonical(token))
        fields["signature"] = mac.hexdigest()  # (its own fields, set in place: nothing holds the new token yet)
        return token

    def verify(self, token: ReservationToken) -> bool:
        """True when ``token`` is exactly as this secret signed it."""
        return _equal(token.signature, self.signature(token))

    def token_id(self, resource: str, request_id: str, serial: int = 0) -> str:
        """See :func:`make_token_id`."""
        mac = self._mac.copy()  # (:meth:`_hex` spelt out: once per grant)
        mac.update(f"id:{request_id}:{serial}".encode())
        return f"{resource}{TOKEN_ID_SEP}{mac.hexdigest()[:20]}"


def signature(token: ReservationToken, secret: bytes) -> str:
    return Signer(secret).signature(token)


def sign(token: ReservationToken, secret: bytes) -> ReservationToken:
    """A copy of ``token`` carrying its signature."""
    return token.replaced(signature=signature(token, secret))


def verify(token: ReservationToken, secret: bytes) -> bool:
    """True when ``token`` is exactly as the holder of ``secret`` signed it."""
    return Signer(secret).verify(token)


def same(a: ReservationToken, b: ReservationToken) -> bool:
    """True when two tokens signed by one resource are the same grant (equal signatures)."""
    return _equal(a.signature, b.signature)


def make_token_id(resource: str, request_id: str, secret: bytes, serial: int = 0) -> str:
    """A token id unguessable without the secret, the same for the same
    ``(request_id, serial)``.  A resource passes the serial number of the
    grant, so a request id granted again after its first record was forgotten
    gets a new id (an old token or id never names the new reservation)."""
    return Signer(secret).token_id(resource, request_id, serial)


def issuer_of(token_id: str) -> str:
    """The resource name a token id was issued by ('' if it has no prefix)."""
    head, sep, _ = token_id.rpartition(TOKEN_ID_SEP)
    return head if sep else ""


class TokenChecks:
    """The checks a token presented to its resource goes through, as its methods
    (the resource's base class, kept in this module; ``self`` is always a
    :class:`~legionrm.hostobj.resource.ResourceObject`, whose records, signer and
    refusals these use)."""

    def _validate(self, token: ReservationToken, presenter: Holder, class_name: str | None) -> Reservation | Refusal:
        """Every token check, in order; the reservation when the token may be used now.

        Authentic means the very token this resource granted (equal to its record, signature
        included: no HMAC to compute), or else a token its signature says was made here."""
        if token.issuer != self.name:
            return self._refuse(codes.TOKEN_WRONG_ISSUER, f"token issued by {token.issuer!r}, not by {self.name!r}")
        res = self._by_token.get(token.token_id)
        # (the signatures compared first, in constant time: a presented token never learns how much of it matched)
        if res is None or (res.token is not token and not (same(token, res.token) and res.token == token)):
            # Not the token on record (every field and the signature equal to what this resource
            # granted): its signature must say it was made here, else it is forged or altered.
            if not self._signer.verify(token):
                return self._refuse(codes.TOKEN_FORGED, "token signature does not match: forged or altered")
            if res is not None and not same(token, res.token):
                res = None  # well signed here, but not this reservation's token: treated as a forgotten one
        if res is None:
            now = self._now
            if token.expires_at <= now or (token.end is not None and token.end <= now):
                # the record was forgotten, but the signed token itself says it is over
                return self._refuse(codes.TOKEN_EXPIRED, f"token {token.token_id!r} expired at {token.expires_at:.0f}")
            return self._refuse(codes.TOKEN_UNKNOWN, f"no reservation {token.token_id!r} here")
        if presenter.user != token.holder.user:
            return self._refuse(
                codes.TOKEN_WRONG_HOLDER, f"token held by {token.holder.user!r}, presented by {presenter.user!r}"
            )
        if class_name is not None and token.holder.class_name is not None and class_name != token.holder.class_name:
            return self._refuse(
                codes.TOKEN_WRONG_CLASS, f"token reserved for class {token.holder.class_name!r}, not {class_name!r}"
            )
        refusal = self._status_refusal(res)
        if refusal is not None:
            return refusal
        if token.reusable and res.holders:
            return self._refuse(codes.TOKEN_IN_USE, f"reusable token {token.token_id!r} is in use by {sorted(res.holders)}")
        now = self._now
        if now < token.start:
            return self._refuse(codes.TOKEN_NOT_YET, f"reservation starts at {token.start:.0f}, it is {now:.0f}")
        return res

    def _status_refusal(self, res: Reservation) -> Refusal | None:
        tid = res.token.token_id
        if res.status == "cancelled":
            return self._refuse(codes.TOKEN_CANCELLED, f"reservation {tid!r} was cancelled")
        if res.status == "expired":
            return self._refuse(codes.TOKEN_EXPIRED, f"reservation {tid!r} expired unused at {res.token.expires_at:.0f}")
        if res.status == "ended":
            return self._refuse(codes.TOKEN_EXPIRED, f"reservation {tid!r} ended at {res.token.end:.0f}")
        if res.status == "used":
            return self._refuse(codes.TOKEN_USED, f"one-shot token {tid!r} was already used")
        return None
