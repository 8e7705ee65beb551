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
An attestation is bound to one request id at one host, and reservations are
idempotent by request id, so presenting it twice gets the same reservation;
it needs no nonce.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict

from legionrm.auth import codes
from legionrm.auth.canonical import ATTEST_DOMAIN, canonical
from legionrm.auth.keys import (
    Credential,
    decode_public_key,
    verify_bytes,
)
from legionrm.auth.proof import MAX_NAME_CHARS, VerifiedCaller, as_model, signed_shape
from legionrm.models import Identity, Refusal

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
) -> Attestation:
    """The scheduler ``credential`` vouches for verified ``caller`` to ``host``.

    Groups are taken from ``caller`` (which took them from the registry); the
    caller must be a verified user (``ValueError`` for an agent).
    """
    if not caller.is_user:
        raise ValueError(f"only users are attested, not {caller.name!r}")
    body = Attestation(issuer=credential.name, request_id=request_id, user=caller.name, groups=caller.groups,
                       class_name=class_name, host=host, issued_at=float(now), expires_at=float(now) + float(ttl_s))
    return body.model_copy(update={"signature": credential.sign(body.signed_bytes())})


class AttestationVerifier:
    """A host's check of attestations, holding only trusted schedulers' public keys.

    ``trusted`` maps a scheduler's principal name to its public key (an
    ``Ed25519PublicKey`` or its base64 text).  ``max_ttl_s`` bounds an
    attestation's life; ``skew_s`` the clock difference tolerated.
    """

    def __init__(
        self,
        trusted: Mapping[str, Ed25519PublicKey | str],
        clock: Clock,
        *,
        max_ttl_s: float = 600.0,
        skew_s: float = 5.0,
        by: str = "auth",
    ) -> None:
        self._trusted = {n: decode_public_key(k) if isinstance(k, str) else k for n, k in trusted.items()}
        self._clock, self.max_ttl_s, self.skew_s, self.by = clock, float(max_ttl_s), float(skew_s), by
        self._seen = -math.inf
        self._lock = threading.Lock()

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
            return self._refuse(codes.MALFORMED, problem)
        key = self._trusted.get(attestation.issuer)
        if key is None:
            return self._refuse(codes.UNKNOWN_ISSUER, f"{attestation.issuer!r} is not a scheduler this host trusts")
        if not verify_bytes(key, attestation.signed_bytes(), attestation.signature):
            return self._refuse(codes.BAD_SIGNATURE, f"signature is not {attestation.issuer!r}'s over these fields")
        if attestation.host != host:
            return self._refuse(codes.WRONG_HOST, f"attestation is made out to {attestation.host!r}, not {host!r}")
        if request_id is not None and attestation.request_id != request_id:
            return self._refuse(codes.WRONG_CALL, f"attestation is for request {attestation.request_id!r}, not {request_id!r}")
        now = self.now()
        if attestation.issued_at > now + self.skew_s:
            return self._refuse(codes.CLOCK_SKEW, f"issued at {attestation.issued_at:.3f}, later than now ({now:.3f}) plus {self.skew_s:g} s")
        if now >= attestation.expires_at + self.skew_s:
            return self._refuse(codes.EXPIRED, f"attestation expired at {attestation.expires_at:.3f}; it is {now:.3f}")
        return attestation.identity()

    def malformation(self, a: Attestation) -> str:
        """What makes ``a`` malformed ('' if nothing)."""
        for name in ("issuer", "request_id", "user", "host", "signature"):
            value = getattr(a, name)
            if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS * 4:
                return f"{name} must be non-empty text"
        if a.class_name is not None and not isinstance(a.class_name, str):
            return "class_name must be text or absent"
        if not isinstance(a.groups, tuple) or not all(isinstance(g, str) for g in a.groups):
            return "groups must be a tuple of names"
        return signed_shape(a, "attestation", self.max_ttl_s)

    def _refuse(self, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=self.by)
