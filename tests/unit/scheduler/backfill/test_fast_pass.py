"""The fast pass (:class:`Backfill`) decides exactly what the reference
pass (:class:`ReferenceBackfill`) does: the same starts, on the same cpus,
in the same order, and the same reserved starts; and the sparse shadow
time is the dense one's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.backfill import Backfill, demand_of, walltime_of
from legionrm.scheduler.backfill.profile import INF, Profile, Usage
from legionrm.scheduler.backfill.reference import ReferenceBackfill
from legionrm.scheduler.backfill.synthetic import SIZES, CpuQueue, generate, request
from legionrm.scheduler.requests import Entry

CPUS = st.sampled_from(SIZES)
SHAPE = st.lists(st.tuples(st.integers(1, 6), CPUS), min_size=0, max_size=2).map(tuple)
WALL = st.one_of(st.none(), st.sampled_from([5.0, 10.0, 20.0, 35.0, 60.0, 200.0]))


@st.composite
def queues(draw: st.DrawFn) -> CpuQueue:
    """A few hosts, what runs on them (with ends, some never), and a queue of varied shapes."""
    n = draw(st.integers(1, 6))
    total = np.array(draw(st.lists(st.sampled_from([2.0, 4.0, 8.0]), min_size=n, max_size=n)))
    running, used = [], np.zeros(n)
    for h, c, end in draw(st.lists(st.tuples(st.integers(0, n - 1), CPUS, st.sampled_from(
            [5.0, 10.0, 15.0, 30.0, 50.0, INF])), max_size=12)):
        if used[h] + c <= total[h]:
            used[h] += c
            running.append(Usage((h,), (c,), end))
    foreign = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    free = np.maximum(total - used - foreign, 0.0)
    shapes = draw(st.lists(st.tuples(SHAPE, WALL), min_size=1, max_size=25))
    order = [Entry(request(f"r{i:03d}", f"u{i % 3}", shape, wall), submitted=float(i))
             for i, (shape, wall) in enumerate(shapes)]
    ids = [e.id for e in order]
    refuse = frozenset(draw(st.lists(st.sampled_from(ids), max_size=2)))
    busy = frozenset(draw(st.lists(st.sampled_from(ids), max_size=2))) - refuse
    return CpuQueue(0.0, total, free, running, order, refuse, busy)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(q=queues(), rules=st.sampled_from([("easy", 1), ("easy", 2), ("easy", 3), ("fcfs", 0), ("greedy", 0)]))
def test_the_fast_pass_decides_as_the_reference(q: CpuQueue, rules: tuple[str, int]) -> None:
    fast, slow = q.run(Backfill, *rules), q.run(ReferenceBackfill, *rules)  # type: ignore[arg-type]
    assert fast.started == slow.started
    assert fast.reserved == slow.reserved


@pytest.mark.parametrize("rules", [("easy", 1), ("easy", 2), ("greedy", 0)], ids=["easy-1", "easy-2", "greedy"])
@pytest.mark.parametrize("seed", range(3))
def test_a_generated_queue_passes_alike_pass_after_pass(seed: int, rules: tuple[str, int]) -> None:
    """Three passes, work starting and ending between them; the fast rules keep what they learnt."""
    q = generate(seed, hosts=60, requests=600, ends=25)
    kept = q.rules(Backfill, *rules)  # type: ignore[arg-type]
    for k in range(3):
        fast, slow = q.run(kept), q.run(ReferenceBackfill, *rules)  # type: ignore[arg-type]
        assert (fast.started, fast.reserved) == (slow.started, slow.reserved)
        assert fast.started  # the queue is busy, not full: the comparison covers starts
        q.settle(fast, 0.1, seed=k)


@settings(max_examples=300, deadline=None)
@given(free=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0]), min_size=1, max_size=6),
       ends=st.lists(st.tuples(st.integers(0, 5), CPUS, st.sampled_from([3.0, 7.0, 7.0, 12.0, 40.0])), max_size=10),
       demand=SHAPE, wall=WALL)
def test_the_sparse_shadow_time_is_the_dense_one(free: list[float], ends: list[tuple[int, float, float]],
                                                 demand: tuple[tuple[int, float], ...], wall: float | None) -> None:
    n = len(free)
    p = Profile(0.0, [f"h{i}" for i in range(n)], np.full(n, 8.0), np.array(free),
                [Usage((h % n,), (c,), end) for h, c, end in ends])
    fast, dense = p.reserve(demand, wall), p.reserve_dense(demand, wall)
    assert (fast is None) == (dense is None)
    if fast is not None and dense is not None:
        assert fast[0] == dense[0]
        assert np.array_equal(fast[1], dense[1])


def test_the_shapes_kept_between_passes_are_forgotten_together_with_their_numbers() -> None:
    """A long queue, then a short one: the rules forget the shapes of the
    requests gone and the numbers they answer by together (a shape kept with
    a number given anew would share another shape's answers), and each pass
    decides as the reference."""
    q = generate(7, hosts=40, requests=1500, ends=20)
    kept = q.rules(Backfill, "easy", 2)  # type: ignore[arg-type]
    first = q.run(kept)
    assert (first.started, first.reserved) == (lambda s: (s.started, s.reserved))(q.run(ReferenceBackfill, "easy", 2))
    q.settle(first, 0.3)
    fresh = generate(8, hosts=40, requests=40, ends=20)  # other shapes, numbered anew
    old = [e for e in q.order if e.state == "pending"][:40]  # their shapes numbered first by the long pass
    q.order = [x for pair in zip(old, fresh.order) for x in pair]
    fast, slow = q.run(kept), q.run(ReferenceBackfill, "easy", 2)  # type: ignore[arg-type]
    assert fast.started and (fast.started, fast.reserved) == (slow.started, slow.reserved)
    assert len(kept._own.requests) < 100  # (the long queue's requests were forgotten, and their shapes)
    for slot, r in enumerate(kept._own.requests):  # each request's number is its shape's now
        assert kept._shapes[kept._by_slot[slot]] == (demand_of(r), walltime_of(r))
