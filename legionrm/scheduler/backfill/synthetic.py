"""A queue on cpus alone, to check and time the pass rules without a planner.

:class:`CpuQueue` holds a cluster's cpus (each host's total and what runs
there, with its end) and the waiting requests; :meth:`CpuQueue.run` makes
one pass of a :class:`~legionrm.scheduler.backfill.policy.Backfill` (or
:class:`~legionrm.scheduler.backfill.reference.ReferenceBackfill`) over
them, where an attempt places a request first-fit on the cpus the pass's
holds leave it (the planner's rule, on cpus only) and may be told to refuse
some requests (``refuse``: not now) or find them taken by another attempt
(``busy``).  :func:`generate` makes a varied queue from a seed.  The tests
and ``benchmarks/bench_queue.py`` use it to compare the fast pass with the
reference.  Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.backfill.policy import Backfill, Mode, demand_of, walltime_of
from legionrm.scheduler.backfill.profile import INF, Profile, Usage, place
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.requests import Entry


@dataclass
class Outcome:
    """What one pass did: the requests it started (in order, with the cpus
    each took per host) and the reserved starts it left."""

    started: list[tuple[str, tuple[int, ...], tuple[float, ...]]]
    reserved: dict[str, float]


@dataclass
class CpuQueue:
    """Hosts' cpus (``total``, ``free`` now, and ``running``: what runs, with
    its end) and ``order``, the waiting requests in queue order, at ``now``."""

    now: float
    total: np.ndarray
    free: np.ndarray
    running: list[Usage]
    order: list[Entry]
    refuse: frozenset[str] = frozenset()
    busy: frozenset[str] = frozenset()
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.names = self.names or [f"h{i:06d}" for i in range(len(self.total))]

    def profile(self) -> Profile:
        """A fresh profile of the hosts (each pass builds its own)."""
        return Profile(self.now, self.names, self.total, self.free, self.running)

    def rules(self, kind: type[Backfill], mode: Mode = "easy", depth: int = 1) -> Backfill:
        """``kind``'s pass rules over this queue (they keep what they learn between passes)."""
        return kind(mode, depth, profile=self.profile, usage=self._usage)

    def run(self, kind: type[Backfill] | Backfill, mode: Mode = "easy", depth: int = 1) -> Outcome:
        """One pass of ``kind``'s rules (or of the rules given) over the queue; the queue is left as it was."""
        self._started: list[tuple[str, tuple[int, ...], tuple[float, ...]]] = []
        self._given: list[Sequence[Hold]] = []
        rules = kind if isinstance(kind, Backfill) else self.rules(kind, mode, depth)
        rules.walk(self.order, self._attempt)  # (the walk passes over what is not pending)
        return Outcome(self._started, dict(rules.reserved))

    def _attempt(self, entry: Entry, holds: Sequence[Hold]) -> bool | None:
        if entry.id in self.busy:
            return None
        self._given.append(holds)
        return entry.id not in self.refuse

    def _usage(self, entry: Entry, profile: Profile) -> Usage:
        """Where the attempt put ``entry``: first fit within the holds it was given."""
        wall = walltime_of(entry.request)
        end = profile.now + (wall if wall is not None else INF)
        take = place(profile.limit(self._given[-1], end), demand_of(entry.request))
        assert take is not None, f"{entry.id} was tried but does not fit"
        hosts = np.flatnonzero(take > 0)
        self._started.append((entry.id, tuple(hosts.tolist()), tuple(take[hosts].tolist())))
        return Usage(tuple(hosts.tolist()), tuple(take[hosts].tolist()), end)

    def settle(self, outcome: Outcome, ended: float, seed: int = 0) -> None:
        """What happens before the next pass: the requests ``outcome``
        started run, then the work on a share ``ended`` of the hosts ends."""
        by_id = {e.id: e for e in self.order}
        for rid, hosts, cpus in outcome.started:
            entry = by_id[rid]
            entry.state = "running"
            wall = walltime_of(entry.request)
            self.running.append(Usage(hosts, cpus, self.now + (wall if wall is not None else INF)))
            np.subtract.at(self.free, list(hosts), cpus)
        rng = np.random.default_rng(seed)
        gone = set(rng.choice(len(self.total), size=int(len(self.total) * ended), replace=False).tolist())
        kept = []
        for u in self.running:
            if gone.intersection(u.hosts):
                np.add.at(self.free, list(u.hosts), u.cpus)  # it ended: its cpus are free
            else:
                kept.append(u)
        self.running = kept


