"""The Scheduler's attestation: a user's identity in a form a host can check.

When the Scheduler has verified a user's call proof, it vouches for that user
to each host it asks for a reservation: :func:`attest` signs, with the
Scheduler's own key, the request id, the user, the user's groups *from the
registry*, the class (if any), the host the statement is made out to, and a
short life.  The host verifies it with an :class:`AttestationVerifier` that
holds only the public keys of the schedulers it trusts: no registry, no user
secret.  The owner's policy then judges the :class:`~legionrm.models.Identity`
that comes out, so groups a user merely claims never reach a policy.

Same canonical form as call proofs, under its own domain
(``legionrm.attest.v1``), so an attestation can never pass as a call proof.

Checks, in order, each with its code: ``auth.malformed`` -> ``auth.unknown_issuer``
(not a scheduler this host trusts) -> ``auth.bad_signature`` -> ``auth.wrong_host``
-> ``auth.wrong_call`` (another request id) -> ``auth.clock_skew`` / ``auth.expired``.

An attestation is good for one reservation only (issue 15): it names the
reservation it is for (``reservation``: ``<request id>/<placement key>/<kind>``,
what the Enactor asks under, plus ``/<n>`` for its n-th try) and the resources
asked, and :meth:`AttestationVerifier.admit` refuses it for any other
reservation request (``auth.wrong_reservation``: another request id, another
amount) and, once it is spent, for a second one (``auth.attestation_spent``):
it is spent on a reservation that still holds or was used; one that ended
unused (cancelled, expired) frees it for the Enactor's next try.  So a user
holding a genuine attestation cannot reserve on that host past the pools.
Reservations are idempotent by request id, so the same request again gets
the same reservation before any of this is asked.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict

from legionrm import codes
from legionrm.auth.canonical import ATTEST_DOMAIN, canonical
from legionrm.auth.keys import (
    Credential,
    decode_public_key,
    verify_bytes,
)
from legionrm.auth.proof import MAX_NAME_CHARS, VerifiedCaller, as_model, signed_shape
from legionrm.models import Identity, Refusal, ReservationRequest, Resources

Clock = Callable[[], float]


class Attestation(BaseModel):
    """The Scheduler ``issuer`` vouches that ``user`` (in ``groups``) asks
    ``host`` for request ``request_id``, until ``expires_at``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    issuer: str
    request_id: str
    user: str
    groups: tuple[str, ...] = ()
    class_name: str | None = None
    host: str
    reservation: str
    resources: Resources
    issued_at: float
    expires_at: float
    signature: str = ""

    def signed_bytes(self) -> bytes:
        """What the signature covers: every field but ``signature``, canonically."""
        return canonical(ATTEST_DOMAIN, self.model_dump(mode="json", exclude={"signature"}))

    def identity(self) -> Identity:
        """The identity the host's owner policy judges."""
        return Identity(user=self.user, class_name=self.class_name, groups=self.groups)


def attest(
    credential: Credential,
    caller: VerifiedCaller,
    request_id: str,
    host: str,
    now: float,
    ttl_s: float = 60.0,
    class_name: str | None = None,
    *,
    reservation: str,
    resources: Resources,
) -> Attestation:
    """The scheduler ``credential`` vouches for verified ``caller`` to ``host``,
    for the one reservation ``reservation`` (see :func:`reservation_of`) of ``resources``.

    Groups are taken from ``caller`` (which took them from the registry); the
    caller must be a verified user (``ValueError`` for an agent).
    """
    if not caller.is_user:
        raise ValueError(f"only users are attested, not {caller.name!r}")
    body = Attestation(issuer=credential.name, request_id=request_id, user=caller.name, groups=caller.groups,
                       class_name=class_name, host=host, reservation=reservation, resources=resources,
                       issued_at=float(now), expires_at=float(now) + float(ttl_s))
    return body.model_copy(update={"signature": credential.sign(body.signed_bytes())})


