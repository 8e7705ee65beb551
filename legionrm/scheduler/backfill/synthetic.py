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

    def run(self, kind: type[Backfill], mode: Mode = "easy", depth: int = 1) -> Outcome:
        """One pass of ``kind``'s rules over the queue; the queue is left as it was."""
        started: list[tuple[str, tuple[int, ...], tuple[float, ...]]] = []
        given: list[Sequence[Hold]] = []

        def attempt(entry: Entry, holds: Sequence[Hold]) -> bool | None:
            if entry.id in self.busy:
                return None
            given.append(holds)
            return entry.id not in self.refuse

        def usage(entry: Entry, profile: Profile) -> Usage:
            wall = walltime_of(entry.request)
            end = profile.now + (wall if wall is not None else INF)
            take = place(profile.limit(given[-1], end), demand_of(entry.request))
            assert take is not None, f"{entry.id} was tried but does not fit"
            hosts = np.flatnonzero(take > 0)
            started.append((entry.id, tuple(hosts.tolist()), tuple(take[hosts].tolist())))
            return Usage(tuple(hosts.tolist()), tuple(take[hosts].tolist()), end)

        rules = kind(mode, depth, profile=self.profile, usage=usage)
        rules.walk(self.order, attempt)
        return Outcome(started, rules.reserved)


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
    running: list[Usage] = []
    end_times = 100.0 + np.sort(rng.choice(np.arange(1, 50 * ends), size=ends, replace=False)).astype(float)
    for h in np.flatnonzero(used > 0).tolist():
        left = float(used[h])
        while left > 0:
            c = min(left, float(rng.choice([1.0, 2.0, 4.0, 8.0])))
            end = INF if rng.random() < 0.02 else float(rng.choice(end_times))
            running.append(Usage((h,), (c,), end))
            left -= c
    kinds = []
    for _ in range(shapes):
        parts = [(int(rng.integers(1, 17)), float(rng.choice(SIZES)))]
        if rng.random() < 0.3:
            parts.append((int(rng.integers(1, 5)), float(rng.choice(SIZES))))
        kinds.append(tuple(parts))
    walls = [None] + [float(w) for w in rng.choice(np.arange(10, 100 * ends), size=40, replace=False)]
    order: list[Entry] = []
    for k in range(requests):
        rid = f"r{k:07d}"
        if rng.random() < 0.002:
            shape: tuple[tuple[int, float], ...] = ()
        else:
            shape = kinds[int(rng.integers(len(kinds)))]
        wall = walls[int(rng.integers(len(walls)))] if rng.random() > 0.01 else None
        order.append(Entry(request(rid, f"u{int(rng.integers(users))}", shape, wall), submitted=float(k)))
    pick = rng.choice(requests, size=min(requests, max(requests // 200, 1)), replace=False).tolist()
    refuse = frozenset(order[i].id for i in pick[::2])
    taken = frozenset(order[i].id for i in pick[1::2])
    return CpuQueue(0.0, total, total - used, running, order, refuse, taken)
