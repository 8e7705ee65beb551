"""Preemption of over-entitled leaves: sustained count, revocable first, rank, never non-preemptible."""

from __future__ import annotations

import numpy as np

from legionrm.scheduler.pools.gang import TOTAL
from legionrm.scheduler.pools.respool import (
    PreemptionConfig,
    QueueType,
    ResourcePoolTree,
    TaskState,
)
from legionrm.scheduler.pools.vec import vec
from tests.unit.scheduler.pools.test_respool_support import cfg, gang

CAP = {"cpu": 100, "memory": 1000, "disk": 1000, "gpu": 0}


def loaded(n: int = 2) -> ResourcePoolTree:
    """/a and /b share 100 cpu; /a admits work while /b is idle, then /b's demand arrives."""
    t = ResourcePoolTree(preemption=PreemptionConfig(enabled=True, sustained_over_allocation_count=n))
    t.set_capacity(vec(CAP))
    t.create("/a", cfg(res={"cpu": 20, "memory": 10}, lim=CAP, slack=100))
    t.create("/b", cfg(res={"cpu": 80, "memory": 990}, lim=CAP))
    t.compute_entitlement(CAP, {"cpu": 40})
    t.enqueue(gang("np", {"cpu": 10}, preemptible=False), "/a")
    t.enqueue(gang("lo-old", {"cpu": 10}, priority=1), "/a")
    t.enqueue(gang("lo-new", {"cpu": 10}, priority=1), "/a")
    t.enqueue(gang("hi", {"cpu": 10}, priority=9), "/a")
    t.enqueue(gang("ready", {"cpu": 10}, priority=5), "/a")
    t.enqueue(gang("rev", {"cpu": 30, "memory": 10}, revocable=True), "/a")
    t.compute_entitlement(CAP, {"cpu": 40})
    assert sorted(g.id for g in t.admit_cycle()) == ["hi", "lo-new", "lo-old", "np", "ready", "rev"]
    t.mark_running("lo-old-0", 100.0)
    t.mark_running("lo-new-0", 200.0)
    t.mark_running("hi-0", 50.0)
    t.mark_running("np-0", 10.0)
    t.mark_running("rev-0", 10.0)
    # /b claims its whole reservation; /a's non-revocable memory demand eats the memory its
    # revocable task held: cpu entitlement drops to 20 (50 held), slack memory to 0 (10 held)
    t.add_demand("/b", {"cpu": 80, "memory": 1000})
    t.add_demand("/a", {"memory": 20})
    t.compute_entitlement(CAP, {"cpu": 40})
    return t


def test_nothing_before_the_sustained_count_then_counter_resets() -> None:
    t = loaded(n=3)
    assert t.preemption_candidates() == [] and t.preemption_candidates() == []
    assert t.preemption_candidates() != []
    assert t.get("/a").over_allocation_count == 0


def test_order_revocable_then_ready_then_running_by_priority_and_recency() -> None:
    t = loaded(n=1)
    a = t.get("/a")
    assert a.non_slack_entitlement[0] == 20 and a.alloc[5][0] == 50  # 30 cpu over
    got = [(c.task_id, c.reason) for c in t.preemption_candidates()]
    # the slack side frees memory (slack memory entitlement dropped to 0); then 30 non-slack cpu:
    # READY first, then RUNNING by lower priority, most recent start first; "np" never
    assert got == [("rev-0", "slack"), ("ready-0", "non_slack"), ("lo-new-0", "non_slack"), ("lo-old-0", "non_slack")]


def test_requeue_ready_tasks_and_return_running_ones() -> None:
    t = loaded(n=1)
    a = t.get("/a")
    before = a.alloc[TOTAL].copy()
    cands = t.preemption_candidates()
    kill = t.requeue_preempted(cands)
    assert [c.task_id for c in kill] == ["rev-0", "lo-new-0", "lo-old-0"]
    assert a.queues[QueueType.PENDING].ids() == ["ready-0"]  # a one-task gang, back in pending
    assert a.demand[0] == 10 and np.allclose(a.alloc[TOTAL], before - vec({"cpu": 10}))
    for c in kill:  # the job manager stops them; their allocation goes when they end
        t.release(c.task_id)
    assert a.alloc[TOTAL][0] == 20  # np 10 + hi 10 remain


def test_within_entitlement_resets_counter_and_disabled_does_nothing() -> None:
    t = loaded(n=5)
    t.preemption_candidates()
    assert t.get("/a").over_allocation_count == 1
    t.release(["ready", "lo-old", "lo-new", "rev"])
    t.preemption_candidates()
    assert t.get("/a").over_allocation_count == 0
    off = loaded(n=1)
    off.preemption = PreemptionConfig(enabled=False)
    assert off.preemption_candidates() == []


def test_placing_between_ready_and_running() -> None:
    t = loaded(n=1)
    t.mark_placing("ready-0")
    rec = {r.task.id: r for r in t.admitted_tasks()}
    assert rec["ready-0"].state is TaskState.PLACING
    got = [c.task_id for c in t.preemption_candidates() if c.reason == "non_slack"]
    assert got[0] == "ready-0"