def request(rid: str, user: str, shape: Sequence[tuple[int, float]], walltime: float | None) -> SchedulingRequest:
    """A request of ``shape`` (``(count, cpus)`` per object request) for ``walltime``."""
    objects = tuple(ObjectRequest.model_construct(class_name="Job", count=n, cpus=c, memory_gb=0.0, walltime_s=walltime)
                    for n, c in shape)
    return SchedulingRequest.model_construct(request_id=rid, identity=Identity.model_construct(user=user, groups=()),
                                             objects=objects, start=None)


SIZES = (0.5, 1.0, 1.0, 2.0, 2.0, 4.0, 8.0, 16.0)
"""Cpus per instance (halves and whole cpus: their sums are exact in floating point)."""


def generate(seed: int, hosts: int, requests: int, *, busy: float = 0.9, users: int = 500,
             ends: int = 200, shapes: int = 60) -> CpuQueue:
    """A varied queue: ``hosts`` hosts of 8, 16 or 32 cpus about ``busy``
    full of work ending at ``ends`` different times (some never: no
    walltime), and ``requests`` waiting requests of ``shapes`` different
    shapes (one or two kinds of instance, 1 to 16 of them) and walltimes,
    from ``users`` users; a few have nothing to place, a few are refused or
    taken by another attempt."""
    rng = np.random.default_rng(seed)
    total = rng.choice([8.0, 16.0, 32.0], size=hosts)
    used = np.minimum(np.round(total * rng.uniform(busy - 0.1, 1.0, size=hosts) * 2) / 2, total)
    end_times = 100.0 + np.sort(rng.choice(np.arange(1, 50 * ends), size=ends, replace=False)).astype(float)
    pieces = rng.choice([1.0, 2.0, 4.0, 8.0], size=(hosts, 64))
    cum = np.cumsum(pieces, axis=1)
    running: list[Usage] = []
    for h in np.flatnonzero(used > 0).tolist():
        k = int(np.searchsorted(cum[h], used[h]))  # pieces[h, :k+1], the last cut to what is used
        cpus = pieces[h, :k + 1].copy()
        cpus[-1] -= float(cum[h, k] - used[h])
        for c in cpus[cpus > 0].tolist():
            running.append(Usage((h,), (c,), INF if rng.random() < 0.02 else float(end_times[rng.integers(ends)])))
    kinds = []
    for _ in range(shapes):
        parts = [(int(rng.integers(1, 17)), float(rng.choice(SIZES)))]
        if rng.random() < 0.3:
            parts.append((int(rng.integers(1, 5)), float(rng.choice(SIZES))))
        kinds.append(tuple(parts))
    walls = [None] + [float(w) for w in rng.choice(np.arange(10, 100 * ends), size=40, replace=False)]
    kind = rng.integers(len(kinds), size=requests).tolist()
    wall = rng.integers(len(walls), size=requests).tolist()
    user = rng.integers(users, size=requests).tolist()
    empty = (rng.random(requests) < 0.002).tolist()
    made: dict[tuple[int, int], SchedulingRequest] = {}  # one model per shape, copied per request
    people = [Identity(user=f"u{u}") for u in range(users)]
    order = []
    for k in range(requests):
        key = (-1 if empty[k] else kind[k], wall[k])
        if key not in made:
            made[key] = request("", "", () if empty[k] else kinds[kind[k]], walls[wall[k]])
        order.append(Entry(made[key].model_copy(update={"request_id": f"r{k:07d}", "identity": people[user[k]]}),
                           submitted=float(k)))
    pick = rng.choice(requests, size=min(requests, max(requests // 200, 1)), replace=False).tolist()
    refuse = frozenset(order[i].id for i in pick[::2])
    taken = frozenset(order[i].id for i in pick[1::2])
    return CpuQueue(0.0, total, total - used, running, order, refuse, taken)
