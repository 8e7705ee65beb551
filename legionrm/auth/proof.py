"""Signed, time-limited, single-use proofs of who makes a call.

A user (or an agent) signs every call it makes: :func:`sign_call` makes a
:class:`CallProof` naming the principal, the call, its audience ``to`` (the
actor the call is for, by the name its door refuses under: ``scheduler``,
``collection``, ``enactor``, ``pools``, ``dashboard``, ``hostgroup:<g>``,
``class:<c>``, a host's or vault's resource name), a digest of the call's
arguments (:func:`~legionrm.auth.canonical.payload_digest`), a random nonce,
when it was issued and when it expires, signed with Ed25519 over the one
canonical form (:func:`~legionrm.auth.canonical.canonical`, domain
``legionrm.call.v1``) of every field but the signature.

A :class:`Verifier` (in the Scheduler, the Collection, a host) checks a proof
against the call it arrived with.  The order of the checks is the contract,
and each has its own code (:mod:`legionrm.codes`):

1. ``auth.malformed``: not a proof (wrong types, bad encoding, a nonce of the
   wrong size, an expiry not after its issue, a life longer than ``max_ttl_s``);
2. ``auth.unknown_user``: the principal is not in the registry;
3. ``auth.bad_signature``: the signature does not cover these exact fields;
4. ``auth.wrong_audience``: well signed, but for another actor (each actor
   remembers only the nonces it saw, so a proof good at one actor must be
   worthless at every other);
5. ``auth.wrong_call``: well signed, but for another call or other arguments;
6. ``auth.clock_skew``: issued later than now plus ``skew_s``;
   ``auth.expired``: now is at or past its expiry plus ``skew_s``;
7. ``auth.replayed``: its nonce was seen before (``auth.overloaded`` if the
   replay cache is full: refusing is safe, forgetting a live nonce is not);
8. a proof ``acting_for`` a user: ``auth.forbidden`` unless the signer is the
   gateway agent, ``auth.unknown_user`` unless that user is registered; the
   caller is then that user (the gateway checked the user's own signature).

So a replayed proof of an unknown user says ``unknown_user``, and a stale
replay says ``expired``.  A proof that passes becomes a
:class:`VerifiedCaller` whose groups and roles are the registry's, never the
caller's claim.  Only a proof that passes every other check enters the replay
cache, and it leaves the cache once it has expired (``expires_at + skew_s``),
so the cache holds at most the proofs accepted in the last
``max_ttl_s + 2 * skew_s`` seconds.
"""

from __future__ import annotations

import heapq
import math
import secrets
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from legionrm import codes
from legionrm.auth.canonical import CALL_DOMAIN, canonical, payload_digest
from legionrm.auth.keys import (
    SIGNATURE_BYTES,
    Credential,
    b64decode_exact,
    decode_public_key,
    verify_bytes,
)
from legionrm.auth.principals import Principal
from legionrm.models import Identity, Refusal

Clock = Callable[[], float]
NONCE_BYTES = 16
NONCE_MIN_CHARS, NONCE_MAX_CHARS = 16, 128
DIGEST_CHARS = 64  # hex SHA-256
MAX_NAME_CHARS = 256  # bound on user and call names before any lookup
DELEGATE_KIND = "gateway"  # the one kind of agent whose proofs may act for a user (``acting_for``)


