"""The cpus of every host over time, as the queue sees them: what is free
now and when what runs gives its cpus back.

A :class:`Profile` is built for one scheduling pass (:func:`profile_of`):
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from legionrm.collection.collection import CollectionSnapshot
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.planning.snaptables import base_table
from legionrm.scheduler.requests import Entry

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


class Profile:
    """Each host's cpus over time from ``now`` (see the module).  ``names``
    and ``total`` per host; ``free`` what is free now; ``usages`` what runs
    (already counted in ``free``) with its end."""

    def __init__(self, now: float, names: Sequence[str], total: np.ndarray, free: np.ndarray,
                 usages: Iterable[Usage] = (), events: Iterable[tuple[float, int, float]] = ()) -> None:
        self.now = now
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.total = np.asarray(total, dtype=float)
        self.free = np.minimum(np.maximum(np.asarray(free, dtype=float), 0.0), self.total)
        self.reported = self.free.copy()
        """What the hosts last reported free (``free`` is never more)."""
        self._events: list[tuple[float, int, float]] = list(events)  # (time, host, +cpus back / -cpus taken)
        self._steps: tuple[np.ndarray, np.ndarray] | None = None
        self._bounds: dict[int, tuple[Hold, np.ndarray, np.ndarray]] = {}
        for u in usages:
            self.release(u)

    def unreported(self) -> tuple[Hold, ...]:
        """A hold on the cpus taken since the hosts last reported (the
        running work the report predates, and what :meth:`add` counted):
        for the planner, whose host table is the report (none when the
        report is current)."""
        taken = np.flatnonzero(self.free < self.reported - EPS)
        if not len(taken):
            return ()
        return (Hold("", -INF, {self.names[i]: float(self.free[i]) for i in taken.tolist()}),)

    def copy(self) -> Profile:
        """A copy to add to without changing this one."""
        other = Profile(self.now, self.names, self.total, self.free, events=self._events)
        other.reported = self.reported
        return other

    def release(self, usage: Usage) -> None:
        """Count running work the hosts already report: its cpus come back at its end."""
        if usage.end < INF:
            self._events.extend((usage.end, h, c) for h, c in zip(usage.hosts, usage.cpus))
            self._steps = None

    def add(self, usage: Usage) -> None:
        """Count ``usage``: cpus taken now (or at its start) and given back at its end."""
        for h, c in zip(usage.hosts, usage.cpus):
            if usage.start <= self.now:
                self.free[h] -= c
            else:
                self._events.append((usage.start, h, -c))
            if usage.end < INF:
                self._events.append((usage.end, h, c))
        self._steps = None

    def holding(self, request_id: str, start: float, take: np.ndarray, end: float) -> Hold:
        """The hold of a reservation at ``start`` taking ``take`` cpus per host
        (and counts it: later reservations see its cpus taken from ``start``
        to ``end``).  The spare of a host is what is free there at ``start``
        that the reservation does not take."""
        spare_all = self._free_at(start) - take
        hosts = np.flatnonzero(take > EPS)
        self.add(Usage(tuple(hosts.tolist()), tuple(take[hosts].tolist()), end, start))
        # only hosts whose spare is less than the host's total bind anyone
        bound = np.flatnonzero(spare_all < self.total - EPS)
        return Hold(request_id, start, {self.names[i]: float(max(spare_all[i], 0.0)) for i in bound.tolist()})

    # --- reading --------------------------------------------------------------

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """``(times, free)``: ``free[k]`` per host holds over ``[times[k], times[k+1])``; ``times[0]`` is now."""
        if self._steps is None:
            events = sorted(e for e in self._events if e[0] > self.now)
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
        times, free = self.steps()
        return free[max(int(np.searchsorted(times, t, side="right")) - 1, 0)].copy()

    def limit(self, holds: Sequence[Hold], end: float) -> np.ndarray:
        """The cpus free now to work that ends at ``end``, the ``holds`` kept."""
        free = self.free
        for hold in holds:
            if end > hold.start and hold.spare:
                idx, spare = self._bound(hold)
                free = free.copy() if free is self.free else free
                free[idx] = np.minimum(free[idx], spare)
        return free

    def _bound(self, hold: Hold) -> tuple[np.ndarray, np.ndarray]:
        """A hold's hosts (as positions) and spares, worked out once per hold."""
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
        ``walltime`` (the shadow time) and the cpus it takes per host then,
        or None when no known end frees enough (work without a walltime
        holds what it needs)."""
        times, free = self.steps()
        wall = walltime if walltime is not None else INF
        gain_order = None
        for k in range(len(times)):
            if k + 1 < len(times) and times[k + 1] == times[k]:
                continue
            last = int(np.searchsorted(times, times[k] + wall, side="left"))
            window = free[k:max(last, k + 1)].min(axis=0)
            if need(demand) > window.sum() + EPS:
                continue
            # take the cpus that are busy now first: the ones free now stay for backfilling
            gain_order = np.argsort(-(window - np.minimum(self.free, window)), kind="stable")
            take = place(window, demand, gain_order)
            if take is not None:
                return float(times[k]), take
        return None


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
    idx = order if order is not None else np.arange(len(free))
    for count, cpus in sorted(demand, key=lambda d: -d[1]):
        if cpus <= EPS:
            continue
        slots = np.floor(np.maximum(left[idx], 0.0) / cpus + EPS).astype(np.int64)
        if int(slots.sum()) < count:
            return None
        cum = np.cumsum(slots)
        upto = int(np.searchsorted(cum, count))  # hosts idx[:upto+1] hold them
        got = slots[:upto + 1].copy()
        got[-1] -= int(cum[upto]) - count
        used = idx[:upto + 1]
        left[used] -= got * cpus
        take[used] += got * cpus
    return take


def usage_of(entry: Entry, profile: Profile) -> Usage:
    """The cpus a running ``entry`` holds per host, until its walltime ends
    (an instance's cpus and walltime are its class's first object request's)."""
    objs: dict[str, tuple[float, float]] = {}
    for o in reversed(entry.request.objects):
        objs[o.class_name] = (o.cpus, o.walltime_s if o.walltime_s is not None else INF)
    hosts, cpus, end = [], [], -INF
    for iid in entry.live_instances():
        ref = entry.refs.get(iid)
        i = profile.index.get(ref.host) if ref is not None else None
        if ref is None or i is None:
            continue
        c, wall = objs.get(ref.class_name, (0.0, INF))
        hosts.append(i)
        cpus.append(c)
        end = max(end, ref.started_at + wall)
    return Usage(tuple(hosts), tuple(cpus), end if hosts else INF)


class UsageCache:
    """Each running request's :class:`Usage`, kept between passes while its
    live instances and the host set stay the same (a pass then reads only
    what changed)."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._usages: dict[str, tuple[int, Usage]] = {}

    def usages(self, profile: Profile, running: Iterable[Entry]) -> list[Usage]:
        if profile.names != self._names:
            self._names, self._usages = profile.names, {}
        kept: dict[str, tuple[int, Usage]] = {}
        for entry in running:
            live = len(entry.live_instances())
            got = self._usages.get(entry.id)
            kept[entry.id] = got if got is not None and got[0] == live else (live, usage_of(entry, profile))
        self._usages = kept
        return [u for _, u in kept.values()]


def profile_of(snap: CollectionSnapshot, running: Iterable[Entry], cache: UsageCache | None = None) -> Profile:
    """The profile of the snapshot's hosts: free cpus as they reported, or
    less where the ``running`` requests hold more than the report shows (it
    predates their start), given back as each one's walltime ends."""
    base = base_table(snap)
    profile = Profile(float(snap.now), [str(n) for n in base.names], base.cpus, base.free_cpus)
    usages = (cache or UsageCache()).usages(profile, running)
    held = np.zeros(len(profile.names))
    for u in usages:
        np.add.at(held, list(u.hosts), u.cpus)
        profile.release(u)
    profile.free = np.minimum(profile.free, np.maximum(profile.total - held, 0.0))
    return profile
