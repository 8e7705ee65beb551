"""The reservation calendar: free / busy-later / busy, fits, earliest fit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.hostobj.calendar import BUSY, BUSY_LATER, FREE, SMALL, Calendar


def cal() -> Calendar:
    """4 cpus, 16 GB: one advance reservation of 3 cpus over [100, 200) and
    an overlapping one of 1 cpu over [150, 300)."""
    c = Calendar([4, 16], ("cpus", "memory_gb"))
    c.add("a", [3, 4], 100, 200)
    c.add("b", [1, 4], 150, 300)
    return c


@pytest.mark.parametrize(
    "now, amount, walltime, want",
    [
        (0, None, None, BUSY_LATER),  # nothing now, reservations later
        (0, [2, 1], None, BUSY_LATER),
        (0, [2, 1], 50, BUSY_LATER),  # fits before t=100: still a busy-later resource
        (0, [2, 1], 150, BUSY),  # would run into the 3-cpu reservation at 100
        (120, None, None, BUSY),  # something booked now
        (120, [1, 1], None, BUSY_LATER),  # 1 cpu free now, b starts at 150
        (120, [1, 1], 100, BUSY),  # b starts at 150 and takes the last cpu
        (160, [1, 1], None, BUSY),  # a+b use all 4 cpus
        (250, [3, 1], None, FREE),  # only b (1 cpu) is left, nothing starts later
        (300, None, None, FREE),  # half-open: b ended at 300
    ],
    ids=["idle-early", "fits-early", "fits-before-event", "collides-later", "anything-now",
         "fits-now-busy-later", "walltime-collides", "full", "free-after-a", "after-all"],
)
def test_state(now: float, amount, walltime, want: str) -> None:
    assert cal().state(now, amount, walltime) == want


@pytest.mark.parametrize(
    "amount, start, end, want",
    [
        ([5, 1], 0, 10, "total"),
        ([2, 1], 0, 50, "ok"),
        ([2, 1], 0, 100, "ok"),  # ends exactly when a starts
        ([2, 1], 0, 101, "calendar"),
        ([2, 1], 120, 130, "capacity"),
        ([1, 1], 120, 140, "ok"),
        ([1, 1], 120, 160, "calendar"),
        ([1, 1], 120, None, "calendar"),
        ([3, 1], 200, None, "ok"),
        ([4, 1], 200, None, "capacity"),
    ],
    ids=["too-big", "before", "abutting", "overlap-later", "busy-at-start", "gap", "gap-overrun",
         "open-ended", "after-a", "b-still-there"],
)
def test_check(amount, start: float, end, want: str) -> None:
    assert cal().check(amount, start, end) == want


@pytest.mark.parametrize(
    "amount, start, end, match",
    [
        ([math.nan, 1], 0, 10, "amount"),  # NaN compares false: it would pass every later check
        ([-1, 1], 0, 10, "amount"),  # a negative booking would make room that is not there
        ([math.inf, 1], 0, 10, "overbook"),
        ([1, 1], math.nan, 10, "start"),
        ([1, 1], 0, math.nan, "end"),
        ([1, 1], 10, 10, "after"),
    ],
    ids=["nan-amount", "negative-amount", "infinite-amount", "nan-start", "nan-end", "empty"],
)
def test_add_refuses_what_is_not_a_booking(amount, start, end, match: str) -> None:
    c = cal()
    with pytest.raises(ValueError, match=match):
        c.add("x", amount, start, end)
    assert "x" not in c and c.check([1, 1], 0, 50) == "ok"


def test_add_refuses_to_overbook() -> None:
    c = cal()
    with pytest.raises(ValueError, match="overbook"):
        c.add("x", [1, 1], 120, 160)
    assert "x" not in c and len(c) == 2


def test_usage_peak_and_events() -> None:
    c = cal()
    np.testing.assert_allclose(c.usage_at(160), [4, 8])
    np.testing.assert_allclose(c.peak(0, 1000), [4, 8])
    np.testing.assert_allclose(c.peak(200, 1000), [1, 4])
    assert c.next_event_time(0) == 100
    assert c.next_event_time(100) == 150
    assert c.next_event_time(150) is None


@pytest.mark.parametrize(
    "amount, duration, after, want",
    [
        ([2, 1], 50, 0, 0.0),
        ([2, 1], 150, 0, 200.0),  # waits for a to end; b leaves 3 cpus
        ([4, 1], 101, 0, 300.0),  # the whole host for longer than the gap: after b ends
        ([4, 1], None, 0, 300.0),
        ([5, 1], 10, 0, None),
        ([1, 1], 30, 120, 120.0),
    ],
    ids=["now", "after-a", "whole-host", "open-ended", "never", "in-gap"],
)
def test_earliest_fit(amount, duration, after, want) -> None:
    assert cal().earliest_fit(amount, duration, after) == want


def test_open_ended_booking_blocks_forever() -> None:
    c = Calendar([2])
    c.add("x", [2], 0)
    assert c.get("x").end == math.inf
    assert c.earliest_fit([1], 1, 0) is None
    c.set_end("x", 10)
    assert c.earliest_fit([1], 1, 0) == 10


def test_remove_and_prune() -> None:
    c = cal()
    assert c.remove("a") and not c.remove("a")
    assert c.prune(300) == ["b"] and len(c) == 0


def test_set_end_cannot_overbook() -> None:
    c = Calendar([2])
    c.add("x", [2], 0, 10)
    c.add("y", [2], 10, 20)
    with pytest.raises(ValueError):
        c.set_end("x", 15)
    assert c.get("x").end == 10


def test_a_fit_remembered_for_add_is_forgotten_by_every_change() -> None:
    """check() remembers its last fit for the add() that follows; a booking, a removal or the same
    question asked again after a change must never answer from it (else the guard would overbook)."""
    cal = Calendar([4.0])
    for i in range(4):
        assert cal.check([1.0], 0.0, 10.0) == "ok"
        cal.add(f"b{i}", [1.0], 0.0, 10.0)
    assert cal.check([1.0], 0.0, 10.0) == "capacity"
    with pytest.raises(ValueError, match="overbook"):
        cal.add("b4", [1.0], 0.0, 10.0)
    assert cal.remove("b0") and cal.check([1.0], 0.0, 10.0) == "ok"  # room again: the refusal is not remembered
    assert cal.check([2.0], 0.0, 10.0) == "capacity"
    cal.add("b5", [1.0], 0.0, 10.0)
    assert cal.check([1.0], 0.0, 10.0) == "capacity"
    assert float(cal.usage_at(5.0)[0]) == 4.0 and float(cal.usage_at(5.0)[0]) == 4.0  # asked twice: the same


_times = st.sampled_from([0.0, 10.0, 15.0, 20.0, 30.0, 50.0])
_amounts = st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.3, 1.0, 1.5, 2.0, 4.0]), min_size=2, max_size=2)


@settings(max_examples=300, deadline=None)
@given(bookings=st.lists(st.tuples(_amounts, _times, st.one_of(st.none(), st.sampled_from([5.0, 10.0, 40.0]))),
                         max_size=SMALL),
       amount=_amounts, start=_times, length=st.one_of(st.none(), st.sampled_from([1.0, 5.0, 25.0])))
def test_the_plain_python_check_answers_as_the_numpy_one(bookings, amount, start, length) -> None:
    """A calendar of a few bookings checks in plain Python: the same answer
    (ok, total, capacity, calendar) as the numpy check over the same bookings."""
    c = Calendar([4.0, 4.0])
    for i, (amt, at, dur) in enumerate(bookings):
        if c.check(amt, at, None if dur is None else at + dur) == "ok":
            c.add(f"b{i}", amt, at, None if dur is None else at + dur)
    end = None if length is None else start + length
    cap = [x + 1e-9 for x in c.capacity.tolist()]
    vals, stop = tuple(amount), math.inf if end is None else end
    big = "total" if any(v > k for v, k in zip(vals, cap)) else (
        "ok" if not len(c) else c._check_big(vals, cap, start, stop))
    assert c.check(amount, start, end) == big
    if len(c):
        assert c._check_small(vals, cap, start, stop) == c._check_big(vals, cap, start, stop)


def test_an_amount_read_again_is_read_as_it_is_now() -> None:
    """The calendar keeps the floats of the last tuple of floats it read (a grant checks, then adds,
    one amount); a tuple whose parts can change (0-d arrays) is read again every time."""
    cal = Calendar([4.0, 8.0], ("cpus", "memory_gb"))
    amount = (2.0, 4.0)
    assert cal.check(amount, 0.0, None) == "ok"
    cal.add("a", amount, 0.0, None)
    cal.add("b", amount, 0.0, None)
    assert cal.check(amount, 0.0, None) == "capacity"
    cal = Calendar([4.0, 8.0], ("cpus", "memory_gb"))
    parts = (np.array(2.0), np.array(4.0))
    assert cal.check(parts, 0.0, None) == "ok"
    parts[0][...] = 9.0  # the same tuple, now asking more than the whole capacity
    assert cal.check(parts, 0.0, None) == "total"
    with pytest.raises(ValueError):
        cal.add("c", parts, 0.0, None)


def _meanwhile_nothing(cal: Calendar) -> None:
    pass


def _meanwhile_booked(cal: Calendar) -> None:
    cal.add("other", (3.0, 1.0), 0.0, None)


def _meanwhile_removed(cal: Calendar) -> None:
    cal.remove("held")


def _meanwhile_capacity_cut(cal: Calendar) -> None:
    cal.capacity = np.array([2.0, 8.0])
    cal.capacity.flags.writeable = False


@pytest.mark.parametrize("meanwhile", [_meanwhile_nothing, _meanwhile_booked, _meanwhile_removed, _meanwhile_capacity_cut],
                         ids=["nothing", "a booking", "a removal", "capacity cut"])
@pytest.mark.parametrize("ask", [(2.0, 1.0), (4.0, 1.0), (9.0, 1.0)], ids=["fits", "fits if alone", "over capacity"])
def test_a_checked_booking_is_booked_as_add_books_it(meanwhile, ask) -> None:
    """add_checked after checked (something else done between) books, or raises, exactly as add
    would then: the fit found is trusted only while neither the bookings nor the capacity changed."""
    def calendar() -> Calendar:
        cal = Calendar([4.0, 8.0], ("cpus", "memory_gb"))
        cal.add("held", (1.0, 1.0), 0.0, None)
        return cal

    fast, plain = calendar(), calendar()
    checked = fast.checked(ask, 0.0, 10.0)
    assert checked[0] == plain.check(ask, 0.0, 10.0)
    meanwhile(fast)
    meanwhile(plain)
    errors = []
    for cal, book in ((fast, lambda: fast.add_checked("new", ask, 0.0, 10.0, checked)),
                      (plain, lambda: plain.add("new", ask, 0.0, 10.0))):
        try:
            book()
            errors.append(None)
        except ValueError as exc:
            errors.append(str(exc))
    assert errors[0] == errors[1]
    assert fast.bookings() == plain.bookings()
