"""Invariants over random trees: entitlement within limits, admission within non-slack entitlement,
and the numpy fast path of admission equal to the one-by-one loop."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.pools import admission
from legionrm.scheduler.pools.gang import NON_PREEMPTIBLE, NON_SLACK, SLACK
from legionrm.scheduler.pools.respool import (
    PreemptionConfig,
    QueueType,
    ResourcePoolTree,
)
from legionrm.scheduler.pools.vec import EPS, KINDS
from tests.unit.scheduler.pools.test_respool_support import cfg, gang

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

kind_vals = st.fixed_dictionaries({k: st.integers(0, 40) for k in KINDS})


@st.composite
def trees(draw):  # type: ignore[no-untyped-def]
    """A random tree of up to 3 levels, with random configs (loaded with force) and demand."""
    t = ResourcePoolTree(preemption=PreemptionConfig(enabled=draw(st.booleans())), dequeue_limit=draw(st.integers(1, 30)))
    paths = ["/"]
    for i in range(draw(st.integers(1, 7))):
        parent = draw(st.sampled_from(paths))
        path = f"{parent.rstrip('/')}/p{i}"
        res = draw(kind_vals)
        extra = draw(kind_vals)
        lim = {k: res[k] + extra[k] for k in KINDS}
        share = draw(st.fixed_dictionaries({k: st.integers(0, 3) for k in KINDS}))
        static = draw(st.booleans())
        ctl = draw(st.none() | st.integers(0, 100))
        t.create(path, cfg(res=res, lim=lim, share=share, static=static, controller=ctl), force=True)
        paths.append(path)
    return t


@st.composite
def workloads(draw, t):  # type: ignore[no-untyped-def]
    leaves = [p.path for p in t.pools(leaf_only=True)]
    n = 0
    for leaf in leaves:
        for _ in range(draw(st.integers(0, 6))):
            ntask = draw(st.integers(1, 3))
            flags = {
                "priority": draw(st.integers(0, 2)),
                "preemptible": draw(st.booleans()),
                "revocable": draw(st.booleans()),
                "controller": draw(st.booleans()),
            }
            tasks = [{k: draw(st.integers(0, 15)) for k in KINDS} for _ in range(ntask)]
            t.enqueue(gang(f"g{n}", *tasks, **flags), leaf)
            n += 1
        if draw(st.booleans()):
            t.add_demand(leaf, draw(kind_vals), slack=draw(st.booleans()))
    cap = draw(kind_vals.map(lambda d: {k: 3 * v for k, v in d.items()}))
    slack = {"cpu": draw(st.integers(0, 60))}
    return cap, slack


@SETTINGS
@given(st.data())
def test_entitlement_never_exceeds_limit(data) -> None:  # type: ignore[no-untyped-def]
    t = data.draw(trees())
    cap, slack = data.draw(workloads(t))
    t.compute_entitlement(cap, slack)
    for p in t.pools():
        assert np.all(p.entitlement <= p.limit + 1e-6), (p.path, p.entitlement, p.limit)
        assert np.all(p.non_slack_entitlement <= p.entitlement + 1e-6)
        assert np.all(np.isfinite(p.slack_entitlement))


@SETTINGS
@given(st.data())
def test_admitted_allocation_within_non_slack_entitlement(data) -> None:  # type: ignore[no-untyped-def]
    t = data.draw(trees())
    cap, slack = data.draw(workloads(t))
    t.compute_entitlement(cap, slack)
    queued = sum(p.queued() for p in t.pools())
    leaf_of = {g.id: p.path for p in t.pools(leaf_only=True) for q in p.queues.values() for g in q}
    admitted = []
    for _ in range(3):
        admitted += t.admit_cycle()
    for p in t.pools(leaf_only=True):
        assert np.all(p.alloc[NON_SLACK] - p.non_slack_entitlement < EPS), p.path
        assert np.all(p.alloc[SLACK] - p.slack_entitlement < EPS), p.path
        if t.preemption.enabled:
            # non-preemptible work stays within the reservation; as upstream, a
            # revocable gang is checked against slack only, even when non-preemptible
            revocable = sum((g.acct[NON_PREEMPTIBLE] for g in admitted if g.revocable and leaf_of[g.id] == p.path),
                            np.zeros(len(KINDS)))
            assert np.all(p.alloc[NON_PREEMPTIBLE] - revocable - p.reservation < EPS), p.path
    # nothing lost: every gang is admitted or still queued; demand equals what is queued
    assert len(admitted) + sum(p.queued() for p in t.pools()) == queued
    t.release([g.id for g in admitted])
    assert all(np.all(np.abs(p.alloc) < 1e-9) for p in t.pools(leaf_only=True))


@SETTINGS
@given(st.data())
def test_fast_path_equals_one_by_one(data) -> None:  # type: ignore[no-untyped-def]
    """Same random workload through the numpy window path and the plain loop: same admissions, same state."""
    seed = data.draw(st.integers(0, 2**31))
    streak = data.draw(st.sampled_from([0, 1, 3]))
    saved = admission._STREAK_FOR_WINDOWS
    admission._STREAK_FOR_WINDOWS = streak  # take the window path early, so it is what runs
    try:
        outs = [_replay(seed, bulk) for bulk in (True, False)]
    finally:
        admission._STREAK_FOR_WINDOWS = saved
    assert outs[0] == outs[1]


def _replay(seed: int, bulk: bool) -> list[object]:
    t = ResourcePoolTree(preemption=PreemptionConfig(enabled=bool(seed % 2)), dequeue_limit=int(seed % 40) + 1)
    t.bulk_admission = bulk
    r = np.random.default_rng(seed)
    t.create("/a", cfg(res={"cpu": 30, "memory": 300}, lim={"cpu": 60, "memory": 600}, controller=20), force=True)
    t.create("/b", cfg(res={"cpu": 10, "memory": 100}, lim={"cpu": 40, "memory": 400}), force=True)
    for i in range(40):
        leaf = "/a" if r.random() < 0.6 else "/b"
        ntask = int(r.integers(1, 3))
        flags = dict(priority=int(r.integers(0, 3)), preemptible=bool(r.random() < 0.7),
                     revocable=bool(r.random() < 0.2), controller=bool(r.random() < 0.2))  # fmt: skip
        tasks = [{"cpu": int(r.integers(0, 8)), "memory": int(r.integers(0, 80))} for _ in range(ntask)]
        t.enqueue(gang(f"g{i}", *tasks, **flags), leaf)
    if r.random() < 0.5:
        t.invalidate_task("g3-0", "/a" if "g3" in t.get("/a").queues[QueueType.PENDING].ids() else "/b")
    t.compute_entitlement({"cpu": 70, "memory": 700}, {"cpu": int(r.integers(0, 20))})
    trace: list[object] = [[g.id for g in t.admit_cycle()] for _ in range(4)]
    trace.append(t.report())
    return trace