class CallProof(BaseModel):
    """Proof that ``user`` makes call ``call`` with arguments hashing to ``digest``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user: str
    call: str
    to: str
    digest: str
    nonce: str
    issued_at: float
    expires_at: float
    signature: str = ""
    acting_for: str | None = None
    """The user the gateway agent makes this call for (None: the signer acts for itself)."""

    def signed_bytes(self) -> bytes:
        """What the signature covers: every field but ``signature`` (and ``acting_for``
        when unset, so a plain proof signs the same fields as before), canonically."""
        skip = {"signature"} if self.acting_for is not None else {"signature", "acting_for"}
        return canonical(CALL_DOMAIN, self.model_dump(mode="json", exclude=skip))


class VerifiedCaller(BaseModel):
    """Who a verified proof proves: the registry's facts about the principal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: str
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    owns: tuple[str, ...] = ()
    call: str = ""

    @classmethod
    def of(cls, principal: Principal, call: str = "") -> VerifiedCaller:
        """The caller for ``principal`` as the registry knows it."""
        return cls(name=principal.name, kind=principal.kind, groups=principal.groups,
                   roles=principal.roles, owns=principal.owns, call=call)

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    @property
    def is_admin(self) -> bool:
        return self.is_user and "admin" in self.roles

    @property
    def local_name(self) -> str:
        """The agent's own name (``host:h1`` -> ``h1``); a user's name."""
        return self.name if self.is_user else self.name.partition(":")[2]

    def identity(self, class_name: str | None = None) -> Identity:
        """The :class:`~legionrm.models.Identity` to hand on, with the registry's groups."""
        return Identity(user=self.name, class_name=class_name, groups=self.groups)


class PrincipalSource(Protocol):
    """Where a verifier looks principals up (a :class:`~legionrm.auth.registry.Registry`)."""

    def principal(self, name: str) -> Principal | None: ...


def new_nonce() -> str:
    """A fresh random nonce (hex of 16 bytes)."""
    return secrets.token_hex(NONCE_BYTES)


def sign_call(
    credential: Credential,
    call: str,
    digest: str,
    now: float,
    ttl_s: float = 30.0,
    nonce: str | None = None,
    *,
    to: str,
    acting_for: str | None = None,
) -> CallProof:
    """A proof, signed by ``credential``, that its holder makes ``call`` on the
    actor ``to`` with arguments of ``digest`` (see :func:`payload_digest`),
    good from ``now`` for ``ttl_s`` (``acting_for``: on behalf of that user;
    only the gateway agent's such proofs are accepted)."""
    body = CallProof(user=credential.name, call=call, to=to, digest=digest, nonce=nonce or new_nonce(),
                     issued_at=float(now), expires_at=float(now) + float(ttl_s), acting_for=acting_for)
    return body.model_copy(update={"signature": credential.sign(body.signed_bytes())})


class CallSigner:
    """A principal's signer: ``sign(call, args, to=actor)`` with its clock and time to live."""

    def __init__(self, credential: Credential, clock: Clock, ttl_s: float = 30.0,
                 acting_for: str | None = None) -> None:
        self.credential, self._clock, self.ttl_s, self.acting_for = credential, clock, ttl_s, acting_for

    def sign(self, call: str, args: Any, *, to: str) -> CallProof:
        """A fresh proof for ``call`` with ``args`` (digested canonically) on the actor ``to``."""
        return sign_call(self.credential, call, payload_digest(args), self._clock(), self.ttl_s, to=to,
                         acting_for=self.acting_for)

    def acting(self, user: str | None) -> CallSigner:
        """This signer's key making calls on behalf of ``user`` (the gateway's; None: for itself)."""
        return CallSigner(self.credential, self._clock, self.ttl_s, acting_for=user)


