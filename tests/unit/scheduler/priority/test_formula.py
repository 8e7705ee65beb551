"""The multifactor formula, the decay of usage and the fair-share factor: tables and invariants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.scheduler.priority import Formula, Group, PendingJob, ShareTree, UsageLedger, Use, Weights, factors, order, rank
from legionrm.scheduler.priority import multifactor
from legionrm.scheduler.priority.multifactor import FEW
from legionrm.scheduler.priority.sharetree import factor
from legionrm.scheduler.priority.usage import decay, decayed_cpu_seconds

DAY = 86_400.0
F = Formula(weights=Weights(qos=1000, fairshare=2000, age=300, size=400), max_age_s=100.0, max_qos_priority=10,
            total_cpus=16)


@pytest.mark.parametrize("job, fs, now, want", [
    (PendingJob("a", "u", 0.0), 1.0, 0.0, 2000),
    (PendingJob("a", "u", 0.0, qos_priority=10), 0.0, 0.0, 1000),
    (PendingJob("a", "u", 0.0, qos_priority=5), 0.0, 0.0, 500),
    (PendingJob("a", "u", 0.0), 0.0, 50.0, 150),
    (PendingJob("a", "u", 0.0), 0.0, 1e9, 300),  # the age factor is full at max_age_s
    (PendingJob("a", "u", 0.0, cpus=8), 0.0, 0.0, 200),
    (PendingJob("a", "u", 0.0, cpus=64), 0.0, 0.0, 400),  # bigger than the cluster: size 1
    (PendingJob("a", "u", 0.0, cpus=16, qos_priority=10), 0.5, 100.0, 1000 + 1000 + 300 + 400),
    (PendingJob("a", "u", 0.0, cpus=16, qos_priority=10, fixed=7), 0.5, 100.0, 7),  # an administrator's priority
    (PendingJob("a", "u", 50.0), 0.0, 0.0, 0),  # submitted "after" now (clocks): no negative age
], ids=["fairshare-only", "top-qos", "half-qos", "half-age", "full-age", "half-size", "size-capped", "all-full",
        "fixed", "no-negative-age"])
def test_the_formula(job: PendingJob, fs: float, now: float, want: float) -> None:
    f = factors(job, fs, now, F)
    assert f.priority == pytest.approx(want)
    assert all(0.0 <= x <= 1.0 for x in (f.qos, f.fairshare, f.age, f.size))
    assert f.fixed == (job.fixed is not None)


def test_no_qos_priorities_and_no_cpus_mean_those_factors_are_zero() -> None:
    f = factors(PendingJob("a", "u", 0.0, cpus=4, qos_priority=0), 1.0, 0.0, Formula(total_cpus=0))
    assert (f.qos, f.size) == (0.0, 0.0)


jobs = st.lists(st.builds(
    PendingJob, id=st.text("abc", min_size=1, max_size=3), user=st.sampled_from(["u1", "u2", "u3"]),
    submitted=st.floats(0, 200), cpus=st.sampled_from([0.0, 1.0, 4.0, 32.0]), qos_priority=st.integers(0, 10),
    fixed=st.none() | st.integers(-5, 5000)), max_size=12, unique_by=lambda j: j.id)
shares = st.dictionaries(st.sampled_from(["u1", "u2", "u3"]), st.floats(0, 1))


@given(jobs, shares, st.randoms(use_true_random=False))
def test_the_order_is_total_and_deterministic(js: list[PendingJob], fs: dict[str, float], rnd) -> None:
    first = rank(js, fs, 150.0, F)
    shuffled = list(js)
    rnd.shuffle(shuffled)
    again = rank(shuffled, fs, 150.0, F)
    assert [f.id for f in first] == [f.id for f in again]  # whatever order they came in
    for a, b in itertools.pairwise(first):  # strictly ordered: no two jobs tie
        assert (-a.priority, a.submitted, a.id) < (-b.priority, b.submitted, b.id)


@given(jobs, shares, st.floats(0, 1000))
def test_the_order_as_columns_is_the_ranks_order(js: list[PendingJob], fs: dict[str, float], now: float) -> None:
    assert [js[i].id for i in order(js, fs, now, F)] == [f.id for f in rank(js, fs, now, F)]


@pytest.mark.parametrize("cpus, start, end, now, half, want", [
    (2, 0, 10, 10, 0, 20),  # no decay: cpu-seconds
    (1, 0, 0, 10, 5, 0),
    (4, 100, 50, 200, 5, 0),  # ends before it starts: nothing
    (1, 0, 100, 50, 0, 50),  # the part after now is not counted
    (1, 0, 1, 1 + 10 * DAY, DAY, 2 ** -10),  # a second's work ten half-lives ago counts ~2^-10
], ids=["no-decay", "empty", "reversed", "future-part", "ten-half-lives"])
def test_decayed_cpu_seconds(cpus, start, end, now, half, want) -> None:
    assert decayed_cpu_seconds(cpus, start, end, now, half) == pytest.approx(want, rel=1e-4)


@given(st.floats(0.1, 64), st.floats(0, 1e6), st.floats(0, 1e6), st.floats(1, 1e7), st.floats(0, 1e6))
def test_decayed_usage_is_at_most_raw_and_ages_like_the_half_life(cpus, start, length, half, later) -> None:
    end = start + length
    now = end + 1.0
    d = decayed_cpu_seconds(cpus, start, end, now, half)
    # bound by the interval as floats hold it: start + length rounds at 1e6, so end - start is not length
    assert 0 <= d <= cpus * (end - start) * (1 + 1e-9) + 1e-9
    assert decayed_cpu_seconds(cpus, start, end, now + later, half) == pytest.approx(decay(d, later, half), rel=1e-6,
                                                                                       abs=1e-9)


def test_the_ledger_ages_what_it_holds_as_if_it_had_read_everything_now() -> None:
    ledger = UsageLedger(half_life_s=DAY)
    ledger.add([Use("u", 4, 0, 3600)], now=3600)
    ledger.usage(3600 + DAY)  # ages it
    got = ledger.usage(3600 + 2 * DAY, [Use("v", 2, 3600 + 2 * DAY - 10, math.inf)])
    assert got["u"].raw == 4 * 3600
    assert got["u"].decayed == pytest.approx(decayed_cpu_seconds(4, 0, 3600, 3600 + 2 * DAY, DAY))
    assert got["v"].raw == 20 and got["v"].decayed == pytest.approx(20, rel=1e-3)


TREE = ShareTree([Group("phys", 3, {"alice": 2, "bob": 1}), Group("bio", 1, {"carol": 1})])


@pytest.mark.parametrize("users, user, want", [
    ((), "alice", 0.75 * 2 / 3), ((), "bob", 0.75 / 3), ((), "carol", 0.25),
    # dave is in no group: in `default` (1 share, as much as bio), alone there
    (("dave",), "alice", 0.6 * 2 / 3), (("dave",), "carol", 0.2), (("dave",), "dave", 0.2),
    (("dave", "erin"), "erin", 0.1)],
    ids=["two-shares-of-three", "one-of-three", "alone-in-a-small-group", "default-dilutes-groups",
         "bio-as-default", "unnamed-user-in-default", "two-in-default"])
def test_normalized_shares(users: tuple[str, ...], user: str, want: float) -> None:
    shares = TREE.norm_shares(users)
    assert shares[user] == pytest.approx(want)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_factor_is_half_at_exactly_ones_share_and_one_for_no_usage() -> None:
    assert factor(0.25, 0.25) == 0.5
    assert factor(0.0, 0.25) == 1.0
    assert factor(0.1, 0.0) == 0.0
    fs = TREE.factors({"alice": 0.0, "bob": 10.0}, ["carol"])
    assert fs["alice"] == 1.0 == fs["carol"] and fs["bob"] < 1.0


usages = st.dictionaries(st.sampled_from(["alice", "bob", "carol", "dave"]), st.floats(0, 1e9), min_size=1)


@given(usages, st.sampled_from(["alice", "bob", "carol", "dave"]), st.floats(0, 1e9))
def test_more_usage_never_raises_a_users_factor(usage: dict[str, float], user: str, more: float) -> None:
    before = TREE.factors(usage, [user])[user]
    after = TREE.factors({**usage, user: usage.get(user, 0.0) + more}, [user])[user]
    assert after <= before + 1e-12
    assert 0.0 <= after <= 1.0


tied = st.lists(st.builds(
    PendingJob, id=st.text("abc", min_size=1, max_size=3), user=st.sampled_from(["u1", "u2"]),
    submitted=st.sampled_from([0.0, 1.0]), cpus=st.sampled_from([0.0, 4.0]), qos_priority=st.sampled_from([0, 10]),
    fixed=st.none() | st.sampled_from([0, 7])), max_size=14, unique_by=lambda j: j.id)


@given(tied, shares)
def test_ties_of_priority_and_submission_go_by_id_in_the_columns_too(js: list[PendingJob], fs: dict[str, float]) -> None:
    assert [js[i].id for i in order(js, fs, 150.0, F)] == [f.id for f in rank(js, fs, 150.0, F)]


_VALUE = st.sampled_from([0.0, -0.0, 1.0, 3.0, 0.5, -2.0, 7.25, 1e9, -1e9, math.inf, math.nan])
_ROW = st.tuples(st.one_of(st.sampled_from([0.0, 10.0, 10.0, 99.5, -5.0, math.nan]), st.floats(-10.0, 1e6)), _VALUE,
                 st.sampled_from([0.0, 5.0, 10.0, 20.0]),
                 st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0.25, 2.0, -1.0, math.nan]), st.floats(0.0, 1.0)),
                 st.sampled_from([math.nan] * 3 + [5.0, -7.0]))
_FORMULAS = st.builds(Formula, st.builds(Weights, *(st.sampled_from([0.0, 1.0, 10_000, 333.3, 0.1]) for _ in range(4))),
                      st.sampled_from([0.0, 100.0, 7 * 86_400.0]), st.sampled_from([0, 10, 3]), st.sampled_from([0.0, 8.0, 7.0]))


@settings(max_examples=400)
@given(st.lists(_ROW, min_size=1, max_size=40), _FORMULAS, st.sampled_from([0.0, 50.0, 1e6, 123.4567]))
def test_the_few_rows_order_in_plain_floats_is_numpys(rows: list[tuple[float, ...]], formula: Formula, now: float) -> None:
    """A few rows are ordered without numpy (up to :data:`multifactor.FEW`): each priority the same number as
    numpy's, and the same order, ties, NaN, infinities and administrators' priorities included."""
    cols = np.array(rows, dtype=float).reshape(len(rows), 5)
    got, want = multifactor._priorities_few(cols.tolist(), now, formula), multifactor.priorities(cols, now, formula)
    assert all(g == w or (g != g and w != w) for g, w in zip(got, want.tolist())), (got, want)
    ids = [f"r{(len(rows) - i) % 7}" for i in range(len(rows))]  # (later rows' ids first, some the same: ties show)
    few = multifactor.order_of(cols, ids.__getitem__, now, formula).tolist()
    try:
        multifactor.FEW = 0
        assert few == multifactor.order_of(cols, ids.__getitem__, now, formula).tolist()
    finally:
        multifactor.FEW = FEW
