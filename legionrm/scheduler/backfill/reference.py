"""The pass rules the slow way: every request asked afresh, every shadow
time found over the table of every host at every time.

:class:`ReferenceBackfill` is :class:`~legionrm.scheduler.backfill.policy.Backfill`
without its shortcuts (no memo of what fits, no early stop, the dense
:meth:`Profile.reserve_dense`).  It is the statement of what a pass decides:
the tests and ``benchmarks/bench_queue.py`` check that the fast pass starts
and reserves exactly what this one does.  Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from legionrm.scheduler.backfill.policy import Attempt, Backfill, demand_of, outside, walltime_of
from legionrm.scheduler.backfill.profile import INF, Profile, Shadow
from legionrm.scheduler.requests import Entry


class ReferenceBackfill(Backfill):
    """:class:`Backfill`, each request asked afresh (see the module)."""

    def walk(self, order: Sequence[Entry], attempt: Attempt, skip: Callable[[Entry], bool] | None = None) -> int:
        if not order:
            self.reserved = {}
            return 0
        base = self._profile()
        blocked: list[Entry] = []
        holds, reserved, _ = self._holds(base, blocked)
        started = 0
        for entry in order:
            if entry.state != "pending" or (skip is not None and skip(entry)):
                continue
            request = entry.request
            fits = outside(request) or base.fits_now(demand_of(request), walltime_of(request), holds)
            outcome = attempt(entry, (*holds, *base.unreported())) if fits else False
            if outcome:
                started += 1
                base.add(self._usage(entry, base))
                holds, reserved, _ = self._holds(base, blocked)
                continue
            if outcome is None or outside(request):
                continue
            if self.mode == "fcfs":
                break
            if len(blocked) < self.depth:
                blocked.append(entry)
                holds, reserved, _ = self._holds(base, blocked)
        self.reserved = {r.entry.id: r.start for r in reserved if r.start is not None}
        self.blocked = tuple(e.id for e in blocked)
        return started

    def _reserve(self, profile: Profile, entry: Entry, hints: dict[str, tuple[float, float]] | None
                 ) -> Shadow | None:
        found = profile.reserve_dense(demand_of(entry.request), walltime_of(entry.request))
        return None if found is None else Shadow(found[0], found[1], -INF, None)
