"""Admission on a leaf: queue order, the three admitters, moves out of pending, all-or-nothing, accounting."""

from __future__ import annotations

import numpy as np
import pytest

from legionrm.errors import AdmissionError
from legionrm.scheduler.pools.admission import dequeue_gangs
from legionrm.scheduler.pools.gang import (
    CONTROLLER,
    NON_PREEMPTIBLE,
    NON_SLACK,
    PREEMPTIBLE,
    SLACK,
    TOTAL,
    Gang,
    Task,
)
from legionrm.scheduler.pools.respool import (
    PreemptionConfig,
    QueueType,
    ResourcePoolTree,
)
from legionrm.scheduler.pools.vec import vec
from tests.unit.scheduler.pools.test_respool_support import cfg, gang

CAP = {"cpu": 100, "memory": 1000, "disk": 1000, "gpu": 10}


def tree(res=None, lim=None, *, controller=None, slack=None, slack_cpu=0, enabled=True, limit=1000):  # type: ignore[no-untyped-def]
    """/p (cpu reservation 10 limit 100 by default) alone under a 100-cpu cluster: entitled to all of it."""
    t = ResourcePoolTree(preemption=PreemptionConfig(enabled=enabled), dequeue_limit=limit)
    t.set_capacity(vec(CAP))
    t.create("/p", cfg(res=res or {"cpu": 10, "memory": 100}, lim=lim or CAP, controller=controller, slack=slack))
    return t


def ready(t: ResourcePoolTree, slack_cpu: float = 0) -> ResourcePoolTree:
    t.compute_entitlement(CAP, {"cpu": slack_cpu})
    return t


def queues(t: ResourcePoolTree) -> dict[str, list[str]]:
    p = t.get("/p")
    return {q.value: p.queues[q].ids() for q in QueueType if p.queues[q]}


def ids(gangs: list[Gang]) -> list[str]:
    return [g.id for g in gangs]


def test_priority_then_fifo() -> None:
    t = tree()
    for gid, prio in (("a", 1), ("b", 5), ("c", 1), ("d", 5), ("e", 3)):
        t.enqueue(gang(gid, {"cpu": 1}, priority=prio), "/p")
    ready(t)
    assert ids(t.admit_cycle()) == ["b", "d", "e", "a", "c"]


def test_queues_visited_non_preemptible_controller_revocable_pending() -> None:
    t = tree(controller=50, slack_cpu=50)
    p = t.get("/p")
    # the order they are put in is the reverse of the order they are tried in
    t.enqueue(gang("pend", {"cpu": 1}), "/p")
    for qt, g in (
        (QueueType.REVOCABLE, gang("rev", {"cpu": 1}, revocable=True)),
        (QueueType.CONTROLLER, gang("ctl", {"cpu": 1}, controller=True)),
        (QueueType.NON_PREEMPTIBLE, gang("np", {"cpu": 1}, preemptible=False)),
    ):
        from legionrm.scheduler.pools.admission import add_to_queue

        add_to_queue(p, g, qt)
    ready(t, slack_cpu=50)
    assert ids(t.admit_cycle()) == ["np", "ctl", "rev", "pend"]


def test_entitlement_blocks_head_of_pending() -> None:
    t = tree(lim={"cpu": 30, "memory": 1000, "disk": 1000, "gpu": 10})
    for gid, c in (("a", 20), ("b", 20), ("c", 1)):
        t.enqueue(gang(gid, {"cpu": c}), "/p")
    ready(t)
    assert t.get("/p").non_slack_entitlement[0] == 30
    assert ids(t.admit_cycle()) == ["a"]
    assert queues(t) == {"pending": ["b", "c"]}  # c would fit but waits behind b, by design
    assert t.explain(gang("x", {"cpu": 20}), "/p").code == "respool.entitlement"


def test_gang_all_or_nothing() -> None:
    t = tree(lim={"cpu": 30, "memory": 1000, "disk": 1000, "gpu": 10})
    t.enqueue(gang("g", {"cpu": 20}, {"cpu": 20}), "/p")
    ready(t)
    assert t.admit_cycle() == [] and queues(t) == {"pending": ["g"]}
    assert t.get("/p").alloc[TOTAL].tolist() == [0, 0, 0, 0]


MOVES = [
    # id, flags of the failing gang, preemption enabled, where it ends up
    ("non-preemptible-to-np-queue", {"preemptible": False}, True, "non_preemptible"),
    ("non-preemptible-blocks-when-preemption-off", {"preemptible": False}, False, "pending"),
    ("controller-to-controller-queue", {"controller": True}, True, "controller"),
    ("revocable-to-revocable-queue", {"revocable": True}, True, "revocable"),
    ("np-wins-over-controller", {"preemptible": False, "controller": True}, True, "non_preemptible"),
    ("controller-wins-over-revocable", {"controller": True, "revocable": True}, True, "controller"),
    ("plain-blocks-pending", {}, True, "pending"),
]  # fmt: skip


