"""What is on each host over time: a flat calendar of intervals, and views of it.

The node table is static; this is the part that changes as work starts and
ends.  Every holding is an interval ``[start, end)`` on one host with the
amounts it assigns and whether it holds the host exclusively.  ``[[busy]]``
entries of a scenario, a host calendar adapter and jobs placed in this cycle
all land here through :meth:`HostState.occupy`.

A :class:`StateView` is the state at one instant as arrays over hosts: jobs
running, exclusive holds, assigned amounts, the time of the next calendar
event after the instant, and the bucket pool (free / busy-later / busy).  The
live view (at ``now``) is kept current incrementally; :meth:`HostState.at`
computes a view at another time (for the earliest-start search).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable, Mapping, cast

import numpy as np

from legionrm.scheduler.placement.nodes import NodeTable

FREE, BUSY_LATER, BUSY = 0, 1, 2
"""Bucket pools: free with no future event; free now with a future event; in use."""

JOB_INFINITY = 60.0 * 60 * 24 * 365 * 5
"""A job with no walltime lasts 5 years (PBS), so it never backfills before an event."""


@dataclass
class StateView:
    """The hosts at instant ``now``.  Arrays are indexed by node index; treat as read-only."""

    now: float
    njobs: np.ndarray
    excl: np.ndarray
    assigned: dict[str, np.ndarray]
    next_event: np.ndarray
    pool: np.ndarray
    table: NodeTable

    def avail(self, resource: str) -> np.ndarray:
        """Free amount of a consumable per host (total minus assigned)."""
        a = self.assigned.get(resource)
        t = self.table.total(resource)
        return t if a is None else t - a

    def avail_at(self, resource: str, hosts: np.ndarray) -> np.ndarray:
        """Free amount of a consumable on ``hosts`` only (cheaper than ``avail(r)[hosts]``)."""
        a = self.assigned.get(resource)
        t = self.table.total(resource)[hosts]
        return t if a is None else t - a[hosts]

    def state_name(self, i: int) -> str:
        """PBS-like node state text for host ``i``."""
        if self.excl[i]:
            return "job-exclusive"
        if self.njobs[i] and self.table.columns.get("ncpus") is not None and self.avail("ncpus")[i] <= 0:
            return "job-busy"
        return "free"


Listener = Callable[[np.ndarray, StateView], None]


class HostState:
    """Intervals on hosts plus the live view at ``now``.

    ``occupy`` and ``release`` are the only mutators; each notifies listeners
    (the bucket set) with the hosts whose pool may have changed, so buckets
    are kept current and never rebuilt per request.
    """

    def __init__(self, table: NodeTable, now: float = 0.0) -> None:
        self.table = table
        self.now = float(now)
        self._res = table.consumables()
        self._totals = {r: table.total(r) for r in self._res}  # (the table is static)
        self._h: list[int] = []
        self._s: list[float] = []
        self._e: list[float] = []
        self._x: list[bool] = []
        self._a: dict[str, list[float]] = {r: [] for r in self._res}
        self._alive: list[bool] = []
        self._cache: tuple[np.ndarray, ...] | None = None
        self._listeners: list[Listener] = []
        self._before: list[Listener] = []
        self._views: dict[float, StateView] = {}
        self.version = 0
        self._live = self._compute(self.now)

    @cached_property
    def set_sums(self) -> SetSums:
        """The sums over host sets on this state, one shared by every placer on it (made when first asked)."""
        return SetSums(self)

    # -- listeners -----------------------------------------------------------

    def subscribe(self, fn: Listener) -> None:
        """Call ``fn(hosts, live_view)`` after every change touching ``hosts``."""
        self._listeners.append(fn)

    def subscribe_before(self, fn: Listener) -> None:
        """Call ``fn(hosts, live_view)`` just before a change touching ``hosts``."""
        self._before.append(fn)

    def _pre(self, hosts: np.ndarray) -> None:
        for fn in self._before:
            fn(hosts, self._live)

    def _notify(self, hosts: np.ndarray) -> None:
        self.version += 1
        self._views.clear()
        for fn in self._listeners:
            fn(hosts, self._live)

    # -- mutation ------------------------------------------------------------

    def occupy(
        self,
        hosts: Iterable[int] | np.ndarray,
        start: float,
        end: float,
        *,
        exclusive: bool = True,
        amounts: Mapping[str, np.ndarray | float] | None = None,
    ) -> list[int]:
        """Record work on ``hosts`` over ``[start, end)``; returns a token for :meth:`release`.

        ``amounts`` maps a consumable to the amount per host (array aligned with
        ``hosts``, or one number); None means the whole host (all its totals).
        Not idempotent: each call adds holdings.
        """
        hs = np.asarray(list(hosts) if not isinstance(hosts, np.ndarray) else hosts, dtype=np.int64)
        if end <= start:
            return []
        if len(hs) == 1 and (amounts is None or not any(map(_ndim, amounts.values()))):
            return self._occupy_one(int(hs[0]), hs, float(start), float(end), bool(exclusive),
                                    cast("Mapping[str, float] | None", amounts))
        ids = list(range(len(self._h), len(self._h) + len(hs)))
        self._h.extend(hs.tolist())
        self._s.extend([float(start)] * len(hs))
        self._e.extend([float(end)] * len(hs))
        self._x.extend([bool(exclusive)] * len(hs))
        self._alive.extend([True] * len(hs))
        per: dict[str, list[float]] = {}  # each resource's amount per host, as recorded
        for r in self._res:
            if amounts is None:
                vals = self.table.total(r)[hs].tolist()
            else:
                v = amounts.get(r, 0.0)
                vals = np.asarray(v, dtype=np.float64).tolist() if _ndim(v) else [float(v)] * len(hs)
            per[r] = vals
            self._a[r].extend(vals)
        self._cache = None
        live = self._live
        touched = hs if len(hs) == 1 else np.unique(hs)
        self._pre(touched)
        if start <= self.now < end:
            if len(hs) == 1:  # one host: scalar updates (numpy's per-call cost dominates)
                i = int(hs[0])
                live.njobs[i] += 1
                if exclusive:
                    live.excl[i] = True
                for r in self._res:
                    if amounts is None or r in amounts:  # (the host's total, or the amount asked: recorded above)
                        live.assigned[r][i] += per[r][0]
            else:
                np.add.at(live.njobs, hs, 1)
                if exclusive:
                    live.excl[hs] = True
                for r in self._res:
                    if amounts is None:
                        np.add.at(live.assigned[r], hs, self.table.total(r)[hs])
                    elif r in amounts:
                        v = amounts[r]
                        np.add.at(live.assigned[r], hs, np.asarray(v, float) if _ndim(v) else float(v))
        elif start > self.now:
            np.minimum.at(live.next_event, hs, float(start))
        self._repool(hs)
        self._notify(touched)
        return ids

    def _occupy_one(
        self, i: int, hs: np.ndarray, start: float, end: float, exclusive: bool, amounts: Mapping[str, float] | None
    ) -> list[int]:
        """:meth:`occupy` of one host with one number per resource (a single-host
        job's start): the same records and live changes in plain Python, where
        numpy's per-call cost on one-element arrays would dominate."""
        ids = [len(self._h)]
        self._h.append(i)
        self._s.append(start)
        self._e.append(end)
        self._x.append(exclusive)
        self._alive.append(True)
        per: dict[str, float] = {}
        for r in self._res:
            v = per[r] = float(self._totals[r][i]) if amounts is None else float(amounts.get(r, 0.0))
            self._a[r].append(v)
        self._cache = None
        live = self._live
        self._pre(hs)
        if start <= self.now < end:
            live.njobs[i] += 1
            if exclusive:
                live.excl[i] = True
            for r in self._res:
                if amounts is None or r in amounts:  # (the host's total, or the amount asked: recorded above)
                    live.assigned[r][i] += per[r]
        elif start > self.now and start < live.next_event[i]:
            live.next_event[i] = start
        self._repool(hs)
        self._notify(hs)
        return ids

    def load_calendar(self, holdings: Mapping[str, Iterable[tuple[float, float]]], *, exclusive: bool = True) -> None:
        """Adapter for host calendars: ``{host name: [(start, end), ...]}`` of
        whole-host holdings (reservations, running work).  Unknown hosts are
        ignored (a calendar may know hosts this table does not place on)."""
        for name, spans in holdings.items():
            i = self.table.index.get(name)
            if i is None:
                continue
            for start, end in spans:
                self.occupy([i], float(start), float(end), exclusive=exclusive)

    def release(self, token: Iterable[int]) -> None:
        """Remove holdings made by :meth:`occupy` (work ended or was cancelled).
        Idempotent: releasing twice, or an unknown id, does nothing."""
        ids = [i for i in token if 0 <= i < len(self._alive) and self._alive[i]]
        if not ids:
            return
        for i in ids:
            self._alive[i] = False
        self._cache = None
        hosts = np.unique(np.asarray([self._h[i] for i in ids], dtype=np.int64))
        fresh = self._compute(self.now, hosts)
        self._pre(hosts)
        live = self._live
        live.njobs[hosts] = fresh.njobs[hosts]
        live.excl[hosts] = fresh.excl[hosts]
        live.next_event[hosts] = fresh.next_event[hosts]
        for r in self._res:
            live.assigned[r][hosts] = fresh.assigned[r][hosts]
        self._repool(hosts)
        self._notify(hosts)

    def advance(self, now: float) -> None:
        """Move the clock: recompute the live view from the calendar (all hosts)."""
        everything = np.arange(self.table.n)
        self._pre(everything)
        self.now = float(now)
        fresh = self._compute(self.now)
        live = self._live  # keep the same arrays: others hold references to them
        live.now = fresh.now
        for name in ("njobs", "excl", "next_event", "pool"):
            getattr(live, name)[:] = getattr(fresh, name)
        for r in self._res:
            live.assigned[r][:] = fresh.assigned[r]
        self._notify(everything)

    # -- views ---------------------------------------------------------------

    def live(self) -> StateView:
        """The view at ``now`` (kept current; do not mutate)."""
        return self._live

    def at(self, t: float) -> StateView:
        """The view at time ``t`` computed from the calendar (cached until the next change)."""
        t = float(t)
        v = self._views.get(t)
        if v is None:
            if len(self._views) > 64:
                self._views.clear()
            v = self._views[t] = self._compute(t)
        return v

    def event_times(self, after: float) -> np.ndarray:
        """Sorted distinct interval ends after ``after``: the times a waiting
        request could start (resources only come free when holdings end)."""
        h, s, e, x, alive, _ = self._arrays()
        ends = e[alive & (e > after)]
        return np.unique(ends)

    # -- internals -----------------------------------------------------------

    def _arrays(self) -> tuple[np.ndarray, ...]:
        if self._cache is None:
            amounts = np.array([self._a[r] for r in self._res], dtype=np.float64).reshape(len(self._res), len(self._h))
            self._cache = (
                np.asarray(self._h, dtype=np.int64),
                np.asarray(self._s, dtype=np.float64),
                np.asarray(self._e, dtype=np.float64),
                np.asarray(self._x, dtype=bool),
                np.asarray(self._alive, dtype=bool),
                amounts,
            )
        return self._cache

    def _compute(self, t: float, hosts: np.ndarray | None = None) -> StateView:
        n = self.table.n
        h, s, e, x, alive, amounts = self._arrays()
        sel = alive if hosts is None else alive & np.isin(h, hosts)
        cov = sel & (s <= t) & (e > t)
        njobs = np.bincount(h[cov], minlength=n).astype(np.int64)
        excl = np.zeros(n, bool)
        excl[h[cov & x]] = True
        assigned = {
            r: np.bincount(h[cov], weights=amounts[k][cov], minlength=n).astype(np.float64)
            for k, r in enumerate(self._res)
        }
        fut = sel & (s > t)
        nxt = np.full(n, math.inf)
        np.minimum.at(nxt, h[fut], s[fut])
        pool = np.where(njobs > 0, BUSY, np.where(np.isfinite(nxt), BUSY_LATER, FREE)).astype(np.int8)
        return StateView(t, njobs, excl, assigned, nxt, pool, self.table)

    def _repool(self, hosts: np.ndarray) -> None:
        live = self._live
        if len(hosts) == 1:
            i = int(hosts[0])
            live.pool[i] = BUSY if live.njobs[i] > 0 else (BUSY_LATER if live.next_event[i] < math.inf else FREE)
            return
        live.pool[hosts] = np.where(
            live.njobs[hosts] > 0, BUSY, np.where(np.isfinite(live.next_event[hosts]), BUSY_LATER, FREE)
        )


def _ndim(v: np.ndarray | float) -> int:
    """``np.ndim(v)``, without its call for a number or an array (the usual amounts)."""
    if isinstance(v, (int, float)):
        return 0
    return v.ndim if isinstance(v, np.ndarray) else int(np.ndim(v))


class SetSums:
    """Free-node counts and free amounts summed over fixed host sets (a queue's
    universe, a placement set), kept current through the state's hooks so the
    aggregate prefilter costs O(1) per request instead of O(hosts).

    Host sets are keyed by identity: pass the same (cached) array each time.
    Views other than the live one are summed directly (and cached per view).
    """

    def __init__(self, state: HostState) -> None:
        self.state = state
        self.table = state.table
        self._res = self.table.consumables()
        self._tot = [(r, self.table.total(r)) for r in self._res]  # (the table is static)
        self._cpu = self._res.index("ncpus") if "ncpus" in self._res else None
        self._scalar = self._cpu is not None or "ncpus" not in self.table.columns  # (_shift_one's rule holds)
        self._live: dict[int, list] = {}  # id -> [hosts, member mask, free count, {res: avail sum}]
        self._other: dict[tuple[int, int], tuple[StateView, np.ndarray, tuple[int, dict[str, float]]]] = {}
        self._totals: dict[tuple[int, str], tuple[np.ndarray, float]] = {}
        state.subscribe_before(lambda h, v: self._shift(h, v, -1))
        state.subscribe(lambda h, v: self._shift(h, v, +1))

    def free_flags(self, view: StateView, hosts: np.ndarray) -> np.ndarray:
        """Hosts in PBS state "free": not held exclusively and not fully used."""
        free = ~view.excl[hosts]
        if "ncpus" in self.table.columns:
            free &= (view.njobs[hosts] == 0) | (view.avail_at("ncpus", hosts) > 0)
        return free

    def _direct(self, view: StateView, hosts: np.ndarray) -> tuple[int, dict[str, float]]:
        return (
            int(np.count_nonzero(self.free_flags(view, hosts))),
            {r: float(view.avail_at(r, hosts).sum()) for r in self._res},
        )

    def _contrib(self, view: StateView, hosts: np.ndarray) -> tuple[int, dict[str, float]]:
        """Free-node count and free amounts of ``hosts``; scalar for a few hosts
        (one job's hosts), where numpy's per-call cost would dominate."""
        if len(hosts) > 8:
            return self._direct(view, hosts)
        has_cpu = "ncpus" in self.table.columns
        count = 0
        avail = dict.fromkeys(self._res, 0.0)
        totals = [(r, self.table.total(r), view.assigned[r]) for r in self._res]
        for i in hosts.tolist():
            free_amounts = {r: float(t[i]) - float(a[i]) for r, t, a in totals}
            for r, a in free_amounts.items():
                avail[r] += a
            if not view.excl[i] and (not has_cpu or view.njobs[i] == 0 or free_amounts["ncpus"] > 0):
                count += 1
        return count, avail

    def _shift(self, hosts: np.ndarray, view: StateView, sign: int) -> None:
        if len(hosts) == 1 and self._scalar:
            self._shift_one(int(hosts[0]), view, sign)
            return
        for entry in self._live.values():
            h = hosts[entry[1][hosts]]
            if not len(h):
                continue
            count, avail = self._contrib(view, h)
            entry[2] += sign * count
            for r in self._res:
                entry[3][r] += sign * avail[r]

    def _shift_one(self, i: int, view: StateView, sign: int) -> None:
        """:meth:`_shift` of one host (one job's host): :meth:`_contrib` worked
        out once in plain Python for every set holding it, no numpy mask per set."""
        free_amounts: list[float] | None = None
        free = 0
        for entry in self._live.values():
            if not entry[1][i]:
                continue
            if free_amounts is None:
                # (0.0 + x: the sum _contrib starts from, so a -0.0 adds as it does there)
                free_amounts = [0.0 + (float(t[i]) - float(view.assigned[r][i])) for r, t in self._tot]
                free = int(not view.excl[i] and (self._cpu is None or view.njobs[i] == 0 or free_amounts[self._cpu] > 0))
            entry[2] += sign * free
            sums = entry[3]
            for (r, _), a in zip(self._tot, free_amounts):
                sums[r] += sign * a

    def free_and_avail(self, hosts: np.ndarray, view: StateView) -> tuple[int, dict[str, float]]:
        """(free-node count, free amount per consumable) over ``hosts`` in ``view``."""
        if view is self.state.live():
            entry = self._live.get(id(hosts))
            if entry is None or entry[0] is not hosts:
                mask = np.zeros(self.table.n, bool)
                mask[hosts] = True
                count, avail = self._direct(view, hosts)
                entry = [hosts, mask, count, avail]
                self._live[id(hosts)] = entry
            return entry[2], entry[3]
        key = (id(view), id(hosts))
        hit = self._other.get(key)
        if hit is None or hit[0] is not view or hit[1] is not hosts:
            if len(self._other) > 256:
                self._other.clear()
            hit = self._other[key] = (view, hosts, self._direct(view, hosts))
        return hit[2]

    def total(self, hosts: np.ndarray, resource: str) -> float:
        """Sum of a consumable's totals over ``hosts`` (static, cached)."""
        key = (id(hosts), resource)
        hit = self._totals.get(key)
        if hit is None or hit[0] is not hosts:
            hit = self._totals[key] = (hosts, float(self.table.total(resource)[hosts].sum()))
        return hit[1]
