"""The cpus-over-time profile: shadow times and the cpus kept at them, what
fits now within the holds."""

from __future__ import annotations

import numpy as np
import pytest

from legionrm.scheduler.backfill.profile import Profile, Usage, place


def profile(free: list[float], ends: list[tuple[int, float, float]], total: float = 4) -> Profile:
    """Hosts h0.. with ``total`` cpus, ``free`` now; ``ends``: (host, cpus, end) of what runs."""
    p = Profile(0.0, [f"h{i}" for i in range(len(free))], np.full(len(free), total), np.array(free))
    for h, c, end in ends:
        p.release(Usage((h,), (c,), end))
    return p


@pytest.mark.parametrize("free, ends, demand, wall, start", [
    ([4, 0], [(1, 4, 10)], ((1, 4),), 5, 0.0),                     # fits now
    ([0, 0], [(0, 4, 10), (1, 4, 20)], ((2, 4),), 5, 20.0),         # both hosts: when the last ends
    ([2, 0], [(0, 2, 30), (1, 4, 20)], ((1, 4),), 5, 20.0),         # the earliest host that frees whole
    ([1, 1], [(0, 3, 10), (1, 3, 15)], ((2, 2),), 5, 10.0),         # 1+1 free now cannot hold a 2-cpu instance
], ids=["now", "all-hosts", "earliest-whole-host", "whole-instances"])
def test_the_shadow_time(free, ends, demand, wall, start) -> None:
    got = profile(free, ends).reserve(demand, wall)
    assert got is not None and got[0] == start


def test_no_reservation_when_nothing_known_frees_enough() -> None:
    assert profile([0], []).reserve(((1, 4),), 5) is None  # what runs has no walltime


def test_the_reservation_takes_the_cpus_busy_now_first() -> None:
    p = profile([2, 0], [(1, 4, 10)])  # h0: 2 free now (and for ever); h1: 4 free at 10
    start, take = p.reserve(((1, 4),), 5)
    assert start == 10.0 and take.tolist() == [0.0, 4.0]  # h1, so h0's free cpus stay for backfilling
    hold = p.holding("big", start, take, start + 5)
    assert hold.spare == {"h0": 2.0, "h1": 0.0}  # h0's other 2 cpus are held for ever (no known end)
    assert p.fits_now(((1, 2),), 100, [hold])  # on h0: it never touches the reserved cpus
    assert not profile([0, 4], [(0, 4, 10)]).fits_now(((1, 4),), 100, [hold])  # h1 would still run at 10
    assert profile([0, 4], [(0, 4, 10)]).fits_now(((1, 4),), 10, [hold])  # but ending by 10 it may


def test_place_takes_whole_instances() -> None:
    assert place(np.array([3.0, 3.0]), ((2, 2),)).tolist() == [2.0, 2.0]
    assert place(np.array([3.0, 1.0]), ((2, 2),)) is None
