"""Invariants of the DUCC core on random clusters (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.fairshare.classes import (
    NodepoolSpec,
    ResourceClassSpec,
    RmSettings,
)
from legionrm.scheduler.fairshare.core import DuccCore

S = RmSettings(quantum_gb=1, expand_by_doubling=False, prediction=False)

cluster = st.fixed_dictionaries({
    "machines": st.lists(st.tuples(st.integers(1, 16), st.sampled_from(["all", "sub"])), min_size=1, max_size=8),
    "jobs": st.lists(
        st.tuples(
            st.sampled_from(["u1", "u2", "u3"]), st.sampled_from(["low", "high", "subc", "fixed"]),
            st.integers(1, 4), st.integers(0, 30), st.booleans(),
        ),
        min_size=1, max_size=10,
    ),
    "cycles": st.integers(1, 4),
})


def build(spec):
    pools = [NodepoolSpec("all"), NodepoolSpec("sub", parent="all")]
    classes = [
        ResourceClassSpec("low", policy="FAIR_SHARE", weight=50, nodepool="all"),
        ResourceClassSpec("high", policy="FAIR_SHARE", weight=100, nodepool="all", default=True),
        ResourceClassSpec("subc", policy="FAIR_SHARE", weight=100, nodepool="sub"),
        ResourceClassSpec("fixed", policy="FIXED_SHARE", nodepool="all"),
    ]
    core = DuccCore(S, pools, classes)
    for i, (mem, pool) in enumerate(spec["machines"]):
        core.add_machine(f"m{i}", mem, pool)
    for i, (user, cls, mem, want, run) in enumerate(spec["jobs"]):
        core.submit(f"j{i}", user, mem, cls=cls, work_items=want, time_per_item_ms=100 if run else 0)
    return core


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_capacity_caps_and_non_preemptable(spec):
    core = build(spec)
    fixed_seen: dict[int, str] = {}
    for _ in range(spec["cycles"]):
        core.confirm_evictions()
        r = core.run_cycle()
        for name, m in core.machines.items():
            assert m.used() <= m.order, name  # never over capacity, evicting shares included
            assert r.machines[name].free >= 0
        for jid, j in core.jobs.items():
            res = r.jobs[jid]
            assert res.processes <= max(res.cap, 0) or res.processes <= res.counted
            assert res.processes <= res.counted or res.evicting == 0
            rc = core.classes.classes[j.cls]
            for s in j.shares.values():
                if not rc.preemptable:
                    assert not s.evicted  # non-preemptable work is never preempted
                    fixed_seen[s.id] = s.machine
                else:
                    pool = core.tree.pools[core.machines[s.machine].nodepool]
                    assert core.tree.pools[rc.nodepool].contains(pool)
            if not rc.preemptable:
                for s in j.shares.values():
                    assert core.machines[s.machine].nodepool == rc.nodepool  # never leaves its pool
    for sid, mname in fixed_seen.items():
        assert sid in core.machines[mname].shares  # still there


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 16), min_size=1, max_size=6),
    st.integers(2, 5),
    st.integers(1, 3),
)
def test_equal_users_within_one_process(machines, nusers, order):
    core = DuccCore(S, [], [ResourceClassSpec("normal", policy="FAIR_SHARE")])
    for i, mem in enumerate(machines):
        core.add_machine(f"m{i}", mem)
    for u in range(nusers):
        core.submit(f"j{u}", f"user{u}", order, work_items=1000, time_per_item_ms=100)
    r = core.run_cycle()
    counts = [r.jobs[f"j{u}"].counted for u in range(nusers)]
    assert max(counts) - min(counts) <= 1
    assert sum(counts) * order <= sum(m.order for m in core.machines.values())
    got = [r.jobs[f"j{u}"].processes for u in range(nusers)]
    assert got == counts  # nothing was fragmented on a fresh cluster with one order


def test_defrag_never_moves_non_preemptable_work_out_of_its_pool():
    """Regression (found by the invariant above): a FIXED job made needy took a
    pending fair-share share in a subpool by reassignment, and kept it as a
    preemptable share.  Non-preemptable work takes only from its own pool."""
    spec = {
        "machines": [(5, "all"), (16, "sub")],
        "jobs": [("u1", "low", 1, 0, False)] * 7
        + [("u1", "low", 4, 2, False), ("u1", "subc", 1, 1, False), ("u1", "fixed", 4, 3, True)],
    }
    core = build(spec)
    core.run_cycle()
    fixed = core.jobs["j9"]
    assert fixed.shares, "the fixed job still gets its own pool's machine"
    for s in fixed.shares.values():
        assert core.machines[s.machine].nodepool == "all"
        assert s.fixed
