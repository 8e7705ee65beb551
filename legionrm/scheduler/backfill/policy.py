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
  again from what now runs, so they never move later (or kept, when the
  start provably leaves the one reservation as it was: :mod:`.top`).

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

import threading
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple, cast

import numpy as np

from legionrm.models import SchedulingRequest
from legionrm.scheduler.backfill.fits import Fits
from legionrm.scheduler.backfill.memo import Found, HoldsMemo, Reserved
from legionrm.scheduler.backfill.profile import EPS, INF, Demand, Profile, Shadow, Usage, need
from legionrm.scheduler.backfill.running import usage_of
from legionrm.scheduler.backfill.top import Top
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.priority.slots import Ordered, Slots
from legionrm.scheduler.requests import Entry

Mode = Literal["greedy", "fcfs", "easy"]


class _Blocked(NamedTuple):
    """A blocked request as a pass left it (its reservation worked out later: :attr:`Backfill.reserved`)."""

    id: str
    request: SchedulingRequest


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


class Backfill:
    """The pass rules of one queue (see the module).  ``profile`` builds the
    cpus-over-time view of the hosts for one pass; ``usage`` says what a
    request the pass started holds (default :func:`usage_of`, from its
    running instances).

    A pass asks what fits once per shape and state (:class:`Fits`), reads
    each request's shape once per request object (kept between passes by
    the request's slot, the order's when it is an :class:`Ordered`), passes
    by requests whose shape is known not to fit without reading them, keeps
    the top reservation through a start that leaves it (:class:`Top`), and
    stops trying once no later request can fit (all
    reservations made, none of the rest fits in the cpus free in all): the
    same starts and reservations as :class:`ReferenceBackfill`
    (:mod:`.reference`), which asks every request afresh."""

    def __init__(self, mode: Mode = "easy", depth: int = 1, *, profile: Callable[[], Profile],
                 usage: Callable[[Entry, Profile], Usage] = usage_of) -> None:
        self.mode = mode
        self.depth = depth if mode == "easy" else 0
        self._profile = profile
        self._usage = usage
        self._own = Slots()  # the requests' slots when the order comes without them (a plain list)
        self._table: tuple[Slots, int] | None = None  # whose slots (and which epoch) the shape numbers are kept by
        self._by_slot = np.empty(0, np.int64)  # each slot's shape number (-1: not read yet)
        self._numbers: dict[tuple[Demand, float | None, bool], int] = {}
        self._shapes: list[tuple[Demand, float | None]] = []  # each number's demand and walltime
        self._need: list[float] = []
        self._outside: list[bool] = []
        self._need_col: np.ndarray | None = None  # each shape's need, -1 when outside (None: shapes added since)
        self._reserved: dict[str, float] = {}
        self.blocked: tuple[str, ...] = ()
        """The last pass's blocked top requests, by id (those :attr:`reserved` gives a start of, and any none
        was found for), read without working their reservations out."""
        # the last pass's profile and blocked requests (id, request) when it did not work their reservations out
        self._unfound: tuple[Profile, list[_Blocked]] | None = None
        self._reserved_lock = threading.Lock()
        self._memo = HoldsMemo()  # the last reservations found on an unchanged kept profile

    @property
    def reserved(self) -> dict[str, float]:
        """Each blocked top request's reserved start, by request id, as the last pass left them (worked
        out on first reading when the pass did not need them: every try after the block failed whatever
        the holds, :meth:`Fits.surely_not`)."""
        with self._reserved_lock:
            if self._unfound is not None:
                base, blocked = self._unfound
                _, reserved, _ = self._search(base, cast(list[Entry], blocked), None)  # (an id and a request: all it reads)
                self._reserved, self._unfound = {r.entry.id: r.start for r in reserved if r.start is not None}, None
            return self._reserved

    @reserved.setter
    def reserved(self, value: dict[str, float]) -> None:
        with self._reserved_lock:
            self._reserved, self._unfound = value, None

    def walk(self, order: Sequence[Entry], attempt: Attempt, skip: Callable[[Entry], bool] | None = None) -> int:
        """One pass over ``order`` (see the module); returns how many started.
        A request ``skip`` says True for (over a limit of its QoS) is passed
        over: never tried, never reserved for, never blocking the pass."""
        self.blocked = ()
        if not order:
            self.reserved = {}
            return 0
        if self.mode == "fcfs":
            return self._strict(order, attempt, skip)
        keys = self._numbers_of(order)
        hints: dict[str, tuple[float, float]] = {}  # the top reservation's (first moment, start), this pass
        shapes, outs = self._shapes, self._outside
        # the least cpus any request from position i on needs (one the rules leave alone: it may always start)
        needs = self._needs()[keys]
        least = np.append(np.minimum.accumulate(needs[::-1])[::-1], INF)  # (non-decreasing: searched, not read)
        base = self._profile()
        blocked: list[Entry] = []
        holds, reserved, top = self._holds(base, blocked, hints)
        fits = Fits(base, holds)
        known = [0] * len(shapes)  # fits' answers by shape number in this state: 0 not asked, 1 fits, 2 does not
        # the holds of ``blocked`` are not worked out in this state yet: worked out only when a try needs them
        # (a shape that fails whatever the holds, Fits.surely_not, does not); ``holds`` and ``top`` are stale
        due = False
        # without a skip to show every request to, a request whose shape is known not to fit is passed by
        # unread once the reservations are all made (it would not be tried, nor reserved for)
        fast = skip is None and self.mode != "fcfs"
        passing = fast and not self.depth
        started, trying = 0, True
        # least[i + 1] > all that is free (nothing after i fits) from position stop on (least never falls)
        stop = int(least.searchsorted(float(base.free.sum()) + EPS, side="right")) - 1
        for i, k in enumerate(keys.tolist()):
            if passing and known[k] == 2:
                continue
            entry = order[i]
            if entry.state != "pending" or (skip is not None and skip(entry)):
                continue
            if not trying:  # (skip still sees every request: it records why one over a limit waits)
                if self.mode == "fcfs" or skip is None:
                    break  # fcfs: this one cannot start, it blocks the rest; else nothing is left to do
                continue
            if not outs[k] and not known[k] and due and fits.surely_not(shapes[k][0]):
                known[k] = 2  # (whatever the holds: the answer holds once they are worked out too)
            if due and (outs[k] or not known[k]):
                holds, reserved, top = self._holds(base, blocked, hints)
                fits.changed(holds)
                due = False
            if outs[k]:
                ok = True
            else:
                if not known[k]:
                    known[k] = 1 if fits(*shapes[k]) else 2
                ok = known[k] == 1
            outcome = attempt(entry, (*holds, *base.unreported())) if ok else False
            if outcome:
                started += 1
                usage = self._usage(entry, base)
                base.add(usage)
                if top is not None and top.keeps(usage, base):  # the start provably leaves the reservation
                    holds = [top.hold]
                else:  # the reservations again, from what now runs (once a try needs them)
                    due = bool(blocked)
                fits.changed(holds)
                known = [0] * len(shapes)
                stop = int(least.searchsorted(float(base.free.sum()) + EPS, side="right")) - 1
            elif outcome is None or outs[k]:
                continue
            elif self.mode == "fcfs":
                break
            elif len(blocked) < self.depth:
                blocked.append(entry)
                due = True
                known = [0] * len(shapes)
                passing = fast and len(blocked) >= self.depth
            if i >= stop and len(blocked) >= self.depth:
                trying = False  # nothing after this fits in all that is free (the holds only take more)
        self.blocked = tuple(e.id for e in blocked)
        if due:  # worked out when read (most passes' are never read)
            with self._reserved_lock:
                self._unfound = base, [_Blocked(e.id, e.request) for e in blocked]
        else:
            self.reserved = {r.entry.id: r.start for r in reserved if r.start is not None}
        return started

    def _strict(self, order: Sequence[Entry], attempt: Attempt, skip: Callable[[Entry], bool] | None) -> int:
        """:meth:`walk` under ``fcfs``: the same tries and starts, but the shapes of the requests
        before the first start are read one by one as the walk reaches them (most passes stop at
        the first request, which cannot start), and the rest's only once one starts (to stop the
        pass when no later request can fit in all that is free, as :meth:`walk` does)."""
        self.reserved = {}
        base = self._profile()
        fits = Fits(base, [])
        least: np.ndarray | None = None  # as in walk, read at the first start
        started, trying = 0, True
        for i, entry in enumerate(order):
            if entry.state != "pending" or (skip is not None and skip(entry)):
                continue
            if not trying:
                break
            request = entry.request
            out = outside(request)
            ok = out or fits(demand_of(request), walltime_of(request))
            outcome = attempt(entry, base.unreported()) if ok else False
            if outcome:
                started += 1
                base.add(self._usage(entry, base))
                fits.changed([])
                if least is None:
                    keys = self._numbers_of(order)
                    needs = self._needs()[keys]
                    least = np.append(np.minimum.accumulate(needs[::-1])[::-1], INF)
                trying = i < int(least.searchsorted(float(base.free.sum()) + EPS, side="right")) - 1
            elif outcome is None or out:
                continue
            else:
                break
        return started

    def _numbers_of(self, order: Sequence[Entry]) -> np.ndarray:
        """Each request's shape number (the same for the same demand,
        walltime and :func:`outside`), read once per request object and kept
        by its slot: the order's (:class:`Ordered`), else this pass rule's own."""
        if isinstance(order, Ordered) and order.valid():
            table, slots = order.table, order.slots
        else:
            table, slots = self._own, self._own.find(order)
            if table.crowded(len(order)):  # most requests numbered are gone: number those left afresh
                moved = np.full(len(table.requests), -1, np.int64)
                old = table.renew(slots.tolist())
                moved[old] = np.arange(len(old))
                slots = moved[slots]
        if self._table != (table, table.epoch):  # other slots: the shapes are read again (and numbered anew)
            self._table, self._by_slot = (table, table.epoch), np.empty(0, np.int64)
            self._numbers, self._shapes, self._need, self._outside = {}, [], [], []
            self._need_col = None
        if len(self._by_slot) < len(table.requests):
            self._by_slot = np.concatenate([self._by_slot, np.full(len(table.requests) - len(self._by_slot), -1)])
        keys = self._by_slot[slots]
        for i in (keys < 0).nonzero()[0].tolist():
            keys[i] = self._by_slot[slots[i]] = self._number(order[i].request)
        return keys

    def _number(self, request: SchedulingRequest) -> int:
        demand, walltime, out = demand_of(request), walltime_of(request), outside(request)
        key = self._numbers.get((demand, walltime, out))
        if key is None:
            key = self._numbers[demand, walltime, out] = len(self._shapes)
            self._shapes.append((demand, walltime))
            self._need.append(need(demand))
            self._outside.append(out)
            self._need_col = None
        return key

    def _needs(self) -> np.ndarray:
        """Each shape number's cpus (-1 for one the rules leave alone: it may always start), kept until a shape is added."""
        if self._need_col is None:
            self._need_col = np.where(np.array(self._outside, bool), -1.0, np.array(self._need, float))
        return self._need_col

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
        holds, _, _ = self._holds(base, blocked)
        if not base.fits_now(demand_of(entry.request), walltime_of(entry.request), holds):
            return None
        return (*holds, *base.unreported())

    def _reserve(self, profile: Profile, entry: Entry, hints: dict[str, tuple[float, float]] | None
                 ) -> Shadow | None:
        """``entry``'s shadow time and cpus on ``profile``.  ``hints`` (for the
        top blocked request only, on the pass's own profile, which only loses
        cpus as the pass goes): its last answer narrows the next search."""
        found = profile.shadow(demand_of(entry.request), walltime_of(entry.request),
                               *(hints.get(entry.id, (-INF, INF)) if hints is not None else (-INF, INF)))
        if found is not None and hints is not None:
            hints[entry.id] = (found.first, found.start)
        return found

    def _holds(self, base: Profile, blocked: Sequence[Entry], hints: dict[str, tuple[float, float]] | None = None
               ) -> tuple[list[Hold], list[Reserved], Top | None]:
        """The reservations of ``blocked``, in order, over a copy of ``base``
        (``hints``: the pass's, see :meth:`_reserve`), and the top one as a
        :class:`Top` when it is the only one (a later start may keep it)."""
        if not blocked:
            return [], [], None
        again = self._memo.again(base, blocked, hints)
        if again is not None:
            return again
        found = self._search(base, blocked, hints)
        self._memo.keep(base, blocked, hints, found)
        return found

    def _search(self, base: Profile, blocked: Sequence[Entry], hints: dict[str, tuple[float, float]] | None) -> Found:
        """:meth:`_holds` without the memo (nothing of this object's changed: a reading of :attr:`reserved`)."""
        p = base.copy()
        holds, reserved, top = [], [], None
        for entry in blocked:
            wall = walltime_of(entry.request)
            found = self._reserve(p, entry, hints if entry is blocked[0] else None)
            if found is None:
                reserved.append(Reserved(entry, None))
                continue
            end = found.start + wall if wall is not None else float("inf")
            holds.append(p.holding(entry.id, found.start, found.take, end))
            reserved.append(Reserved(entry, found.start))
            if hints is not None and len(blocked) == 1:
                top = Top.of(found, holds[-1], demand_of(entry.request))
        return holds, reserved, top
