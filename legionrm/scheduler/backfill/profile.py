"""The cpus of every host over time, as the queue sees them: what is free
now and when what runs gives its cpus back.

A :class:`Profile` is built for one scheduling pass
(:func:`~legionrm.scheduler.backfill.running.profile_of`):
each host's total and free cpus come from the Collection snapshot (what the
host last reported), and the times its cpus come back from the walltimes of
the work the Scheduler runs there (its start plus its walltime).  Cpus a
host reports in use that no running request of this Scheduler accounts for
(another Scheduler's work, an advance reservation, work without a walltime)
are held for ever: no reservation counts on them.

:meth:`Profile.reserve` finds a blocked request's reserved start, the
*shadow time* of EASY backfilling: the earliest time enough cpus are free,
for the request's whole walltime, to place it; and which cpus it will take
then, chosen from the cpus that are busy now first so the ones free now stay
for backfilling.  :meth:`Profile.fits_now` says whether work fits now
without breaking the holds.  Only cpus are counted (memory and the rest stay
the planner's).  Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple, cast

import numpy as np

from legionrm.scheduler.planning.holds import Hold

INF = float("inf")
EPS = 1e-9

Demand = tuple[tuple[int, float], ...]
"""What a request needs, as ``(count, cpus per instance)`` per object request."""


@dataclass(frozen=True)
class Usage:
    """Cpus work holds on hosts (by profile position) from ``start`` until ``end``."""

    hosts: tuple[int, ...]
    cpus: tuple[float, ...]
    end: float
    start: float = -INF


class Shadow(NamedTuple):
    """A blocked request's reserved start as :meth:`Profile.shadow` found it."""

    start: float
    take: np.ndarray
    """The cpus it takes per host then."""
    first: float
    """The first moment tried (each before it fails a bound that only more cpus lift; -inf: not known)."""
    row: np.ndarray | None
    """Each host's free cpus at ``start``, before the cap at its total (None: found over the dense table)."""


