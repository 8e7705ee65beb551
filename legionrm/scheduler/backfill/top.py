"""The top blocked request's reservation through one pass: when a start
leaves it as it was, it is kept instead of found again.

A pass computes the reservation of its top blocked request again after each
start (:meth:`Backfill.walk`): the start took cpus, which may delay the
reserved start or move the cpus it will take.  :meth:`Top.keeps` tells,
from the start alone, when the answer is provably the same as
:meth:`Profile.shadow` would give on the profile now, and then brings the
hold up to date:

- Every moment before the reserved start still fails.  The moments before
  the first one tried fail bounds that only more cpus could lift (the total,
  the slots of the largest instance), and a start only takes cpus.  The
  moments tried from there to the start failed :func:`place`; for one kind
  of instance its answer is a count of slots, which a start only lowers; for
  several kinds the greedy order may differ, so only a reservation found at
  the first moment tried is kept.
- At the reserved start the same cpus are taken.  Work that ends by then
  gives back at the start all it took, so the cpus there are the same; only
  the order of hosts can differ (busy-now first), and it cannot matter when
  the hosts the work runs on hold no instance of the request then.  Work
  that runs past the start took its cpus from the hold's spare: on its
  hosts both the cpus then and the cpus free now fall by what it took, so
  the order of hosts stays, and each host the reservation took from still
  has room for what it took (with a host's cap at its total not in play).

The cpus are summed in another order than a fresh answer sums them: the
same figures for cpus that add exactly, as halves and whole cpus do (the
pass's other shortcuts say the same).  Pure; no Ray.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from legionrm.scheduler.backfill.profile import EPS, Demand, Profile, Shadow, Spare, Usage
from legionrm.scheduler.planning.holds import Hold


@dataclass
class Top:
    """One reservation (``found``, ``hold``) of ``demand`` in a pass and what a later start is checked against."""

    found: Shadow
    hold: Hold
    demand: Demand
    row: np.ndarray
    """Each host's free cpus at the start (uncapped), kept up to date with the starts that run past it."""
    single: bool
    """One kind of instance."""
    smallest: float
    """The cpus of its smallest instance."""

    @staticmethod
    def of(found: Shadow, hold: Hold, demand: Demand) -> Top | None:
        """The reservation ``found`` with its ``hold`` (None: found over the dense table; not kept)."""
        if found.row is None:
            return None
        sizes = {c for n, c in demand if c > EPS}
        return Top(found, hold, demand, found.row.copy(), len(sizes) <= 1, min(sizes, default=np.inf))

    def keeps(self, usage: Usage, profile: Profile) -> bool:
        """After ``usage`` started on ``profile`` (counted there already), is
        the reserved start the same?  If so :attr:`found` (the cpus it takes)
        and :attr:`hold` are brought up to date."""
        start, take, total = self.found.start, self.found.take, profile.total
        if not usage.hosts:  # it took no cpus (it had nothing to place)
            return True
        if usage.start > profile.now or not (self.single or self.found.first == start):
            return False
        hosts = np.asarray(usage.hosts, np.int64)
        cpus = np.asarray(usage.cpus, float)
        if len(set(usage.hosts)) < len(hosts):  # several instances on one host: what it took there in all
            hosts, at = np.unique(hosts, return_inverse=True)
            cpus = np.bincount(at, cpus, minlength=len(hosts))
        if usage.end <= start:  # it ends by the start: the same cpus then, the hosts perhaps in another order
            room = np.maximum(np.minimum(self.row[hosts], total[hosts]), 0.0)
            if not bool((np.floor(room / self.smallest + EPS) > 0).any()):
                return True  # (no instance fits on its hosts then: the order of the others is the same)
            placed = profile.placed(np.minimum(self.row, total), self.demand)
            if placed is None:  # (several kinds: another order may not place them all)
                return False
            take = placed
        else:
            spare = np.minimum(self.row[hosts], total[hosts]) - take[hosts]
            if bool((self.row[hosts] > total[hosts]).any()) or bool((cpus > spare + EPS).any()):
                return False
            self.row[hosts] -= cpus
        self.found = Shadow(start, take, self.found.first, self.found.row)
        spare_all = np.minimum(self.row, total) - take
        bound = (spare_all < total - EPS).nonzero()[0]  # (as Profile.holding: the hosts it binds)
        self.hold = Hold(self.hold.request_id, start, Spare(profile.names, bound, np.maximum(spare_all[bound], 0.0)))
        return True
