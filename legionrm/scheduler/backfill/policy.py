"""Which waiting requests a scheduling pass tries, and what they must not delay.

One pass walks the pending requests in the queue's order (the site's order,
or submission order; see :class:`Backfill`) and, by the policy:

- ``greedy``: tries every request that fits now, whatever waits before it;
- ``fcfs``: strict first come, first served: the first request that cannot
  start ends the pass, so it blocks everything behind it;
- ``easy``: EASY backfilling (Lifka; Mu'alem and Feitelson).  Each of the
  first ``backfill_depth`` requests that cannot start gets a reserved start
  (its shadow time, :meth:`Profile.reserve`) and a :class:`Hold` on the cpus
  it will take then; a later request is tried only when it fits now within
  the holds: it ends by the reserved start, or it uses only cpus that will
  still be spare then.  After every start the reservations are computed
  again from what now runs, so they never move later.

A fresh submission goes through :meth:`Backfill.gate`: it is tried at once
only if the pass would try it there (nothing it would delay, nothing strict
order puts before it), else it waits for the next pass.

Cpus of requests that cannot fit now are never planned (no attempt is
spent on them); the planner gets the holds and keeps every placement within
them, and one more for what this Scheduler started since the hosts last
reported (:meth:`Profile.unreported`), so a pass never plans two requests
onto the same free cpus.  Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from legionrm.models import SchedulingRequest
from legionrm.scheduler.backfill.profile import Demand, Profile, usage_of
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.requests import Entry

Mode = Literal["greedy", "fcfs", "easy"]

Attempt = Callable[[Entry, Sequence[Hold]], "bool | None"]
"""Tries one request with the holds it must keep: True started, False not
now, None not tried (another attempt holds it)."""


def outside(request: SchedulingRequest) -> bool:
    """Requests the pass rules leave alone: one with a start of its own (an
    advance reservation, planned over its window) or with nothing to place
    (it only activates objects).  They are tried as they come."""
    return request.start is not None or not request.objects


def with_walltime(request: SchedulingRequest, default_s: float | None) -> SchedulingRequest:
    """``request`` with ``default_s`` as the walltime of every object request
    that gives none (unchanged without a default, or when all give one)."""
    if default_s is None or all(o.walltime_s is not None for o in request.objects):
        return request
    return request.model_copy(update={"objects": tuple(
        o if o.walltime_s is not None else o.model_copy(update={"walltime_s": default_s}) for o in request.objects)})


def demand_of(request: SchedulingRequest) -> Demand:
    """``(count, cpus)`` per object request."""
    return tuple((o.count, o.cpus) for o in request.objects)


def walltime_of(request: SchedulingRequest) -> float | None:
    """How long the request holds its cpus: its longest walltime (None: one of its objects has none)."""
    walls = [o.walltime_s for o in request.objects]
    return None if not walls or any(w is None for w in walls) else max(w for w in walls if w is not None)


@dataclass
class Reserved:
    """A blocked request's reserved start (None: no known end frees enough for it)."""

    entry: Entry
    start: float | None


class Backfill:
    """The pass rules of one queue (see the module).  ``profile`` builds the
    cpus-over-time view of the hosts for one pass."""

    def __init__(self, mode: Mode = "easy", depth: int = 1, *, profile: Callable[[], Profile]) -> None:
        self.mode = mode
        self.depth = depth if mode == "easy" else 0
        self._profile = profile
        self.reserved: dict[str, float] = {}
        """Each blocked top request's reserved start, by request id, as the last pass left them."""

    def walk(self, order: Sequence[Entry], attempt: Attempt, skip: Callable[[Entry], bool] | None = None) -> int:
        """One pass over ``order`` (see the module); returns how many started.
        A request ``skip`` says True for (over a limit of its QoS) is passed
        over: never tried, never reserved for, never blocking the pass."""
        if not order:
            self.reserved = {}
            return 0
        base = self._profile()
        blocked: list[Entry] = []
        holds, reserved = self._holds(base, blocked)
        started = 0
        for entry in order:
            if entry.state != "pending" or (skip is not None and skip(entry)):
                continue
            request = entry.request
            fits = outside(request) or base.fits_now(demand_of(request), walltime_of(request), holds)
            outcome = attempt(entry, (*holds, *base.unreported())) if fits else False
            if outcome:
                started += 1
                base.add(usage_of(entry, base))
                holds, reserved = self._holds(base, blocked)  # the reservations again, from what now runs
                continue
            if outcome is None:
                continue
            if outside(request):
                continue
            if self.mode == "fcfs":
                break
            if len(blocked) < self.depth:
                blocked.append(entry)
                holds, reserved = self._holds(base, blocked)
        self.reserved = {r.entry.id: r.start for r in reserved if r.start is not None}
        return started

    def gate(self, entry: Entry, order: Sequence[Entry]) -> tuple[Hold, ...] | None:
        """The holds a fresh submission ``entry`` must keep if tried now, or
        None when it must wait for the next pass (strict order puts a waiting
        request before it, or it cannot fit now within the reservations of
        those before it)."""
        if outside(entry.request):
            return ()
        pos = next((i for i, e in enumerate(order) if e is entry), len(order))
        ahead = [e for e in order[:pos] if e.state == "pending" and e is not entry]
        if self.mode == "greedy" or not ahead:
            return self._profile().unreported() if ahead else ()
        if self.mode == "fcfs":
            return None
        base = self._profile()
        blocked = [e for e in ahead if not outside(e.request)
                   and not base.fits_now(demand_of(e.request), walltime_of(e.request))][:self.depth]
        holds, _ = self._holds(base, blocked)
        if not base.fits_now(demand_of(entry.request), walltime_of(entry.request), holds):
            return None
        return (*holds, *base.unreported())

    def _holds(self, base: Profile, blocked: Sequence[Entry]) -> tuple[list[Hold], list[Reserved]]:
        """The reservations of ``blocked``, in order, over a copy of ``base``."""
        if not blocked:
            return [], []
        p = base.copy()
        holds, reserved = [], []
        for entry in blocked:
            wall = walltime_of(entry.request)
            found = p.reserve(demand_of(entry.request), wall)
            if found is None:
                reserved.append(Reserved(entry, None))
                continue
            start, take = found
            end = start + wall if wall is not None else float("inf")
            holds.append(p.holding(entry.id, start, take, end))
            reserved.append(Reserved(entry, start))
        return holds, reserved
