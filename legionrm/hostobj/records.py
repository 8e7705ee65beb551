"""The records a resource keeps and shows, and how its public calls lock.

:class:`Reservation` never leaves the resource: it holds the signed token,
the request it answered, its status and who holds the booking.  :func:`public`
is the locking discipline of every public method of a
:class:`~legionrm.hostobj.resource.ResourceObject`: take the lock, sweep what
the resource's own clock says is due, then run.  :class:`Presence` is the
record a resource shows the Collection: it joins with it, keeps it fresh
with heartbeats and leaves.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Literal, TypeVar

from legionrm.heartbeat import DEGRADED, MAX_STEPS, beat
from legionrm.hostobj.policies import owner_attributes
from legionrm.models import (
    AttrValue,
    HeldReservation,
    InstanceRef,
    ReservationRequest,
    ReservationToken,
    ResourceAudit,
    ResourceRecord,
)

Status = Literal["active", "used", "cancelled", "expired", "ended"]


@dataclass(slots=True)
class Reservation:
    """The resource's own record behind one token (never leaves the resource).

    It keeps of the request it answered only what the token does not say (the
    token carries its holder, amount, vault and reusability, and its issuer is
    the resource asked): :attr:`request` is that request again, equal to it.
    One record per grant lives as long as the resource remembers it, so it is
    kept small: no model beside the token, and its holders a tuple."""

    token: ReservationToken
    request_id: str
    start: float | None  # the request's start, duration and timeout, as asked
    duration_s: float | None
    timeout_s: float
    attestation: dict[str, Any] | None
    status: Status = "active"
    uses: int = 0
    holders: tuple[str, ...] = ()  # instance ids (or vault uses) holding the booking, in the order they came
    closed_at: float | None = None  # when the booking was released

    @classmethod
    def of(cls, token: ReservationToken, request: ReservationRequest, **state: Any) -> "Reservation":
        """The record of ``token``, granted for ``request`` (whose holder, amount, vault and
        reusability the token carries, and whose resource issued it); ``state``: its status,
        uses, holders."""
        return cls(token, request.request_id, request.start, request.duration_s, request.timeout_s,
                   request.attestation, **state)

    @property
    def request(self) -> ReservationRequest:
        """The request this reservation answered (made again: equal to the one granted)."""
        t = self.token
        return ReservationRequest.trusted(
            request_id=self.request_id, resource=t.issuer, holder=t.holder, resources=t.resources, vault=t.vault,
            start=self.start, duration_s=self.duration_s, timeout_s=self.timeout_s, reusable=t.reusable,
            attestation=self.attestation)

    def hold(self, holder_id: str) -> None:
        """``holder_id`` holds the booking too (once)."""
        if holder_id not in self.holders:
            self.holders = (*self.holders, holder_id)

    def let_go(self, holder_id: str) -> None:
        """``holder_id`` no longer holds the booking (idempotent)."""
        if holder_id in self.holders:
            self.holders = tuple(h for h in self.holders if h != holder_id)


F = TypeVar("F", bound=Callable[..., Any])


def public(fn: F) -> F:
    """Take the lock, read the resource's time and sweep expired reservations before the call.

    The time read is the call's time (``self._now``): every check of the call
    (a grant's start and expiry, a token's validity, an instance's start)
    reads it, so one call sees one time and the clock is read once per call.

    Only the outermost call sweeps: a policy asking ``host.load()`` from inside
    ``start_object`` must not expire the very reservation being started between
    its validation and its use."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._depth:  # (a call from inside a public call: no sweep)
                return fn(self, *args, **kwargs)
            self._depth = 1
            try:
                # the call's time, what its checks read, the clock read once: now(), its lock held already
                now = float(self._clock())
                if now > self._seen:
                    self._seen = now
                now = self._now = self._seen
                if now >= self._next_deadline:  # (what _sweep checks first: nothing is due before it)
                    self._sweep(now)
                return fn(self, *args, **kwargs)
            finally:
                self._depth = 0

    return wrapper  # type: ignore[return-value]


def forget_after(res: Reservation) -> float:
    """When a closed record may start to be forgotten: once it is closed and
    its token's own expiry has passed (a cancelled token is then refused as
    expired from its signed fields, never taken for unknown while still valid)."""
    assert res.closed_at is not None
    return max(res.closed_at, res.token.expires_at)


__all__ = ["Reservation", "Status", "forget_after", "public"]


def audit_view(name: str, now: float, calendar: Any, open_: dict[str, Reservation],
               tokens: list[ReservationToken], instances: tuple[InstanceRef, ...] | None) -> ResourceAudit:
    """A resource's :class:`ResourceAudit`: its calendar's use and capacity at
    ``now``, its running instances (``None``: a vault) and its open
    reservations with who holds each."""
    return ResourceAudit(
        name=name, kind="vault" if instances is None else "host", now=now,
        used=tuple(float(x) for x in calendar.usage_at(now)), capacity=tuple(float(x) for x in calendar.capacity),
        instances=instances or (),
        reservations=tuple(HeldReservation(token_id=t.token_id, user=t.holder.user, expires_at=t.expires_at,
                                           issuer=t.holder.enactor, holders=tuple(sorted(open_[t.token_id].holders))) for t in tokens),
    )


class Presence:
    """What a :class:`~legionrm.hostobj.resource.ResourceObject` shows the Collection, as
    its methods (the resource's base class, kept in this module; ``self`` is always a
    ResourceObject, whose calendar, policy and sink these read)."""

    @public
    def dynamic_attributes(self) -> dict[str, AttrValue]:
        """What changes: free capacity now, load, counts, calendar state, plus owner attributes."""
        now = self.now()
        free = self.calendar.free_at(now)
        attrs: dict[str, AttrValue] = {f"free_{d}": attr_num(v, d) for d, v in zip(self.dims, free)}
        attrs["load"] = round(self.load(), 4)
        attrs["reservations"] = sum(1 for r in self._open.values() if r.status == "active" and r.uses == 0)
        attrs["state"] = self.state()
        nxt = self.calendar.next_event_time(now)
        if nxt is not None:  # absent = nothing booked ahead (the scheduler's calendar filter reads it)
            attrs["next_event"] = float(nxt)
        attrs.update(self._calendar_out.attrs(self.dims, *self.calendar.steps(now, MAX_STEPS)))  # the planner's, ahead
        attrs["owner_policies"] = self._policy_count()
        if self.policy is not None:
            attrs["policy"] = self.policy.name
        owned, error = owner_attributes(self.attributes)
        for key, value in owned.items():  # owners add attributes; they cannot restate capacity or load
            attrs.setdefault(key, value)
        if error is not None:
            attrs["owner_attributes_error"] = error
        if self.degraded:
            attrs[DEGRADED] = self.degraded
        return attrs

    def _policy_count(self) -> int:
        """How many owner rules may veto here: the attached policy's parts, plus
        one when an owner's subclass overrides a hook (the planner ranks such hosts riskier)."""
        n = len(getattr(self.policy, "policies", ())) or (1 if self.policy is not None else 0)
        for hook in ("admit_reservation", "admit_start"):
            owner = next((c for c in type(self).__mro__ if hook in vars(c)), None)
            if owner is not None and not owner.__module__.startswith("legionrm.hostobj."):
                return n + 1
        return n

    @public
    def record(self) -> ResourceRecord:
        """The record this resource joins the collection with."""
        attrs: dict[str, AttrValue] = dict(self.static_attributes)
        attrs.update(self.dynamic_attributes())
        for d, v in zip(self.dims, self.calendar.capacity):  # capacity as configured, never as an owner hook restates it
            attrs[d] = self.static_attributes.get(d, attr_num(v, d))
        access = self.policy.restrict(self.access) if self.policy else self.access
        return ResourceRecord(
            name=self.name, kind=self.kind, nodepool=self.nodepool, attributes=attrs, access=access, last_heartbeat=self.now()
        )

    def join(self) -> ResourceRecord:
        """Join the collection (on start).  Idempotent: joining again replaces the record."""
        rec = self.record()
        self.sink.join(rec)
        self.joined = True
        return rec

    def heartbeat(self) -> dict[str, AttrValue]:
        """Push the dynamic attributes (load included) to the collection; returns them."""
        attrs = self.dynamic_attributes()
        if not self.joined:
            self.join()
        else:
            self.sink.update(self.name, beat(attrs))
        return attrs

    def leave(self) -> None:
        """Leave the collection (on stop).  Idempotent."""
        if self.joined:
            self.sink.leave(self.name)
            self.joined = False


def attr_num(v: float, dim: str) -> AttrValue:
    """Attribute values: gpus are counts, the rest floats rounded for display."""
    return int(round(v)) if dim == "gpus" else round(float(v), 6)
