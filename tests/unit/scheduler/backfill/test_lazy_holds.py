"""A pass works the blocked requests' reservations out only when a try needs them: a request that
fails whatever the holds (:meth:`Fits.surely_not`) is refused without them, and the reserved starts
of a pass that never needed them are worked out when :attr:`Backfill.reserved` is read.  What the
pass starts and reserves is the reference's (also checked at large in ``test_fast_pass``)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.backfill import Backfill
from legionrm.scheduler.backfill.fits import Fits
from legionrm.scheduler.backfill.profile import INF, Profile, Usage
from legionrm.scheduler.backfill.reference import ReferenceBackfill
from legionrm.scheduler.backfill.synthetic import SIZES, CpuQueue, request
from legionrm.scheduler.requests import Entry

CPUS = st.sampled_from(SIZES)
SHAPE = st.lists(st.tuples(st.integers(1, 6), CPUS), min_size=1, max_size=2).map(tuple)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(free=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, 8.0]), min_size=1, max_size=6),
       ends=st.lists(st.tuples(st.integers(0, 5), CPUS, st.sampled_from([3.0, 7.0, 12.0, 40.0])), max_size=10),
       blocked=SHAPE, demand=SHAPE, wall=st.sampled_from([None, 2.0, 5.0, 10.0, 50.0]))
def test_a_shape_surely_not_fitting_fits_under_no_holds(free: list[float], ends: list[tuple[int, float, float]],
                                                       blocked: tuple[tuple[int, float], ...],
                                                       demand: tuple[tuple[int, float], ...], wall: float | None) -> None:
    """surely_not: no holds at all, or those of a reservation, can make it fit."""
    n = len(free)
    p = Profile(0.0, [f"h{i}" for i in range(n)], np.full(n, 8.0), np.array(free),
                [Usage((h % n,), (c,), end) for h, c, end in ends])
    if not Fits(p, []).surely_not(demand):
        return
    assert not p.fits_now(demand, wall)
    found = p.copy().shadow(blocked, 10.0)
    if found is not None:
        hold = p.copy().holding("top", found.start, found.take, found.start + 10.0)
        assert not p.fits_now(demand, wall, [hold])


def _queue(shapes: list[tuple[tuple[tuple[int, float], ...], float | None]], free: list[float]) -> CpuQueue:
    total = np.full(len(free), 8.0)
    running = [Usage((h,), (8.0 - f,), 20.0 + 10 * h) for h, f in enumerate(free) if f < 8.0]
    order = [Entry(request(f"r{i:03d}", "u", shape, wall), submitted=float(i)) for i, (shape, wall) in enumerate(shapes)]
    return CpuQueue(0.0, total, np.array(free), running, order)


class _Counting(Backfill):
    searches = 0

    def _search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        type(self).searches += 1
        return super()._search(*args, **kwargs)


def test_a_pass_where_nothing_fits_works_no_reservation_out_until_read() -> None:
    """The head needs 16 cpus, 2 are free, the rest need 4 each: nothing can start whatever the holds."""
    q = _queue([(((2, 8.0),), 30.0), (((1, 4.0),), 5.0), (((2, 2.0),), 5.0)], [0.0, 2.0])
    rules = q.rules(_Counting)
    _Counting.searches = 0
    rules.walk(q.order, q._attempt)
    assert _Counting.searches == 0 and rules.blocked == ("r000",)
    assert rules.reserved == q.run(ReferenceBackfill).reserved == {"r000": 30.0}
    assert _Counting.searches == 1
    assert rules.reserved == {"r000": 30.0} and _Counting.searches == 1  # (worked out once)


def test_a_try_that_may_fit_works_the_reservation_out_first() -> None:
    """A 2-cpu request fits in the 2 free cpus but runs past the head's start: the holds are needed, and keep it out."""
    q = _queue([(((2, 8.0),), 30.0), (((1, 2.0),), 50.0), (((1, 2.0),), 5.0)], [0.0, 2.0])
    rules = q.rules(_Counting)
    _Counting.searches = 0
    fast, slow = q.run(rules), q.run(ReferenceBackfill)
    assert _Counting.searches == 1
    assert (fast.started, fast.reserved) == (slow.started, slow.reserved)
    assert [s[0] for s in fast.started] == ["r002"]  # it ends by the reserved start; r001 would delay it


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.tuples(SHAPE, st.sampled_from([None, 5.0, 20.0, 60.0])), min_size=1, max_size=12),
       free=st.lists(st.sampled_from([0.0, 1.0, 2.0, 4.0, 8.0]), min_size=1, max_size=5),
       depth=st.integers(1, 3))
def test_the_pass_reads_its_reservations_as_the_reference_finds_them(
        shapes: list[tuple[tuple[tuple[int, float], ...], float | None]], free: list[float], depth: int) -> None:
    q = _queue(shapes, free)
    fast, slow = q.run(Backfill, "easy", depth), q.run(ReferenceBackfill, "easy", depth)
    assert (fast.started, fast.reserved) == (slow.started, slow.reserved)
    assert INF not in fast.reserved.values()