class Spare(Mapping[str, float]):
    """A hold's spare cpus by host name, kept as the profile's arrays (a
    pass reads them as arrays, and so does the planner's ``held_table``,
    through :attr:`columns`; the names are built on first use)."""

    def __init__(self, names: list[str], hosts: np.ndarray, cpus: np.ndarray) -> None:
        self.names, self.hosts, self.cpus = names, hosts, cpus
        self._dict: dict[str, float] | None = None

    @property
    def columns(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(names, positions, spares)``: the spare of host ``names[positions[k]]`` is ``spares[k]``."""
        return self.names, self.hosts, self.cpus

    def _as_dict(self) -> dict[str, float]:
        if self._dict is None:
            self._dict = dict(zip((self.names[i] for i in self.hosts.tolist()), self.cpus.tolist()))
        return self._dict

    def __getitem__(self, host: str) -> float:
        return self._as_dict()[host]

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self.hosts)


class Profile:
    """Each host's cpus over time from ``now`` (see the module).  ``names``
    and ``total`` per host; ``free`` what is free now; ``usages`` what runs
    (already counted in ``free``) with its end."""

    def __init__(self, now: float, names: Sequence[str], total: np.ndarray, free: np.ndarray,
                 usages: Iterable[Usage] = (), events: Iterable[tuple[float, int, float]] = (),
                 index: dict[str, int] | None = None) -> None:
        """``index``: each of ``names``'s position, when the caller has it (the list and the index are then
        kept as they are: shared with the caller's profile, and never changed)."""
        self.now = now
        self.names = list(names) if index is None else cast(list[str], names)
        self.index = {n: i for i, n in enumerate(self.names)} if index is None else index
        self.total = np.asarray(total, dtype=float)
        self.free = np.minimum(np.maximum(np.asarray(free, dtype=float), 0.0), self.total)
        self.reported = self.free.copy()
        """What the hosts last reported free (``free`` is never more)."""
        # the events (time, host, +cpus back / -cpus taken), as arrays plus those not merged in yet
        self._ev: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.empty(0), np.empty(0, np.int64), np.empty(0))
        self._pending: list[np.ndarray] = []  # (k, 3) chunks of events
        self._push(events)
        self._steps: tuple[np.ndarray, np.ndarray] | None = None
        self._later: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._gains: np.ndarray | None = None  # the cpus given back by each moment (running sums of the events)
        self._seen: tuple[float, np.ndarray] | None = None  # the last moment shadow() placed at, and its cpus
        self._bounds: dict[int, tuple[Hold, np.ndarray, np.ndarray]] = {}
        self.release(*usages)
        self.kept: object = None
        """The keeper's token while this is its profile unchanged (:class:`~.kept.ProfileKeeper`; None: changed)."""

    def rebased(self, total: np.ndarray, free: np.ndarray, events: np.ndarray) -> Profile:
        """The profile the constructor builds of the same hosts at the same time from ``total``,
        ``free`` and ``events`` (no usages), with this one's names and index (shared: never changed)."""
        return Profile(self.now, self.names, total, free, events=events, index=self.index)

    def moved_to(self, now: float) -> None:
        """This profile as of ``now`` instead (the same hosts, cpus and work; what it worked out from the time, forgotten)."""
        self.now = now
        self._steps = self._later = self._gains = self._seen = None

    def unreported(self) -> tuple[Hold, ...]:
        """A hold on the cpus taken since the hosts last reported (the
        running work the report predates, and what :meth:`add` counted):
        for the planner, whose host table is the report (none when the
        report is current)."""
        taken = (self.free < self.reported - EPS).nonzero()[0]
        if not len(taken):
            return ()
        return (Hold("", -INF, Spare(self.names, taken, self.free[taken])),)

    def copy(self) -> Profile:
        """A copy to add to without changing this one."""
        other = object.__new__(Profile)  # the hosts' names and index are shared, never changed
        other.__dict__.update(self.__dict__, free=self.free.copy(), _ev=self._events(), _pending=[])
        return other

    def release(self, *usages: Usage) -> None:
        """Count running work the hosts already report: its cpus come back at its end."""
        ending = [u for u in usages if u.end < INF]
        # as columns (a pass starts from tens of thousands of usages): the events in the same order
        ends = np.repeat(np.fromiter((u.end for u in ending), float, len(ending)),
                         np.fromiter((len(u.hosts) for u in ending), np.int64, len(ending)))
        hosts = np.fromiter(chain.from_iterable(u.hosts for u in ending), float, len(ends))
        cpus = np.fromiter(chain.from_iterable(u.cpus for u in ending), float, len(ends))
        self._push(np.column_stack([ends, hosts, cpus]))

    def add(self, usage: Usage) -> None:
        """Count ``usage``: cpus taken now (or at its start) and given back at its end."""
        hosts, cpus = np.array(usage.hosts, dtype=float), np.array(usage.cpus, dtype=float)
        if usage.start <= self.now:
            np.subtract.at(self.free, list(usage.hosts), usage.cpus)
        else:  # (as columns: the events in the same order)
            self._push(_at(usage.start, hosts, -cpus))
        if usage.end < INF:
            self._push(_at(usage.end, hosts, cpus))
        self._steps = self._later = self._gains = self._seen = self.kept = None

    def _push(self, events: Iterable[tuple[float, int, float]] | np.ndarray) -> None:
        chunk = events if isinstance(events, np.ndarray) else np.array(list(events), dtype=float).reshape(-1, 3)
        if len(chunk):
            self._pending.append(chunk)
        self._steps = self._later = self._gains = self._seen = self.kept = None

    def _events(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every event as ``(times, hosts, cpus)`` arrays, by time (those of
        one time in the order they came): new ones are merged in, not sorted
        again, so a pass that adds one start at a time stays linear."""
        if self._pending:
            t, h, d = self._ev
            new = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
            new = new[np.argsort(new[:, 0], kind="stable")]
            self._pending = []
            if len(t) and len(new) * 8 < len(t):
                at = t.searchsorted(new[:, 0], side="right")
                self._ev = (np.insert(t, at, new[:, 0]), np.insert(h, at, new[:, 1].astype(np.int64)),
                            np.insert(d, at, new[:, 2]))
            else:
                t, h, d = (np.concatenate([t, new[:, 0]]), np.concatenate([h, new[:, 1].astype(np.int64)]),
                           np.concatenate([d, new[:, 2]]))
                o = np.argsort(t, kind="stable")
                self._ev = (t[o], h[o], d[o])
        return self._ev

    def holding(self, request_id: str, start: float, take: np.ndarray, end: float) -> Hold:
        """The hold of a reservation at ``start`` taking ``take`` cpus per host
        (and counts it: later reservations see its cpus taken from ``start``
        to ``end``).  The spare of a host is what is free there at ``start``
        that the reservation does not take."""
        spare_all = self._free_at(start) - take
        hosts = (take > EPS).nonzero()[0]
        self.add(Usage(tuple(hosts.tolist()), tuple(take[hosts].tolist()), end, start))
        # only hosts whose spare is less than the host's total bind anyone
        bound = (spare_all < self.total - EPS).nonzero()[0]
        return Hold(request_id, start, Spare(self.names, bound, np.maximum(spare_all[bound], 0.0)))

    # --- reading --------------------------------------------------------------

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """``(times, free)``: ``free[k]`` per host holds over ``[times[k], times[k+1])``; ``times[0]`` is now."""
        if self._steps is None:
            t, h, d = self._events()
            events = sorted(zip(t.tolist(), h.tolist(), d.tolist()))
            events = [e for e in events if e[0] > self.now]
            times = [self.now]
            rows = [self.free.copy()]
            for t, h, c in events:
                if t > times[-1]:
                    times.append(t)
                    rows.append(rows[-1].copy())
                rows[-1][h] += c
            self._steps = (np.asarray(times), np.minimum(np.vstack(rows), self.total))
        return self._steps

    def _free_at(self, t: float) -> np.ndarray:
        if self._seen is not None and self._seen[0] == t:  # the moment shadow() just placed at
            return self._seen[1].copy()
        times, upto, hosts, cpus = self.later()
        k = max(int(times.searchsorted(t, side="right")) - 1, 0)
        return np.minimum(self._row(k), self.total)

    def later(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(times, upto, hosts, cpus)``: the events after now, by time, and
        ``upto[k]``, how many of them have come by ``times[k]`` (``times[0]``
        is now): the sparse form of :meth:`steps`."""
        if self._later is None:
            t, h, d = self._events()
            lo = int(t.searchsorted(self.now, side="right"))
            t, h, d = t[lo:], h[lo:], d[lo:]
            ends = np.append((t[1:] != t[:-1]).nonzero()[0] + 1, len(t)) if len(t) else np.empty(0, np.int64)
            self._later = (np.concatenate([[self.now], t[ends - 1]]), np.concatenate([[0], ends]), h, d)
        return self._later

    def _row(self, k: int, row: np.ndarray | None = None, since: int = 0) -> np.ndarray:
        """Uncapped free cpus per host at ``times[k]`` (from ``row`` at
        ``times[since]``), summed event by event as :meth:`steps` does (the
        same figures; for cpus that add exactly, as halves and whole cpus do,
        whatever the order of one time's events)."""
        _, upto, hosts, cpus = self.later()
        row = self.free.copy() if row is None else row
        lo = int(upto[since]) if since else 0
        np.add.at(row, hosts[lo:int(upto[k])], cpus[lo:int(upto[k])])
        return row

    def limit(self, holds: Sequence[Hold], end: float) -> np.ndarray:
        """The cpus free now to work that ends at ``end``, the ``holds`` kept."""
        return self.limit_of(holds, binding(holds, end))

    def limit_of(self, holds: Sequence[Hold], binds: tuple[bool, ...]) -> np.ndarray:
        """:meth:`limit` with the holds that bind given (``binds``, one flag per hold)."""
        free = self.free
        for hold, bind in zip(holds, binds):
            if bind:
                idx, spare = self._bound(hold)
                free = free.copy() if free is self.free else free
                free[idx] = np.minimum(free[idx], spare)
        return free

    def _bound(self, hold: Hold) -> tuple[np.ndarray, np.ndarray]:
        """A hold's hosts (as positions) and spares, worked out once per hold."""
        spare = hold.spare
        if isinstance(spare, Spare) and spare.names is self.names:
            return spare.hosts, spare.cpus
        got = self._bounds.get(id(hold))
        if got is None or got[0] is not hold:
            pairs = [(self.index[h], v) for h, v in hold.spare.items() if h in self.index]
            got = (hold, np.array([i for i, _ in pairs], dtype=np.int64), np.array([v for _, v in pairs], dtype=float))
            self._bounds[id(hold)] = got
        return got[1], got[2]

    def fits_now(self, demand: Demand, walltime: float | None, holds: Sequence[Hold] = ()) -> bool:
        """Does ``demand`` fit in the cpus free now, without breaking ``holds``?"""
        end = self.now + (walltime if walltime is not None else INF)
        return place(self.limit(holds, end), demand) is not None

    def reserve(self, demand: Demand, walltime: float | None) -> tuple[float, np.ndarray] | None:
        """The earliest start at which ``demand`` fits for its whole
        ``walltime`` (the shadow time) and the cpus it takes per host then
        (see :meth:`shadow`)."""
        found = self.shadow(demand, walltime)
        return None if found is None else found[:2]

    def shadow(self, demand: Demand, walltime: float | None, since: float = -INF, by: float = INF) -> Shadow | None:
        """The earliest start at which ``demand`` fits for its whole
        ``walltime`` (the shadow time) and the cpus it takes per host then,
        or None when no known end frees enough (work without a walltime
        holds what it needs).

        The same answer as :meth:`reserve_dense`, without its table of every
        host at every time: while no cpus are taken later than now (a
        reservation's hold in this profile), each host's free cpus only grow
        over time, so a start's window is its first moment; the moments are
        narrowed by the total (a bound from running sums) and by the slots of
        the largest instance (a bisection), then tried in order.

        Also gives the first moment with slots enough for the largest
        instance.  A profile that has only lost cpus since an earlier answer
        may pass that moment as ``since`` (no earlier moment has the slots
        now) and that answer's start as ``by`` (tried first as a bound): a
        pass re-reserving after each start then looks at a moment or two."""
        times, upto, hosts, cpus = self.later()
        if len(cpus) and float(cpus.min()) < 0:
            dense = self.reserve_dense(demand, walltime)
            return None if dense is None else Shadow(dense[0], dense[1], -INF, None)
        total_need = need(demand)
        items = [(n, c) for n, c in sorted(demand, key=lambda d: -d[1]) if c > EPS]
        # an upper bound of each moment's free sum (uncapped): moments before it cannot hold the total
        if self._gains is None:
            self._gains = np.concatenate([[0.0], np.cumsum(cpus)])[upto]
        sums = float(self.free.sum()) + self._gains
        k = int(np.searchsorted(sums + EPS + 1e-6 * np.maximum(np.abs(sums), 1.0), total_need, side="left"))
        k = max(k, int(times.searchsorted(since, side="left")))
        if k >= len(times):
            return None
        first = float(times[k])
        if items:  # the first moment with slots enough for the largest instance (slots only grow)
            count, size = items[0]
            slots = lambda j: int(np.floor(np.maximum(np.minimum(self._sum_row(j), self.total), 0.0) / size + EPS).sum())
            lo, hi = k, len(times)
            at = int(times.searchsorted(by, side="left"))
            if lo <= at < hi and slots(at) >= count:
                hi = at
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if slots(mid) >= count else (mid + 1, hi)
            if lo >= len(times):
                return None
            k, first = lo, float(times[lo])
        row = self._row(k)
        while True:
            window = np.minimum(row, self.total)
            if total_need <= window.sum() + EPS:
                take = self.placed(window, demand)
                if take is not None:
                    self._seen = (float(times[k]), window)
                    return Shadow(float(times[k]), take, first, row)
            if k + 1 >= len(times):
                return None
            row, k = self._row(k + 1, row, k), k + 1

    def placed(self, window: np.ndarray, demand: Demand) -> np.ndarray | None:
        """The cpus per host a reservation of ``demand`` takes from ``window``
        (the cpus free at its start): :func:`place` onto the cpus that are
        busy now first, so the ones free now stay for backfilling."""
        return place(window, demand, np.argsort(-(window - np.minimum(self.free, window)), kind="stable"))

    def _sum_row(self, k: int) -> np.ndarray:
        """:meth:`_row` summed at once (a bound to narrow the moments by, not the figure used)."""
        _, upto, hosts, cpus = self.later()
        u = int(upto[k])
        return self.free + np.bincount(hosts[:u], cpus[:u], minlength=len(self.free))

    def reserve_dense(self, demand: Demand, walltime: float | None) -> tuple[float, np.ndarray] | None:
        """:meth:`reserve` over :meth:`steps`, every host at every time: the
        reference, and the way when cpus are taken later (the windows then
        are minima over time)."""
        times, free = self.steps()
        wall = walltime if walltime is not None else INF
        gain_order = None
        for k in range(len(times)):
            if k + 1 < len(times) and times[k + 1] == times[k]:
                continue
            last = int(times.searchsorted(times[k] + wall, side="left"))
            window = free[k:max(last, k + 1)].min(axis=0)
            if need(demand) > window.sum() + EPS:
                continue
            # take the cpus that are busy now first: the ones free now stay for backfilling
            gain_order = np.argsort(-(window - np.minimum(self.free, window)), kind="stable")
            take = place(window, demand, gain_order)
            if take is not None:
                return float(times[k]), take
        return None


def _at(t: float, hosts: np.ndarray, cpus: np.ndarray) -> np.ndarray:
    """Events ``(t, host, cpus)`` of one time as rows (``np.column_stack`` of the three, built in place)."""
    out = np.empty((len(hosts), 3))
    out[:, 0], out[:, 1], out[:, 2] = t, hosts, cpus
    return out


def binding(holds: Sequence[Hold], end: float) -> tuple[bool, ...]:
    """Which ``holds`` bind work that ends at ``end`` (it runs past their start)."""
    return tuple(end > h.start and bool(h.spare) for h in holds)


def need(demand: Demand) -> float:
    """All the cpus ``demand`` asks for."""
    return sum(n * c for n, c in demand)


def place(free: np.ndarray, demand: Demand, order: np.ndarray | None = None) -> np.ndarray | None:
    """The cpus per host ``demand`` takes from ``free`` (whole instances, the
    largest first, onto hosts in ``order``; default: as they come), or None
    when it does not fit."""
    if need(demand) > free.sum() + EPS:
        return None
    left = free.copy()
    take = np.zeros(len(free))
    for count, cpus in sorted(demand, key=lambda d: -d[1]):
        if cpus <= EPS:
            continue
        slots = np.floor(np.maximum(left if order is None else left[order], 0.0) / cpus + EPS).astype(np.int64)
        if int(slots.sum()) < count:
            return None
        cum = slots.cumsum()
        upto = int(cum.searchsorted(count))  # the first upto+1 hosts (in order) hold them
        got = slots[:upto + 1]  # (a view: slots is this round's own, read no more)
        got[-1] -= int(cum[upto]) - count
        used = slice(upto + 1) if order is None else order[:upto + 1]  # (as they come: the first upto+1)
        left[used] -= got * cpus
        take[used] += got * cpus
    return take