@pytest.mark.parametrize("flags,enabled,where", [m[1:] for m in MOVES], ids=[m[0] for m in MOVES])
def test_failing_gang_from_pending(flags, enabled, where) -> None:  # type: ignore[no-untyped-def]
    t = tree(enabled=enabled)
    t.enqueue(gang("big", {"cpu": 500, "memory": 1}, **flags), "/p")
    t.enqueue(gang("small", {"cpu": 1}), "/p")
    ready(t)
    admitted = ids(t.admit_cycle())
    q = queues(t)
    if where == "pending":
        assert admitted == [] and q == {"pending": ["big", "small"]}
    else:
        assert admitted == ["small"] and q == {where: ["big"]}
    p = t.get("/p")
    kind = "slack_demand" if flags.get("revocable") else "demand"
    assert getattr(p, kind)[0] == (501 if where == "pending" else 500)  # a move keeps the demand


def test_moved_gang_not_retried_in_same_call_and_special_queue_stops_on_failure() -> None:
    t = tree(res={"cpu": 10, "memory": 100})
    t.enqueue(gang("np1", {"cpu": 8}, preemptible=False), "/p")
    t.enqueue(gang("np2", {"cpu": 8}, preemptible=False), "/p")  # 16 > reservation 10: fails, moves
    t.enqueue(gang("np3", {"cpu": 1}, preemptible=False), "/p")
    ready(t)
    assert ids(t.admit_cycle()) == ["np1", "np3"]
    assert queues(t) == {"non_preemptible": ["np2"]}
    t.enqueue(gang("np4", {"cpu": 2}, preemptible=False), "/p")
    assert ids(t.admit_cycle()) == []  # np2 stays at the head of its queue and stops it
    assert queues(t) == {"non_preemptible": ["np2", "np4"]}  # np4 (9 + 2 > 10) failed from pending and moved


def test_reservation_check_only_with_preemption() -> None:
    for enabled, expected in ((True, []), (False, ["np"])):
        t = tree(res={"cpu": 10, "memory": 100}, enabled=enabled)
        t.enqueue(gang("np", {"cpu": 20}, preemptible=False), "/p")
        ready(t)
        assert ids(t.admit_cycle()) == expected


def test_controller_limit() -> None:
    t = tree(res={"cpu": 50, "memory": 100}, controller=10)  # controller limit cpu 5
    for gid in ("c1", "c2", "c3"):
        t.enqueue(gang(gid, {"cpu": 2}, controller=True), "/p")
    t.enqueue(gang("multi", {"cpu": 4, "controller": True}, {"cpu": 4, "controller": True}), "/p")
    ready(t)
    assert ids(t.admit_cycle()) == ["c1", "c2", "multi"]  # a 2-task gang is never a controller gang
    assert queues(t) == {"controller": ["c3"]}
    assert t.get("/p").alloc[CONTROLLER][0] == 12  # but its tasks count in the controller account
    assert t.explain(gang("c4", {"cpu": 2}, controller=True), "/p").code == "respool.controller_limit"


def test_no_controller_limit_means_no_check() -> None:
    t = tree()
    t.enqueue(gang("c", {"cpu": 90}, controller=True), "/p")
    ready(t)
    assert ids(t.admit_cycle()) == ["c"]


def test_revocable_uses_slack_entitlement() -> None:
    t = tree(res={"cpu": 10, "memory": 100})
    t.enqueue(gang("r1", {"cpu": 20, "memory": 10}, revocable=True), "/p")
    t.enqueue(gang("r2", {"cpu": 20, "memory": 15}, revocable=True), "/p")  # memory slack limit is 20 % of 100
    ready(t, slack_cpu=30)
    p = t.get("/p")
    assert p.slack_entitlement[0] == 30 and p.slack_entitlement[1] == 20
    assert ids(t.admit_cycle()) == ["r1"]
    assert queues(t) == {"revocable": ["r2"]}
    assert p.alloc[SLACK].tolist() == [20, 10, 0, 0] and p.alloc[NON_SLACK].tolist() == [0, 0, 0, 0]


def test_dequeue_limit_counts_skips() -> None:
    t = tree(limit=2)
    t.enqueue(gang("big", {"cpu": 500}, revocable=True), "/p")
    for gid in ("a", "b", "c"):
        t.enqueue(gang(gid, {"cpu": 1}), "/p")
    ready(t)
    assert ids(t.admit_cycle()) == ["a"]  # the move of big used one of the two tries
    assert ids(t.admit_cycle()) == ["b", "c"]


def test_invalid_tasks_dropped_survivors_to_tail() -> None:
    t = tree()
    t.enqueue(gang("g", {"cpu": 1}, {"cpu": 2}), "/p")
    t.enqueue(gang("h", {"cpu": 4}), "/p")
    t.invalidate_task("g-0", "/p")
    p = t.get("/p")
    ready(t)
    dequeue_gangs(p, 1)  # one try: the cleanup uses it
    assert queues(t) == {"pending": ["h", "g"]} and p.demand[0] == 6
    assert [x.id for x in p.queues[QueueType.PENDING].head(2)[1].tasks] == ["g-1"]
    assert ids(t.admit_cycle()) == ["h", "g"]