class AttestationVerifier:
    """A host's check of attestations, holding only trusted schedulers' public keys.

    ``trusted`` maps a scheduler's principal name to its public key (an
    ``Ed25519PublicKey`` or its base64 text), or is a function from a name to
    that key (None: not trusted), asked at each check, so a scheduler whose
    key was issued anew is checked against its new key.  ``max_ttl_s`` bounds an
    attestation's life; ``skew_s`` the clock difference tolerated.  What was
    spent (:meth:`admit`) lives in memory: pass ``accept_from`` = the start
    time minus ``skew_s`` and one issued before it is refused as expired, so a
    restart cannot make a spent attestation good again.
    """

    def __init__(
        self,
        trusted: Mapping[str, Ed25519PublicKey | str] | Callable[[str], Ed25519PublicKey | str | None],
        clock: Clock,
        *,
        max_ttl_s: float = 600.0,
        skew_s: float = 5.0,
        by: str = "auth",
        accept_from: float = -math.inf,
    ) -> None:
        self._trusted = trusted.get if isinstance(trusted, Mapping) else trusted
        self._clock, self.max_ttl_s, self.skew_s, self.by = clock, float(max_ttl_s), float(skew_s), by
        self.accept_from = float(accept_from)  # a restarted host forgot what it spent: older ones are refused
        self._seen = -math.inf
        self._lock = threading.Lock()
        self._spent: dict[str, tuple[str, float]] = {}  # signature -> (reservation request id, forget after)
        self._prune_at = -math.inf

    def now(self) -> float:
        """The verifier's time: its clock, never earlier than a time already used."""
        with self._lock:
            self._seen = max(self._seen, float(self._clock()))
            return self._seen

    def verify(self, attestation: Any, host: str, request_id: str | None = None) -> Identity | Refusal:
        """The identity ``attestation`` vouches for at ``host`` (for ``request_id``
        when given), or the first refusal in the documented order."""
        attestation, problem = as_model(attestation, Attestation, "an attestation")
        problem = problem or self.malformation(attestation)
        if problem:
            return self._refuse(codes.AUTH_MALFORMED, problem)
        key = self._trusted(attestation.issuer)
        if isinstance(key, str):
            key = decode_public_key(key)
        if key is None:
            return self._refuse(codes.AUTH_UNKNOWN_ISSUER, f"{attestation.issuer!r} is not a scheduler this host trusts")
        if not verify_bytes(key, attestation.signed_bytes(), attestation.signature):
            return self._refuse(codes.AUTH_BAD_SIGNATURE, f"signature is not {attestation.issuer!r}'s over these fields")
        if attestation.host != host:
            return self._refuse(codes.AUTH_WRONG_HOST, f"attestation is made out to {attestation.host!r}, not {host!r}")
        if request_id is not None and attestation.request_id != request_id:
            return self._refuse(codes.AUTH_WRONG_CALL, f"attestation is for request {attestation.request_id!r}, not {request_id!r}")
        now = self.now()
        if attestation.issued_at > now + self.skew_s:
            return self._refuse(codes.AUTH_CLOCK_SKEW, f"issued at {attestation.issued_at:.3f}, later than now ({now:.3f}) plus {self.skew_s:g} s")
        if attestation.issued_at < self.accept_from:
            return self._refuse(codes.AUTH_EXPIRED, f"attestation issued at {attestation.issued_at:.3f}, before this "
                                f"resource started ({self.accept_from:.3f}): it may have been spent before a restart")
        if now >= attestation.expires_at + self.skew_s:
            return self._refuse(codes.AUTH_EXPIRED, f"attestation expired at {attestation.expires_at:.3f}; it is {now:.3f}")
        return attestation.identity()

    def admit(self, request: ReservationRequest, holds: Callable[[str], bool]) -> ReservationRequest | Refusal:
        """``request`` held by the user the attestation it carries vouches for (the
        registry's groups), or the refusal: no attestation (``auth.no_proof``), a
        bad one (:meth:`verify`), another user (``auth.wrong_call``), another
        reservation (``auth.wrong_reservation``), or one already spent on a reservation
        ``holds(request id)`` says still holds or was used (``auth.attestation_spent``)."""
        if request.attestation is None:
            return self._refuse(codes.AUTH_NO_PROOF, f"{request.resource} reserves only for users the Scheduler "
                                "attests; this request has no attestation")
        att, _ = as_model(request.attestation, Attestation, "an attestation")
        ident = self.verify(att, request.resource)
        if isinstance(ident, Refusal):
            return ident
        if ident.user != request.holder.user:
            return self._refuse(codes.AUTH_WRONG_CALL, f"attestation is for {ident.user!r}, the request claims "
                                f"{request.holder.user!r}")
        head, _, tail = request.request_id.rpartition("/")
        if request.request_id != att.reservation and not (head == att.reservation and tail.isdigit()):
            return self._refuse(codes.AUTH_WRONG_RESERVATION, f"attestation is for reservation {att.reservation!r}, "
                                f"not {request.request_id!r}")
        if request.resources != att.resources:
            return self._refuse(codes.AUTH_WRONG_RESERVATION, f"attestation is for {att.resources}, the request asks "
                                f"{request.resources}")
        with self._lock:
            if self._seen >= self._prune_at:  # an attestation past its life is refused anyway: forget it
                self._spent = {k: v for k, v in self._spent.items() if v[1] > self._seen}
                self._prune_at = self._seen + 1.0
            spent = self._spent.get(att.signature)
            if spent is not None and spent[0] != request.request_id and holds(spent[0]):
                return self._refuse(codes.AUTH_ATTESTATION_SPENT, f"attestation of {att.reservation!r} was spent on "
                                    f"reservation {spent[0]!r}, which still holds or was used")
            self._spent[att.signature] = (request.request_id, att.expires_at + self.skew_s)
        return request.model_copy(update={"holder": request.holder.model_copy(update={"groups": tuple(ident.groups)})})

    def malformation(self, a: Attestation) -> str:
        """What makes ``a`` malformed ('' if nothing)."""
        for name in ("issuer", "request_id", "user", "host", "reservation", "signature"):
            value = getattr(a, name)
            if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS * 4:
                return f"{name} must be non-empty text"
        if a.class_name is not None and not isinstance(a.class_name, str):
            return "class_name must be text or absent"
        if not isinstance(a.groups, tuple) or not all(isinstance(g, str) for g in a.groups):
            return "groups must be a tuple of names"
        if not isinstance(a.resources, Resources):
            return "resources must be the resources asked"
        return signed_shape(a, "attestation", self.max_ttl_s)

    def _refuse(self, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=self.by)


def reservation_of(request_id: str, key: str, kind: str) -> str:
    """The reservation an attestation is for: the Enactor asks ``<this>/<n>`` for its n-th try."""
    return f"{request_id}/{key}/{kind}"


def attestation_key(resource: str, reservation: str) -> str:
    """Where an :class:`~legionrm.models.EnactRequest` keeps the attestation of ``reservation`` at ``resource``."""
    return f"{reservation}@{resource}"
