"""What fits now, asked once per shape: the memo a fast pass keeps.

A pass asks :meth:`Profile.fits_now` of every waiting request; the answer
depends only on the request's demand, on which holds bind it (its walltime
against their starts) and on the state of the pass (the cpus free now and
the holds).  :class:`Fits` answers each ``(demand, binding holds)`` shape
once per state.  When the state changes (a start, a new reservation) the
cpus each shape may use can only shrink or stay (the usual case: a start
takes cpus, a reservation adds a bound); then a shape that failed for a
reason that only more cpus could lift (its total is more than is free, or
its largest instance has too few slots) still fails, and is not asked again.
Any other change forgets everything.  The answers are exactly
:meth:`Profile.fits_now`'s.  Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from legionrm.scheduler.backfill.profile import EPS, INF, Demand, Profile, binding, need, place
from legionrm.scheduler.planning.holds import Hold

Binds = tuple[bool, ...]


class _View:
    """The cpus one set of binding holds leaves, and what is known to fit there."""

    def __init__(self, limit: np.ndarray) -> None:
        self.limit = limit
        self.total = float(limit.sum())
        self.answers: dict[Demand, bool] = {}
        self.slots: dict[float, int] = {}  # instances of each size the limit holds
        self.stale = False

    def slots_of(self, cpus: float) -> int:
        got = self.slots.get(cpus)
        if got is None:
            got = self.slots[cpus] = int(np.floor(np.maximum(self.limit, 0.0) / cpus + EPS).sum())
        return got


class Fits:
    """:meth:`Profile.fits_now` of ``profile`` under ``holds``, remembered by
    shape; :meth:`changed` after every change of the pass's state."""

    def __init__(self, profile: Profile, holds: Sequence[Hold]) -> None:
        self.profile = profile
        self.holds = list(holds)
        self._views: dict[Binds, _View] = {}
        self._asked: dict[tuple[Demand, float | None], bool] = {}  # this state's answers by (demand, walltime)
        self._loose: _View | None = None  # the cpus free now, no hold kept (for surely_not)

    def changed(self, holds: Sequence[Hold]) -> None:
        """The pass started work or reserved a start: ``holds`` are the holds now."""
        if [(h.start, h.request_id) for h in holds] != [(h.start, h.request_id) for h in self.holds]:
            self._views = {}  # other holds (a new reservation, or one moved): nothing carries over
        for view in self._views.values():
            view.stale = True
        self.holds = list(holds)
        self._asked = {}
        self._loose = None

    def surely_not(self, demand: Demand) -> bool:
        """Does ``demand`` not fit now whatever the holds (True: it fails on the cpus free now with no
        hold kept, for a reason that less room keeps, :meth:`_lasting`; holds only take room)?  A
        pass asks it before it works out the holds, and spares that work when every try fails so."""
        view = self._loose
        if view is None:
            view = self._loose = _View(self.profile.free)
        got = view.answers.get(demand)
        if got is None:
            got = view.answers[demand] = self._fits(view, demand)
        return not got and self._lasting(view, demand)

    def __call__(self, demand: Demand, walltime: float | None) -> bool:
        """Does ``demand`` fit now, for ``walltime``, within the holds?"""
        got = self._asked.get((demand, walltime))
        if got is None:
            got = self._asked[demand, walltime] = self._ask(demand, walltime)
        return got

    def _ask(self, demand: Demand, walltime: float | None) -> bool:
        end = self.profile.now + (walltime if walltime is not None else INF)
        binds = binding(self.holds, end)
        view = self._views.get(binds)
        if view is None or view.stale:
            view = self._refresh(binds, view)
        got = view.answers.get(demand)
        if got is None:
            got = view.answers[demand] = self._fits(view, demand)
        return got

    def _refresh(self, binds: Binds, old: _View | None) -> _View:
        view = self._views[binds] = _View(self.profile.limit_of(self.holds, binds))
        if old is not None and bool(np.all(view.limit <= old.limit)):
            # less room everywhere: what failed for want of cpus still fails
            view.answers = {d: False for d, ok in old.answers.items() if not ok and self._lasting(view, d)}
        return view

    @staticmethod
    def _fits(view: _View, demand: Demand) -> bool:
        if need(demand) > view.total + EPS:
            return False
        return place(view.limit, demand) is not None

    @staticmethod
    def _lasting(view: _View, demand: Demand) -> bool:
        """Does ``demand``, which failed on a larger limit, fail on
        ``view``'s for sure?  One kind of instance: yes (the test of
        :func:`place` it failed, its total or its slots, fails on less);
        several: when :func:`place`'s first tests (the total, the largest
        instance's slots) fail on ``view`` (with less room the greedy order
        of the rest may differ)."""
        items = [(n, c) for n, c in sorted(demand, key=lambda d: -d[1]) if c > EPS]
        if len(items) <= 1 or need(demand) > view.total + EPS:
            return True
        count, cpus = items[0]
        return view.slots_of(cpus) < count
