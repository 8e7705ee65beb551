"""The preemption rules, pure: who may preempt whom, and which victims the
fair-share order takes (tables, and Hypothesis for the invariants)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from legionrm.scheduler.preempt import Rank, Victim, choose, may_preempt, victim_order
from legionrm.scheduler.preempt.rules import fits_in

SCAV = Rank("scavenger", 0, True)
SCAV_HI = Rank("scavenger-hi", 5, True)
NORMAL = Rank("normal", 0, False)
URGENT = Rank("urgent", 10, False)


@pytest.mark.parametrize("preemptor, victim, may", [
    (NORMAL, SCAV, True),          # non-preemptable takes from preemptable (DUCC: FIXED from FAIR_SHARE)
    (URGENT, SCAV_HI, True),
    (SCAV_HI, SCAV, True),         # higher priority, both preemptable
    (SCAV, SCAV, False),           # equal priority: no
    (SCAV, SCAV_HI, False),        # lower priority: no
    (URGENT, NORMAL, False),       # a non-preemptable request is never a victim
    (SCAV_HI, NORMAL, False),
], ids=["normal-over-scavenger", "urgent-over-scavenger-hi", "higher-preemptable", "equal-preemptable",
        "lower-preemptable", "never-non-preemptable", "preemptable-never-non-preemptable"])
def test_who_may_preempt_whom(preemptor: Rank, victim: Rank, may: bool) -> None:
    assert may_preempt(preemptor, victim) is may


def v(vid: str, host: int, cpus: float, *, rank: Rank = SCAV, factor: float = 1.0, started: float = 0.0) -> Victim:
    return Victim(vid, "u-" + vid, rank, factor, started, (host,), (cpus,))


@pytest.mark.parametrize("victims, first", [
    ([v("old", 0, 4, started=1), v("young", 1, 4, started=9)], "young"),                  # least invested first
    ([v("fair", 0, 4, factor=0.9, started=9), v("rich", 1, 4, factor=0.1, started=1)], "rich"),  # furthest over share
    ([v("hi", 0, 4, rank=SCAV_HI, started=9), v("lo", 1, 4, factor=0.9, started=1)], "lo"),      # lowest QoS first
], ids=["youngest", "lowest-fair-share-factor", "lowest-qos-priority"])
def test_the_fair_share_order_of_victims(victims: list[Victim], first: str) -> None:
    assert victim_order(victims)[0].id == first
    chosen = choose(np.zeros(2), fits_in(((1, 4.0),)), URGENT, victims)
    assert chosen is not None and [x.id for x in chosen[0]] == [first]


@pytest.mark.parametrize("free, victims, demand, want", [
    ([4, 0], [v("a", 1, 4)], ((1, 4.0),), []),                                   # free suffices: nobody
    ([0, 0], [v("a", 0, 4, rank=NORMAL)], ((1, 4.0),), None),                      # only non-preemptable runs
    ([0, 0], [v("a", 0, 2, started=9), v("b", 1, 4, started=1)], ((1, 4.0),), ["b"]),  # the young one does not help
    ([2, 0], [v("a", 0, 2, started=1), v("b", 1, 4, started=9)], ((1, 4.0),), ["b"]),  # one is enough
    ([0, 0], [v("a", 0, 2), v("b", 0, 2, started=5)], ((1, 4.0),), ["b", "a"]),     # two on one host
], ids=["free-suffices", "no-victim-may", "unneeded-given-back", "one-enough", "two-needed"])
def test_victims_are_as_few_as_the_fit_needs(free: list[float], victims: list[Victim], demand: tuple,
                                             want: list[str] | None) -> None:
    got = choose(np.array(free, dtype=float), fits_in(demand), URGENT, victims)
    assert (None if got is None else [x.id for x in got[0]]) == want


victims_st = st.lists(st.builds(
    lambda i, h, c, p, pre, f, t: Victim(f"v{i}", "u", Rank("q", p, pre), f, t, (h,), (c,)),
    st.integers(0, 99), st.integers(0, 3), st.sampled_from([1.0, 2.0, 4.0]), st.integers(0, 3), st.booleans(),
    st.floats(0, 1), st.floats(0, 100)), max_size=8, unique_by=lambda x: x.id)


@given(free=st.lists(st.sampled_from([0.0, 1.0, 2.0, 4.0]), min_size=4, max_size=4), victims=victims_st,
       count=st.integers(1, 3), cpus=st.sampled_from([1.0, 2.0, 4.0]), me=st.sampled_from([NORMAL, URGENT, SCAV_HI]))
def test_invariants_of_the_choice(free: list[float], victims: list[Victim], count: int, cpus: float, me: Rank) -> None:
    fits = fits_in(((count, cpus),))
    got = choose(np.array(free), fits, me, victims)
    if fits(np.array(free)) is not None:
        assert got is not None and got[0] == []  # free capacity suffices: no victim
    if got is None:
        return
    chosen, take = got
    assert all(x.rank.preemptable for x in chosen)  # a non-preemptable request is never a victim
    assert all(may_preempt(me, x.rank) for x in chosen)
    room = np.array(free)
    for x in chosen:
        np.add.at(room, list(x.hosts), x.cpus)
    assert fits(room) is not None and np.all(take <= room + 1e-9)  # the victims make room
    for x in chosen:  # and none of them is needless
        less = room.copy()
        np.add.at(less, list(x.hosts), [-c for c in x.cpus])
        assert fits(less) is None