def test_accounting_through_enqueue_admit_release() -> None:
    t = tree(res={"cpu": 50, "memory": 500})
    g = Gang("g", (
        Task("t1", cpu=2, memory=10, preemptible=False),
        Task("t2", cpu=3, memory=20, controller=True),
        Task("t3", cpu=4, memory=30, revocable=True),
    ))  # fmt: skip
    t.enqueue(g, "/p")
    p = t.get("/p")
    assert p.demand.tolist() == [9, 60, 0, 0] and p.slack_demand.tolist() == [0, 0, 0, 0]  # classified by task 0
    ready(t)
    assert ids(t.admit_cycle()) == ["g"]
    assert p.demand.tolist() == [0, 0, 0, 0]
    expect = {TOTAL: [9, 60], NON_PREEMPTIBLE: [2, 10], PREEMPTIBLE: [7, 50], CONTROLLER: [3, 20], SLACK: [4, 30], NON_SLACK: [5, 30]}
    assert {k: p.alloc[k][:2].tolist() for k in expect} == expect
    assert t.release("t3") == 1 and p.alloc[SLACK].tolist() == [0, 0, 0, 0]
    assert t.release(g) == 2 and np.all(p.alloc == 0)
    assert t.release(g) == 0  # idempotent


def test_cancel_and_errors() -> None:
    t = tree()
    t.create("/p/q", cfg(res={"cpu": 1}, lim={"cpu": 1}))
    with pytest.raises(AdmissionError, match="resource pool /p is not a leaf node"):
        t.enqueue(gang("x"), "/p")
    with pytest.raises(AdmissionError, match="limit 0 is not valid"):
        dequeue_gangs(t.get("/p/q"), 0)
    with pytest.raises(AdmissionError, match="gang has no elements"):
        Gang("empty", ())
    t.enqueue(gang("x", {"cpu": 1}), "/p/q")
    with pytest.raises(AdmissionError, match="already queued"):
        t.enqueue(gang("x", {"cpu": 1}), "/p/q")
    assert t.cancel("x") and t.get("/p/q").demand[0] == 0 and not t.cancel("x")


def test_default_pool_is_root_while_it_is_a_leaf() -> None:
    t = ResourcePoolTree()
    t.enqueue(gang("g", {"cpu": 1}))
    t.compute_entitlement({"cpu": 4})
    assert ids(t.admit_cycle()) == ["g"]


def test_request_to_gang() -> None:
    from legionrm.models import Identity, ObjectRequest, SchedulingRequest
    from legionrm.scheduler.pools.respool import gang_from_request

    req = SchedulingRequest(request_id="r1", identity=Identity(user="u"), pool="/p", objects=(
        ObjectRequest(class_name="W", count=2, cpus=2, memory_gb=1, gpus=1, priority=4),
        ObjectRequest(class_name="W", count=1, cpus=1, memory_gb=0.5, storage_gb=2),
    ))  # fmt: skip
    g = gang_from_request(req)
    assert g.id == "r1" and g.task_ids == ("r1/W#0", "r1/W#1", "r1/W#2")
    assert g.need.tolist() == [5, 2560, 2048, 2] and g.priority == 4


@pytest.mark.parametrize(
    "queued_first, task, invalid, expected, still_queued",
    [
        (False, {"cpu": 30}, False, None, []),
        (True, {"cpu": 30}, False, None, ["ahead"]),  # does not wait behind the gang queued ahead
        (False, {"cpu": 101}, False, "respool.entitlement", ["g"]),
        (False, {"cpu": 30}, True, "respool.invalid", ["g"]),
    ],
    ids=["admitted", "jumps-the-queue", "refused-stays-queued", "killed-task-dropped"],
)
def test_admit_now_one_gang(queued_first, task, invalid, expected, still_queued) -> None:
    t = tree()
    if queued_first:
        t.enqueue(gang("ahead", {"cpu": 90}), "/p")
    t.enqueue(gang("g", task, task), "/p")
    if invalid:
        t.invalidate_task("g-0", "/p")
    ready(t)
    got = t.admit_now("g")
    assert (None if got is None else got.code) == expected
    assert sorted(g for q in queues(t).values() for g in q) == still_queued
    if expected is None:
        assert t.get("/p").alloc[TOTAL][0] == 2 * task["cpu"] and t.release("g") == 2
    else:
        assert got.by == "/p" and t.get("/p").alloc[TOTAL][0] == 0


def test_admit_now_needs_a_queued_gang() -> None:
    with pytest.raises(AdmissionError, match="not queued"):
        tree().admit_now("nobody")
