"""What is on each host over time: a flat calendar of intervals, and views of it.

The node table is static; this is the part that changes as work starts and
ends.  Every holding is an interval ``[start, end)`` on one host with the
amounts it assigns and whether it holds the host exclusively.  ``[[busy]]``
entries of a scenario, a host calendar adapter and jobs placed in this cycle
all land here through :meth:`HostState.occupy`.

A :class:`HostView` is the state at one instant as arrays over hosts: jobs
running, exclusive holds, assigned amounts, the time of the next calendar
event after the instant, and the bucket pool (free / busy-later / busy).  The
live view (at ``now``) is kept current incrementally; :meth:`HostState.at`
computes a view at another time (for the earliest-start search).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np

from legionrm.scheduler.nodes import NodeTable

FREE, BUSY_LATER, BUSY = 0, 1, 2
"""Bucket pools: free with no future event; free now with a future event; in use."""

JOB_INFINITY = 60.0 * 60 * 24 * 365 * 5
"""A job with no walltime lasts 5 years (PBS), so it never backfills before an event."""


@dataclass
class HostView:
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

    def fits_time(self, walltime: float) -> np.ndarray:
        """Hosts whose next event is no earlier than ``now + walltime`` (ending
        exactly at the event start is allowed)."""
        return self.next_event >= self.now + walltime

    def state_name(self, i: int) -> str:
        """PBS-like node state text for host ``i``."""
        if self.excl[i]:
            return "job-exclusive"
        if self.njobs[i] and self.table.columns.get("ncpus") is not None and self.avail("ncpus")[i] <= 0:
            return "job-busy"
        return "free"


Listener = Callable[[np.ndarray, HostView], None]


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
        self._h: list[int] = []
        self._s: list[float] = []
        self._e: list[float] = []
        self._x: list[bool] = []
        self._a: dict[str, list[float]] = {r: [] for r in self._res}
        self._alive: list[bool] = []
        self._cache: tuple[np.ndarray, ...] | None = None
        self._listeners: list[Listener] = []
        self._live = self._compute(self.now)

    # -- listeners -----------------------------------------------------------

    def subscribe(self, fn: Listener) -> None:
        """Call ``fn(hosts, live_view)`` after every change touching ``hosts``."""
        self._listeners.append(fn)

    def _notify(self, hosts: np.ndarray) -> None:
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
        ids = list(range(len(self._h), len(self._h) + len(hs)))
        self._h.extend(hs.tolist())
        self._s.extend([float(start)] * len(hs))
        self._e.extend([float(end)] * len(hs))
        self._x.extend([bool(exclusive)] * len(hs))
        self._alive.extend([True] * len(hs))
        for r in self._res:
            if amounts is None:
                vals = self.table.total(r)[hs]
            else:
                v = amounts.get(r, 0.0)
                vals = np.broadcast_to(np.asarray(v, dtype=np.float64), hs.shape)
            self._a[r].extend(np.asarray(vals, dtype=np.float64).tolist())
        self._cache = None
        live = self._live
        if start <= self.now < end:
            np.add.at(live.njobs, hs, 1)
            if exclusive:
                live.excl[hs] = True
            for r in self._res:
                if amounts is None:
                    np.add.at(live.assigned[r], hs, self.table.total(r)[hs])
                elif r in amounts:
                    np.add.at(live.assigned[r], hs, np.broadcast_to(np.asarray(amounts[r], float), hs.shape))
        elif start > self.now:
            np.minimum.at(live.next_event, hs, float(start))
        self._repool(hs)
        self._notify(np.unique(hs))
        return ids

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
        self.now = float(now)
        self._live = self._compute(self.now)
        self._notify(np.arange(self.table.n))

    # -- views ---------------------------------------------------------------

    def live(self) -> HostView:
        """The view at ``now`` (kept current; do not mutate)."""
        return self._live

    def at(self, t: float) -> HostView:
        """A fresh view at time ``t`` computed from the calendar."""
        return self._compute(float(t))

    def event_times(self, after: float) -> np.ndarray:
        """Sorted distinct interval ends after ``after``: the times a waiting
        request could start (resources only come free when holdings end)."""
        h, s, e, x, alive, _ = self._arrays()
        ends = e[alive & (e > after)]
        return np.unique(ends)

    def intervals_of(self, host: int) -> list[tuple[float, float, bool]]:
        """The live holdings of one host, sorted by start (for explanations)."""
        out = [
            (self._s[i], self._e[i], self._x[i])
            for i in range(len(self._h))
            if self._alive[i] and self._h[i] == host
        ]
        return sorted(out)

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

    def _compute(self, t: float, hosts: np.ndarray | None = None) -> HostView:
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
        return HostView(t, njobs, excl, assigned, nxt, pool, self.table)

    def _repool(self, hosts: np.ndarray) -> None:
        live = self._live
        live.pool[hosts] = np.where(
            live.njobs[hosts] > 0, BUSY, np.where(np.isfinite(live.next_event[hosts]), BUSY_LATER, FREE)
        )
