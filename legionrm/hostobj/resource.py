"""What host and vault objects share: reservations, tokens, expiry, the collection.

:class:`ResourceObject` keeps a :class:`~legionrm.hostobj.calendar.Calendar` of
reservations and the records behind the tokens it signed.  Every public method
takes the object's lock and first sweeps what the host's own clock says has
expired, so an unused reservation returns its capacity at the resource without
anyone calling back (Legion 8.2.3: "a reservation may have a time-out period
after which the reservation is released").

``make_reservation`` runs its checks in a fixed order, and the order is the
contract: idempotency (a retried request gets the same token) -> the request is
for this resource, with a finite start (an infinite duration is open-ended) ->
capacity and calendar (the base checks, before any owner code, so an owner can
only refuse what would fit) -> the owner's ``admit_reservation`` -> a token.
The checks a token presented to use it goes through are
:class:`~legionrm.hostobj.tokens.TokenChecks` (a base class).
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from legionrm import codes
from legionrm.heartbeat import Publisher
from legionrm.hostobj import tokens
from legionrm.hostobj.calendar import Calendar, State
from legionrm.hostobj.durable import Durable
from legionrm.hostobj.policies import ADMIT, Policy, Verdict, ask_owner
from legionrm.hostobj.records import Presence, Reservation, audit_view, forget_after, attr_num, public
from legionrm.hostobj.sink import CollectionSink, NullSink
from legionrm.hostobj.tokens import TokenChecks
from legionrm.models import (
    AccessPolicy,
    AttrValue,
    Refusal,
    ReservationRequest,
    ReservationToken,
    ResourceAudit,
    ResourceKind,
    Resources,
)


_OPEN = AccessPolicy()
"""The access list of a resource whose owner gave none: anyone (no need to ask it)."""


class ResourceObject(Durable, Presence, TokenChecks):
    """A resource that grants reservations as signed tokens.  Thread-safe.

    Subclasses set ``kind`` and ``dims`` (the capacity dimensions the calendar
    tracks) and may override the owner hooks :meth:`admit_reservation` and
    :meth:`attributes`.
    """

    kind: ClassVar[ResourceKind] = "host"
    dims: ClassVar[tuple[str, ...]] = ("cpus", "memory_gb", "gpus")
    degraded: str | None = None
    """Why this resource's state file cannot be written now (its keeper sets it;
    heartbeats carry it as ``degraded``); None while writes succeed."""

    def __init__(
        self,
        name: str,
        capacity: Resources,
        *,
        attributes: Mapping[str, AttrValue] | None = None,
        policy: Policy | None = None,
        access: AccessPolicy | None = None,
        nodepool: str | None = None,
        secret: bytes | None = None,
        clock: Callable[[], float] = time.time,
        sink: CollectionSink | None = None,
        retain_s: float = 3600.0,
    ) -> None:
        self.name = name
        self.capacity = capacity
        self.static_attributes: dict[str, AttrValue] = dict(attributes or {})
        self.policy = policy
        self.access = _OPEN if access is None or access == _OPEN else access  # (the open list: never asked)
        self.nodepool = nodepool
        self._secret = secret or tokens.new_secret()
        self._clock = clock
        self._seen = -math.inf  # the latest time read: the resource's time never goes back
        self._now = -math.inf  # the time of the current public call (records.public reads it once)
        self.sink: CollectionSink = sink if sink is not None else NullSink()  # an empty Collection is falsy
        self.retain_s = retain_s
        self.calendar = Calendar(self._vector(capacity, exclusive_ok=False), self.dims)
        self._calendar_out = Publisher()  # the calendar ahead, as heartbeats carry it
        self._by_token: dict[str, Reservation] = {}
        self._grants = itertools.count(1)  # serial of each grant: token ids are never reissued
        self._by_request: dict[str, Reservation] = {}
        self._open: dict[str, Reservation] = {}  # reservations still holding a booking
        self._next_deadline = math.inf  # earliest expiry or end among the open ones
        self._lock = threading.RLock()
        self._depth = 0  # nesting of public calls on the lock-holding thread
        self.joined = False
        self.measured_load: float | None = None  # set by a real host from its own measurements

    _secret = property(lambda self: self._signer.secret, lambda self, secret: setattr(self, "_signer", tokens.Signer(secret)))
    """The secret that signs (a restore puts the stored one back): held by its :class:`~legionrm.hostobj.tokens.Signer`."""

    attestations: Any = None
    """An :class:`~legionrm.auth.AttestationVerifier` holding the Scheduler's
    public key, or None (no identity checks: in-process systems and tests).
    With one, every reservation must carry the Scheduler's attestation made
    out to this resource for that one reservation (spent once), and the owner's
    policy judges the attested user and groups, whatever the request claims."""

    def _attested(self, request: ReservationRequest) -> ReservationRequest | Refusal:
        """``request`` held by the identity the Scheduler attested for this one reservation, or the
        refusal (see :meth:`legionrm.auth.attest.AttestationVerifier.admit`)."""
        out = self.attestations.admit(request, self._holds)
        return out.model_copy(update={"by": self.name}) if isinstance(out, Refusal) else out

    def _holds(self, request_id: str) -> bool:
        """Whether the reservation granted for ``request_id`` still holds or was used (spent its attestation)."""
        res = self._by_request.get(request_id)
        return res is not None and (res.status == "active" or res.uses > 0)

    def _access_refusal(self, who: Any) -> Refusal | None:
        """The owner's access list, enforced here whoever calls (not only by the
        Collection's filtering): a refusal naming the rule, or None."""
        access = self.policy.restrict(self.access) if self.policy else self.access
        if access is _OPEN or access.accepts(who):
            return None
        if who.user in access.deny_users or (access.allow_users and who.user not in access.allow_users
                                             and not access.allow_groups):
            code = codes.POLICY_USER
        elif who.class_name is not None and (who.class_name in access.deny_classes
                                             or (access.allow_classes and who.class_name not in access.allow_classes)):
            code = codes.POLICY_CLASS
        else:
            code = codes.POLICY_GROUP
        return self._refuse(code, f"{self.name}'s owner does not admit {who.user!r} (access list)")

    def admits(self, who: Any) -> bool:  # does the owner's access list admit ``who``? (what views check)
        return self._access_refusal(who) is None

    # --- owner hooks (override these; safe defaults) ---------------------------------

    def _closed(self) -> Refusal | None:
        """Why this resource takes no new work now (a drained host), or None; before capacity and owners."""
        return None

    def admit_reservation(self, request: ReservationRequest) -> Verdict:
        """Owner's say on a reservation that fits.  Default: the attached policy, else admit."""
        return self.policy.admit_reservation(self, request) if self.policy else ADMIT

    def attributes(self) -> dict[str, AttrValue]:
        """Owner-defined attributes, added to every record and heartbeat."""
        return {}

    # --- what policies may ask -----------------------------------------------------------

    def now(self) -> float:
        """The resource's time: its clock, never earlier than a time it has
        already acted on (a wall clock stepped back does not un-start a
        reservation or hide a booking)."""
        with self._lock:
            t = float(self._clock())
            if t > self._seen:
                self._seen = t
            return self._seen

    @public
    def load(self) -> float:
        """Fraction of the first dimension (cpus, or storage) booked now, or the
        measured load when one is set and higher (work the host runs outside legionrm)."""
        cap = float(self.calendar.capacity[0])
        booked = float(self.calendar.usage_at(self.now())[0]) / cap if cap > 0 else 0.0
        return booked if self.measured_load is None else max(booked, self.measured_load)

    @public
    def projected_load(self, resources: Resources, start: float | None = None, end: float | None = None) -> float:
        """The peak load over ``[start, end)`` if ``resources`` were booked for it.

        ``start`` None (or past) means now, where a measured load also counts;
        ``end`` None means open-ended, so every later booking counts.  An
        advance reservation is judged by what is booked during its own window,
        not by the load now.
        """
        now = self.now()
        begin = now if start is None or start <= now else float(start)
        cap = float(self.calendar.capacity[0])
        if cap <= 0:
            return 0.0
        booked = float(self.calendar.peak(begin, end)[0]) / cap
        if begin <= now and self.measured_load is not None:
            booked = max(booked, self.measured_load)
        return booked + float(self._vector(resources)[0]) / cap

    @public
    def reservations_of(self, user: str) -> int:
        """Unused active reservations held by ``user``."""
        return sum(1 for r in self._open.values() if r.status == "active" and r.uses == 0 and r.token.holder.user == user)

    def instances_of(self, user: str) -> int:
        return 0

    # --- reservations ---------------------------------------------------------------------

    @public
    def make_reservation(self, request: ReservationRequest) -> ReservationToken | Refusal:
        """Grant ``request`` as a signed token, or refuse it.

        Idempotent by ``request.request_id``: the same request again returns the
        same token (whatever became of it since); the same id with a different
        request is refused (``request.conflict``).  See the module doc for the
        order of checks.
        """
        now = self._now  # (the call's time)
        old = self._by_request.get(request.request_id)
        if old is not None:
            if old.request == request:  # (made again only for a retried id)
                return old.token
            return self._refuse(codes.REQUEST_CONFLICT, f"request id {request.request_id!r} was used for another request")
        if request.resource != self.name:
            return self._refuse(codes.RESOURCE_MISMATCH, f"request is for {request.resource!r}, this is {self.name!r}")
        if self.attestations is not None:
            attested = self._attested(request)
            if isinstance(attested, Refusal):
                return attested
            request = attested
        if request.start is not None and not math.isfinite(request.start):
            return self._refuse(codes.REQUEST_INVALID, f"start {request.start} is not a time")
        closed = self._closed()  # (a Refusal is falsy: no `or` here)
        pairing = closed if closed is not None else self._check_pairing(request)
        if pairing is not None:
            return pairing
        start = now if request.start is None or request.start <= now else float(request.start)
        end = start + request.duration_s if request.duration_s is not None and math.isfinite(request.duration_s) else None
        amount = self._amounts(request.resources)
        checked = self.calendar.checked(amount, start, end)  # (the fit, and the bookings it was found on)
        fit = checked[0]
        if fit != "ok":
            return self._capacity_refusal(fit, request.resources, start, end)
        hook = self.admit_reservation
        if self.policy is not None or getattr(hook, "__func__", None) is not ResourceObject.admit_reservation:
            verdict = self._ask_owner("admit_reservation", hook, request)  # (no owner code: nothing to ask)
            if isinstance(verdict, Refusal):
                return verdict
        denied = self._access_refusal(request.holder)  # (a holder reads as the identity it names)
        if denied is not None:
            return denied
        expires = start + request.timeout_s
        token = self._signer.granted(  # (every value below is already valid: the request's, or made here)
            token_id=self._signer.token_id(self.name, request.request_id, next(self._grants)),
            issuer=self.name,
            holder=request.holder,
            resources=request.resources,
            vault=request.vault,
            start=float(start),
            end=None if end is None else float(end),
            expires_at=float(expires if end is None else min(expires, end)),
            reusable=bool(request.reusable),
        )
        try:
            self.calendar.add_checked(token.token_id, amount, start, end, checked)  # (an owner hook's booking: asked again)
        except ValueError:  # an owner hook booked the room meanwhile: the calendar still never overbooks
            return self._capacity_refusal(self.calendar.check(amount, start, end), request.resources, start, end)
        res = Reservation.of(token, request)
        self._by_token[token.token_id] = self._by_request[request.request_id] = self._open[token.token_id] = res
        self._next_deadline = min(self._next_deadline, token.expires_at)
        return token

    @public
    def check_reservation(self, token_id: str) -> ReservationToken | Refusal:
        """The token if it can still be used to start something, else why not
        (``token.unknown``, ``token.expired``, ``token.cancelled``, ``token.used``)."""
        res = self._by_token.get(token_id)
        if res is None:
            return self._refuse(codes.TOKEN_UNKNOWN, f"no reservation {token_id!r} here")
        refusal = self._status_refusal(res)
        return refusal if refusal is not None else res.token

    @public
    def cancel_reservation(self, token: str | ReservationToken) -> bool:
        """Release a reservation (by token id or token).  Idempotent and safe:
        True only when an active reservation was cancelled now; False for
        unknown, expired, already cancelled or consumed (one-shot, started)
        tokens.  An instance started with a reusable token keeps running; its
        capacity returns when it stops."""
        token_id = token.token_id if isinstance(token, ReservationToken) else token
        res = self._by_token.get(token_id)
        if res is None or res.status != "active":
            return False
        if isinstance(token, ReservationToken) and not tokens.same(token, res.token):
            return False  # not the token of this reservation
        res.status = "cancelled"
        if not res.holders:
            self._close(res, self.now())
        return True

    @public
    def attested_holder(self, token_id: str) -> str | None:
        """The user who holds the reservation of ``token_id`` as this resource
        recorded it when granting (the user the Scheduler attested, when it
        checks identities), or None for a token it does not know.  What the
        resource's door asks before a user cancels or stops (never the token's text)."""
        res = self._by_token.get(token_id)
        return res.token.holder.user if res is not None else None  # (the granted request's holder)

    @public
    def reservations(self) -> list[ReservationToken]:
        """Tokens of the reservations that still hold capacity, by start."""
        return sorted((r.token for r in self._open.values()), key=lambda t: (t.start, t.token_id))

    @public
    def audit_view(self) -> ResourceAudit:
        """What this resource holds now, for the auditor (a read)."""
        listing = getattr(self, "list_instances", None)
        instances = tuple(listing()) if callable(listing) else None
        return audit_view(self.name, self.now(), self.calendar, self._open, self.reservations(), instances)

    @public
    def holders_of(self, token_id: str) -> frozenset[str]:
        """Who uses an open reservation now (instance ids, or vault use ids); empty if none or unknown."""
        res = self._open.get(token_id)
        return frozenset(res.holders) if res is not None else frozenset()

    def expire(self) -> list[str]:
        """Expire and end what is due by the resource's clock (the actor calls
        this on its timer; every public call does it too).  Returns the token
        ids whose capacity returned in this sweep.  Idempotent."""
        with self._lock:
            return self._sweep(self.now())

    # --- the calendar, as a request sees it ---------------------------------------------

    @public
    def state(self, resources: Resources | None = None, duration_s: float | None = None) -> State:
        """``free`` / ``busy_later`` / ``busy`` now, by the resource's clock.

        Without ``resources``: about the whole resource (busy when anything is
        booked now).  With ``resources`` (and ``duration_s``): about that
        request: busy when it does not fit now (or collides with a later
        booking before it would end); busy_later when it fits now but some
        reservation starts later; free otherwise.
        """
        now = self.now()
        if resources is None:
            return self.calendar.state(now)
        return self.calendar.state(now, self._vector(resources), duration_s)

    # --- for subclasses -----------------------------------------------------------------

    def _ask_owner(self, hook: str, call: Callable[..., Verdict], *args: Any) -> Verdict:
        """Run an owner hook through :func:`~legionrm.hostobj.policies.ask_owner` (a mistake refuses)."""
        return ask_owner(hook, call, *args, by=self.name)

    def _check_pairing(self, request: ReservationRequest) -> Refusal | None:
        return None

    def _use(self, res: Reservation, holder_id: str) -> None:
        """Record one use of a validated reservation by ``holder_id``."""
        res.uses += 1
        res.hold(holder_id)
        if not res.token.reusable:
            res.status = "used"
        end = res.token.end
        self._next_deadline = min(self._next_deadline, end if end is not None else math.inf)

    def _unuse(self, res: Reservation, holder_id: str) -> None:
        """``holder_id`` no longer holds the reservation: release the booking
        unless a reusable reservation is still active."""
        res.let_go(holder_id)
        if not res.holders and not (res.status == "active" and res.token.reusable):
            self._close(res, self.now())

    def _end_holders(self, res: Reservation, now: float) -> None:
        """A reservation reached its end while held (hosts stop the instances)."""
        res.holders = ()

    def _close(self, res: Reservation, now: float) -> None:
        self.calendar.remove(res.token.token_id)
        self._open.pop(res.token.token_id, None)
        res.closed_at = now

    def _sweep(self, now: float) -> list[str]:
        """Expire unused reservations past their timeout and end those past
        their end; forget closed records after ``retain_s``.  O(1) when nothing
        is due.  Returns the token ids released."""
        if now < self._next_deadline:
            return []
        nxt = math.inf
        released: list[str] = []
        for res in list(self._open.values()):
            t = res.token
            if t.end is not None and t.end <= now:
                if res.status in ("active", "used"):
                    res.status = "ended" if res.uses else "expired"
                if res.holders:
                    self._end_holders(res, now)
                self._close(res, now)
                released.append(t.token_id)
            elif res.status == "active" and res.uses == 0 and t.expires_at <= now:
                res.status = "expired"
                self._close(res, now)
                released.append(t.token_id)
            else:
                due = [x for x in (t.end, t.expires_at if res.uses == 0 and res.status == "active" else None) if x is not None]
                nxt = min([nxt, *due])
        horizon = now - self.retain_s
        old = [tid for tid, r in self._by_token.items() if r.closed_at is not None and forget_after(r) < horizon]
        for tid in old:
            r = self._by_token.pop(tid)
            self._by_request.pop(r.request_id, None)
        closed = [forget_after(r) + self.retain_s for r in self._by_token.values() if r.closed_at is not None]
        self._next_deadline = min([nxt, *closed])
        return released

    def _vector(self, r: Resources, exclusive_ok: bool = True) -> np.ndarray:
        """The calendar amount for ``r``; an exclusive request books the whole resource."""
        return np.array(self._amounts(r, exclusive_ok), dtype=float)

    def _amounts(self, r: Resources, exclusive_ok: bool = True) -> tuple[float, ...]:
        """:meth:`_vector` as a tuple of floats (what the calendar's check reads without numpy)."""
        global _LAST_AMOUNT
        if exclusive_ok and r.exclusive:
            return tuple(self.calendar.capacity.tolist())
        last = _LAST_AMOUNT
        if last[0] is r and last[1] == self.dims:  # (a batch's placements share one amount: read it once)
            return last[2]
        vals = r.amounts(self.dims)
        _LAST_AMOUNT = (r, self.dims, vals)  # (the amount is held with it: its id is never taken for another's)
        return vals

    def _capacity_refusal(self, fit: str, r: Resources, start: float, end: float | None) -> Refusal:
        amount = self._vector(r)
        want = ", ".join(f"{d}={attr_num(v, d)}" for d, v in zip(self.dims, amount) if v)
        if fit == "total":
            cap = ", ".join(f"{d}={attr_num(v, d)}" for d, v in zip(self.dims, self.calendar.capacity))
            return self._refuse(codes.CAPACITY_TOTAL, f"asks {want or 'nothing'}{' (exclusive)' if r.exclusive else ''}; capacity is {cap}")
        if fit == "capacity":
            free = ", ".join(f"{d}={attr_num(v, d)}" for d, v in zip(self.dims, self.calendar.free_at(start)))
            return self._refuse(codes.CAPACITY, f"asks {want}{' (exclusive)' if r.exclusive else ''}; free at start: {free}")
        nxt = self.calendar.earliest_fit(amount, None if end is None else end - start, start)
        hint = f"; earliest fit at {nxt:.0f}" if nxt is not None else ""
        return self._refuse(codes.CALENDAR_BUSY, f"asks {want} until {'forever' if end is None else f'{end:.0f}'}, "
                            f"but a reservation starting before then needs it{hint}")

    def _refuse(self, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=self.name)


_LAST_AMOUNT: tuple[object, tuple[str, ...], tuple[float, ...]] = ((), (), ())
"""The last amount read (frozen: an amount's numbers never change), the dimensions read and its numbers.
One, not a table by identity: a table kept a model for every request a long-lived resource met
(4,096 of them, most of the heap of a Scheduler after 10,000 finished requests)."""
