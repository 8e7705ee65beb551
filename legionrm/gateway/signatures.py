"""The check at the door: one signed HTTP call -> the user who made it, or why not.

Every call to ``/api/v1`` (but the OpenAPI description and the health check)
carries one HTTP Message Signature (RFC 9421) labelled ``legionrm``, made
with the user's Ed25519 key, covering ``@method``, ``@path``, ``@query`` and
``Content-Digest`` (RFC 9530, the SHA-256 of the body), with ``created``,
``nonce`` and ``keyid`` (the user's name) among its parameters.  The
``http-message-signatures`` package builds the signature base and checks the
signature and the digest; this module adds the policy the RFC leaves to us,
each refusal with its own code and HTTP status:

============================  ======  ==========================================
code                          status  when
============================  ======  ==========================================
``auth.unsigned``             401     no ``Signature`` / ``Signature-Input``
``auth.malformed``            401     no nonce, or not all of :data:`COVERED` signed
``auth.unknown_user``         401     the key id names no user (never added, or removed)
``auth.bad_signature``        401     not that user's signature over these bytes
                                      (a tampered path, query or body; a wrong key)
``auth.expired``              401     created more than :data:`MAX_SKEW_S` ago
``auth.clock_skew``           401     created more than :data:`MAX_SKEW_S` ahead
``auth.replayed``             401     this user's nonce was seen before
``request.too_large``         413     a body over the size limit
``rate.limited``              429     the user is over their rate
============================  ======  ==========================================

Removal takes effect at once: the registry file is read again whenever it
changed (one ``stat`` per call).  Pure: no Ray, no web framework.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from http_message_signatures import (
    HTTPMessageVerifier,
    HTTPSignatureKeyResolver,
    InvalidSignature,
    algorithms,
)
from http_message_signatures.exceptions import HTTPMessageSignaturesException

from legionrm import codes
from legionrm.auth.keys import decode_public_key
from legionrm.gateway.intake.quickcheck import Verifying, fast_key, quick_verify
from legionrm.auth.principals import Principal
from legionrm.auth.proof import NonceCache, PrincipalSource
from legionrm.models.api import AS_HEADER, COVERED, MAX_SKEW_S, SIGNATURE_LABEL

Clock = Callable[[], float]
DEFAULT_MAX_BODY = 1 << 20
"""The largest body the gateway reads (1 MiB: a request file is a few KiB)."""


class Refused(Exception):
    """A call the door turns away: its HTTP status, code and one-line reason."""

    def __init__(self, status: int, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.status, self.code, self.reason = status, code, reason


class RateLimit:
    """A token bucket per user: ``rate`` calls a second on average, bursts of ``burst``."""

    def __init__(self, rate: float = 50.0, burst: float = 100.0, clock: Clock = time.monotonic) -> None:
        self.rate, self.burst, self._clock = float(rate), float(burst), clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, user: str) -> bool:
        """Spend one call of ``user``'s; False when they are over their rate."""
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(user, (self.burst, now))
            tokens = min(self.burst, tokens + (now - at) * self.rate)
            ok = tokens >= 1.0
            self._buckets[user] = (tokens - 1.0 if ok else tokens, now)
            return ok


@dataclass
class _Message:
    """What the verifier reads of a request: its method, URL and header lines."""

    method: str
    url: str
    headers: Any


class _UnknownKey(Exception):
    pass


class _Keys(HTTPSignatureKeyResolver):
    """A key id is a user's name; their public key is the registry's."""

    def __init__(self, principals: PrincipalSource) -> None:
        self.principals = principals

    def resolve_public_key(self, key_id: str) -> Any:
        p = self.principals.principal(key_id) if isinstance(key_id, str) else None
        if p is None or not p.is_user:
            raise _UnknownKey(key_id)
        return decode_public_key(p.public_key)


class _Verifier(HTTPMessageVerifier):
    # the package's own time window is opened wide: the door checks ``created`` itself, with its own codes
    max_clock_skew = datetime.timedelta(days=365 * 100)


