"""The record a resource keeps behind each token, and how its public calls lock.

:class:`Reservation` never leaves the resource: it holds the signed token,
the request it answered, its status and who holds the booking.  :func:`public`
is the locking discipline of every public method of a
:class:`~legionrm.hostobj.resource.ResourceObject`: take the lock, sweep what
the resource's own clock says is due, then run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, TypeVar

from legionrm.models import (
    HeldReservation,
    InstanceRef,
    ReservationRequest,
    ReservationToken,
    ResourceAudit,
)

Status = Literal["active", "used", "cancelled", "expired", "ended"]


@dataclass(slots=True)
class Reservation:
    """The resource's own record behind one token (never leaves the resource)."""

    token: ReservationToken
    request: ReservationRequest
    status: Status = "active"
    uses: int = 0
    holders: set[str] = field(default_factory=set)  # instance ids (or vault uses) holding the booking
    closed_at: float | None = None  # when the booking was released


F = TypeVar("F", bound=Callable[..., Any])


def public(fn: F) -> F:
    """Take the lock and sweep expired reservations before the call.

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
                now = self.now()
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
