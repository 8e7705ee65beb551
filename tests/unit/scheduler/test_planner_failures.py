"""The planner when a request cannot be placed, and the delta schedules it
offers: every failure names its placements and what refused them, explain
never calls a host "feasible, better hosts sufficed" when there is no
schedule, and a delta never overbooks the spare it moves work to."""

from __future__ import annotations

import pytest

from legionrm.collection.collection import Collection
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host

ALICE = Identity(user="alice")


def fleet(*sizes: float) -> Collection:
    """Hosts n1, n2, ... with the given cpus (32 GB each)."""
    c = Collection(clock=FakeClock())
    for i, cpus in enumerate(sizes, 1):
        c.join(host(f"n{i}", cpus=cpus, memory_gb=32.0))
    return c


def req(*objs: ObjectRequest) -> SchedulingRequest:
    return SchedulingRequest(request_id="r1", identity=ALICE, objects=objs)


W = "Worker"


@pytest.mark.parametrize(
    "objects, key, code, resource",
    [
        ([ObjectRequest(class_name=W, cpus=1), ObjectRequest(class_name=W, cpus=99)],
         "Worker#1", "capacity.total", "total_capacity"),
        ([ObjectRequest(class_name=W, cpus=1), ObjectRequest(class_name=W, count=3, cpus=99)],
         "Worker#1..3", "capacity.total", "total_capacity"),
        ([ObjectRequest(class_name=W, cpus=1, constraint='$cpus > 100')],
         "Worker#0", "query.no_match", "query"),
        ([ObjectRequest(class_name=W, count=3, cpus=6, placement="pack")],
         "Worker#0..2", "capacity", "what_of"),
        ([ObjectRequest(class_name=W, cpus=1), ObjectRequest(class_name=W, count=3, cpus=8, placement="scatter")],
         "Worker#1..3", "capacity", "what_of"),
    ],
    ids=["second-object-too-big", "a-counted-object-too-big", "no-host-matches",
         "pack-fits-no-host", "scatter-short-of-hosts"],
)
def test_a_plan_failure_names_its_placements_and_what_refused(objects, key, code, resource) -> None:
    plan = Planner().make_schedules(req(*objects), fleet(8, 8).snapshot())
    assert not plan.ok
    [f] = plan.failures
    assert (f.key, f.code, f.resource, f.stage) == (key, code, resource, "plan")


@pytest.mark.parametrize(
    "objects, host, says, never",
    [
        ([ObjectRequest(class_name=W, count=3, cpus=6, placement="pack")],
         "n1", "no schedule", "better-ranked hosts sufficed"),
        ([ObjectRequest(class_name=W, cpus=1), ObjectRequest(class_name=W, cpus=99)],
         "n1", "Worker#1 refused by total_capacity", "better-ranked hosts sufficed"),
        ([ObjectRequest(class_name=W, count=1, cpus=2)], "n3", "delta 2 of master 1", "refused"),
        ([ObjectRequest(class_name=W, count=1, cpus=2)], "n2", "used by master 2", "refused"),
    ],
    ids=["pack-fails-everywhere", "the-other-object-fails", "a-spare-of-a-delta", "used-by-a-later-master"],
)
def test_explain_says_what_became_of_a_feasible_host(objects, host, says, never) -> None:
    why = Planner().make_schedules(req(*objects), fleet(8, 8, 8).snapshot()).why(host)
    assert says in why and never not in why


@pytest.mark.parametrize(
    "sizes, expected",
    [
        ((16, 4), []),
        ((16, 8, 4), [["n2", "n2", "n3"]]),
        ((16, 12), [["n2", "n2", "n2"]]),
    ],
    ids=["spare-holds-one-of-three", "two-spares-hold-three", "spare-holds-all"],
)
def test_one_delta_never_overbooks_the_spares_it_moves_several_objects_to(sizes, expected) -> None:
    # A, B and C (3 cpus each) all land on n1, the biggest host; a delta moves all three
    plan = Planner(max_masters=1).make_schedules(
        req(*(ObjectRequest(class_name=c, cpus=3) for c in "ABC")), fleet(*sizes).snapshot()
    )
    [m] = plan.masters
    assert [p.host for p in m.placements] == ["n1"] * 3
    assert [[p.host for p in d.placements] for d in m.deltas] == expected


@pytest.mark.parametrize(
    "hosts, count, expected",
    [
        (5, 1, [["n2"], ["n3"], ["n4"], ["n5"]]),
        (4, 2, [["n3"], ["n4"]]),
        (3, 3, []),
    ],
    ids=["one-host-used-every-spare-an-alternative", "two-hosts-used-one-spare-each", "no-spare-no-delta"],
)
def test_identical_hosts_give_each_used_host_further_alternatives(hosts, count, expected) -> None:
    plan = Planner(max_masters=1).make_schedules(
        req(ObjectRequest(class_name=W, count=count, cpus=8, placement="scatter")), fleet(*[8] * hosts).snapshot()
    )
    assert [[p.host for p in d.placements] for d in plan.masters[0].deltas] == expected