class SignatureCheck:
    """Verifies signed calls against the registry of one home; see the module doc.  Thread-safe."""

    def __init__(self, principals: PrincipalSource, *, clock: Clock = time.time, skew_s: float = MAX_SKEW_S,
                 rate: RateLimit | None = None, max_nonces: int = 1_000_000) -> None:
        self.principals, self._clock, self.skew_s = principals, clock, float(skew_s)
        self.rate = rate or RateLimit()
        self.nonces = NonceCache(max_nonces)
        self._verifier = _Verifier(signature_algorithm=algorithms.ED25519, key_resolver=_Keys(principals))
        self._lock = threading.Lock()
        self._keys: dict[str, Verifying] = {}

    def verify(self, method: str, path_qs: str, headers: Any, body: bytes) -> Principal:
        """The user who signed this call, or :class:`Refused`.  ``path_qs`` is the raw
        request target (path and query, as sent); ``headers`` has ``items()`` of every line."""
        quick = quick_verify(method, path_qs, headers, body, self._key_of)
        if quick is not None:  # legionrm's own clients' shape, verified without the general parser
            principal, nonce, created = quick
            user = principal.name
        else:
            names = {k.lower() for k, _ in headers.items()}
            if "signature" not in names or "signature-input" not in names:
                raise Refused(401, codes.AUTH_UNSIGNED, "the call is not signed (RFC 9421 Signature and Signature-Input)")
            user, nonce, created = self._verify_general(method, path_qs, headers, body, names)
            found = self.principals.principal(user)
            assert found is not None  # the key resolver found it
            principal = found
        with self._lock:
            now = self._clock()
            self.nonces.prune(now)
            if created < now - self.skew_s:
                raise Refused(401, codes.AUTH_EXPIRED, f"signed {now - created:.0f} s ago; a call is good for "
                              f"{self.skew_s:g} s (is this machine's clock right?)")
            if created > now + self.skew_s:
                raise Refused(401, codes.AUTH_CLOCK_SKEW, f"signed {created - now:.0f} s in the future; the clocks may "
                              f"differ by at most {self.skew_s:g} s")
            if (user, nonce) in self.nonces:
                raise Refused(401, codes.AUTH_REPLAYED, f"nonce {nonce!r} of {user!r} was already used: a replayed call")
            if not self.nonces.add((user, nonce), created + 2 * self.skew_s):
                raise Refused(503, codes.AUTH_OVERLOADED, "too many calls in flight to remember their nonces; try again")
        if not self.rate.take(user):
            raise Refused(429, codes.RATE_LIMITED, f"{user!r} is over their rate of {self.rate.rate:g} calls a second; "
                          "slow down and try again")
        return principal

    def _verify_general(self, method: str, path_qs: str, headers: Any, body: bytes, names: set[str]
                        ) -> tuple[str, str, int]:
        """``(user, nonce, created)`` of any call signed as RFC 9421 allows, by the ``http-message-signatures``
        package; :class:`Refused` with the reason it is not."""
        covered: Iterable[str] = COVERED + ((AS_HEADER.lower(),) if AS_HEADER.lower() in names else ())
        message = _Message(method.upper(), "http://gateway" + path_qs, headers)
        try:
            result = self._verifier.verify(message, max_age=None, expect_tag=None, require_components=tuple(covered),
                                           body=body)[0]
        except (InvalidSignature, HTTPMessageSignaturesException) as exc:
            raise self._refusal(exc) from None
        params = result.parameters
        user, nonce, created = str(params["keyid"]), params.get("nonce"), params.get("created")
        if result.label != SIGNATURE_LABEL or not isinstance(nonce, str) or not 16 <= len(nonce) <= 128:
            raise Refused(401, codes.AUTH_MALFORMED, f"the signature must be labelled {SIGNATURE_LABEL!r} and carry a "
                          "nonce of 16 to 128 characters")
        assert isinstance(created, int)  # the package requires it
        return user, nonce, created

    def _key_of(self, user: str) -> tuple[Principal, Verifying] | None:
        """``user`` and their public key as the registry holds them now (a key decoded once, then kept,
        as :func:`~legionrm.gateway.intake.quickcheck.fast_key` checks with it)."""
        p = self.principals.principal(user)
        if p is None or not p.is_user:
            return None
        key = self._keys.get(p.public_key)
        if key is None:
            if len(self._keys) > 10_000:  # keys of removed or re-keyed users: start afresh
                self._keys.clear()
            key = self._keys[p.public_key] = fast_key(decode_public_key(p.public_key))
        return p, key

    @staticmethod
    def _refusal(exc: BaseException) -> Refused:
        cause = exc.__cause__
        if isinstance(cause, _UnknownKey):
            return Refused(401, codes.AUTH_UNKNOWN_USER, f"no user {cause.args[0]!r} (never added, or removed)")
        text = str(exc).strip() or type(exc).__name__
        if "Content-Digest" in text and "match" in text:
            return Refused(401, codes.AUTH_BAD_SIGNATURE, "the body does not match its signed Content-Digest: altered")
        if text == "InvalidSignature" or "verif" in text.lower():
            return Refused(401, codes.AUTH_BAD_SIGNATURE, "not the key holder's signature over this method, path, "
                           "query and body (a wrong key, or an altered call)")
        return Refused(401, codes.AUTH_MALFORMED, f"not a usable signature: {text}")