class NonceCache:
    """The nonces of live accepted proofs, each kept until its drop time.

    Bounded in time (an entry leaves at its drop time) and in size
    (``max_entries``: :meth:`add` says no rather than evict a live nonce).
    """

    def __init__(self, max_entries: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self._drop_at: dict[tuple[str, str], float] = {}
        self._heap: list[tuple[float, tuple[str, str]]] = []

    def __len__(self) -> int:
        return len(self._drop_at)

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._drop_at

    def prune(self, now: float) -> None:
        """Drop every entry whose drop time is at or before ``now``."""
        while self._heap and self._heap[0][0] <= now:
            _, key = heapq.heappop(self._heap)
            self._drop_at.pop(key, None)

    def add(self, key: tuple[str, str], drop_at: float) -> bool:
        """Remember ``key`` until ``drop_at``; False when full."""
        if len(self._drop_at) >= self.max_entries:
            return False
        self._drop_at[key] = drop_at
        heapq.heappush(self._heap, (drop_at, key))
        return True

    def drop_times(self) -> list[float]:
        """Every live entry's drop time (for tests and audits)."""
        return list(self._drop_at.values())


class Verifier:
    """Checks call proofs against a registry; see the module doc for the order.  Thread-safe.

    ``clock`` is read once per check and never goes back (a clock stepped back
    cannot bring an expired nonce back to life); ``max_ttl_s`` bounds a proof's
    life and so the replay cache; ``skew_s`` is the clock difference tolerated
    between signer and verifier; ``by`` names the verifier in refusals and is
    the audience it hears (``audience`` adds other names it answers for: a
    host group the hosts it carries); a proof made out to anyone else is
    ``auth.wrong_audience``.

    The replay cache lives in memory, so a restarted verifier has forgotten
    the nonces it saw.  Pass ``accept_from`` = the boot time minus ``skew_s``
    and every proof issued before it is refused as expired, so no proof
    accepted before a restart can be accepted again after it.
    """

    def __init__(
        self,
        registry: PrincipalSource,
        clock: Clock,
        *,
        max_ttl_s: float = 300.0,
        skew_s: float = 5.0,
        max_nonces: int = 1_000_000,
        accept_from: float = -math.inf,
        by: str = "auth",
        audience: Iterable[str] = (),
    ) -> None:
        if not (max_ttl_s > 0 and skew_s >= 0):
            raise ValueError(f"max_ttl_s must be > 0 and skew_s >= 0 (got {max_ttl_s}, {skew_s})")
        self.registry, self._clock = registry, clock
        self.max_ttl_s, self.skew_s, self.by = float(max_ttl_s), float(skew_s), by
        self.accept_from = float(accept_from)
        self.audience = frozenset((by, *audience))
        self.nonces = NonceCache(max_nonces)
        self._seen = -math.inf
        self._lock = threading.Lock()

    def now(self) -> float:
        """The verifier's time: its clock, never earlier than a time already used."""
        self._seen = max(self._seen, float(self._clock()))
        return self._seen

    def verify(self, proof: Any, call: str, digest: str) -> VerifiedCaller | Refusal:
        """The caller proven by ``proof`` for ``call`` with arguments of
        ``digest``, or the first refusal in the documented order."""
        with self._lock:
            now = self.now()
            self.nonces.prune(now)
            return self._check(proof, call, digest, now)

    def verify_args(self, proof: Any, call: str, args: Any) -> VerifiedCaller | Refusal:
        """:meth:`verify` with the digest computed from ``args``."""
        return self.verify(proof, call, payload_digest(args))

    def _check(self, proof: Any, call: str, digest: str, now: float) -> VerifiedCaller | Refusal:
        proof, problem = as_model(proof, CallProof, "a call proof")
        problem = problem or self.malformation(proof)
        if problem:
            return self._refuse(codes.AUTH_MALFORMED, problem)
        principal = self.registry.principal(proof.user)
        if principal is None:
            return self._refuse(codes.AUTH_UNKNOWN_USER, f"no principal {proof.user!r} in the registry")
        if not verify_bytes(decode_public_key(principal.public_key), proof.signed_bytes(), proof.signature):
            return self._refuse(codes.AUTH_BAD_SIGNATURE, f"signature is not {proof.user!r}'s over these fields: forged or altered")
        if proof.to not in self.audience:
            return self._refuse(codes.AUTH_WRONG_AUDIENCE, f"proof is made out to {proof.to!r}, not to {self.by!r}")
        if proof.call != call:
            return self._refuse(codes.AUTH_WRONG_CALL, f"proof is for call {proof.call!r}, not {call!r}")
        if proof.digest != digest:
            return self._refuse(codes.AUTH_WRONG_CALL, f"proof is for other arguments of {call!r}")
        if proof.issued_at > now + self.skew_s:
            return self._refuse(codes.AUTH_CLOCK_SKEW, f"issued at {proof.issued_at:.3f}, later than now ({now:.3f}) "
                                f"plus the allowed skew of {self.skew_s:g} s")
        drop_at = proof.expires_at + self.skew_s
        if proof.issued_at < self.accept_from:
            return self._refuse(codes.AUTH_EXPIRED, f"issued at {proof.issued_at:.3f}, before this verifier started "
                                f"({self.accept_from:.3f}): its nonce may have been used before a restart")
        if now >= drop_at:
            return self._refuse(codes.AUTH_EXPIRED, f"proof expired at {proof.expires_at:.3f}; it is {now:.3f}")
        key = (proof.user, proof.nonce)
        if key in self.nonces:
            return self._refuse(codes.AUTH_REPLAYED, f"proof with nonce {proof.nonce!r} of {proof.user!r} was already used")
        if not self.nonces.add(key, drop_at):
            return self._refuse(codes.AUTH_OVERLOADED, f"replay cache full ({self.nonces.max_entries} live proofs); try again")
        if proof.acting_for is None:
            return VerifiedCaller.of(principal, call)
        # the gateway verified the user's own signed HTTP call: the call is that user's, with the registry's facts
        if principal.kind != DELEGATE_KIND:
            return self._refuse(codes.AUTH_FORBIDDEN, f"{proof.user!r} may not act for another user")
        user = self.registry.principal(proof.acting_for) if isinstance(proof.acting_for, str) else None
        if user is None or not user.is_user:
            return self._refuse(codes.AUTH_UNKNOWN_USER, f"no user {proof.acting_for!r} in the registry")
        return VerifiedCaller.of(user, call)

    def malformation(self, proof: CallProof) -> str:
        """What makes ``proof`` malformed ('' if nothing).  Checks types too, since
        ``model_copy`` and pickles bypass validation."""
        for name in ("user", "call", "to", "digest", "nonce", "signature"):
            value = getattr(proof, name)
            if not isinstance(value, str):
                return f"{name} is {type(value).__name__}, not text"
        if proof.acting_for is not None and not (isinstance(proof.acting_for, str)
                                                 and 0 < len(proof.acting_for) <= MAX_NAME_CHARS):
            return f"acting_for must be 1 to {MAX_NAME_CHARS} characters of text"
        if not all(0 < len(getattr(proof, name)) <= MAX_NAME_CHARS for name in ("user", "call", "to")):
            return f"user, call and to must be 1 to {MAX_NAME_CHARS} characters"
        if len(proof.digest) != DIGEST_CHARS or not _is_hex(proof.digest):
            return f"digest must be {DIGEST_CHARS} lowercase hex digits"
        if not (NONCE_MIN_CHARS <= len(proof.nonce) <= NONCE_MAX_CHARS) or not proof.nonce.isascii() or not proof.nonce.isprintable():
            return f"nonce must be {NONCE_MIN_CHARS} to {NONCE_MAX_CHARS} printable ASCII characters"
        return signed_shape(proof, "proof", self.max_ttl_s)

    def _refuse(self, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=self.by)


def signed(signer: CallSigner | None, call: str, args: Any, *, to: str) -> CallProof | None:
    """The proof for one call on the actor ``to``, or None without a signer (a system that checks nobody)."""
    return signer.sign(call, args, to=to) if signer is not None else None


M = TypeVar("M", bound=BaseModel)


def as_model(value: Any, model: type[M], what: str) -> tuple[M | Any, str]:
    """``value`` as ``model`` (a dict is validated), and "" -- or, when it is
    not one, ``value`` unchanged and what is wrong ("not a call proof: ...")."""
    if isinstance(value, dict):
        try:
            value = model.model_validate(value)
        except ValidationError as exc:
            return value, f"not {what}: {exc.error_count()} bad field(s)"
    if not isinstance(value, model):
        return value, f"not {what}: {type(value).__name__}"
    return value, ""


def signed_shape(item: Any, what: str, max_ttl_s: float) -> str:
    """The checks a signed, time-limited item (a proof, an attestation) shares:
    finite ``issued_at`` / ``expires_at``, a lifetime in ``(0, max_ttl_s]``, a
    signature of the right length.  "" when well formed, else what is wrong."""
    for name in ("issued_at", "expires_at"):
        value = getattr(item, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{name} is not a finite time: {value!r}"
    life = item.expires_at - item.issued_at
    if not 0 < life <= max_ttl_s:
        return f"{what} lives {life:g} s; it must live more than 0 and at most {max_ttl_s:g} s"
    try:
        b64decode_exact(item.signature, SIGNATURE_BYTES, what="signature")
    except ValueError as exc:
        return str(exc)
    return ""


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)
