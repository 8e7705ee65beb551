"""The planner when a request cannot be placed, and the delta schedules it
offers: every failure names its placements and what refused them, explain
never calls a host "feasible, better hosts sufficed" when there is no
schedule, and a delta never overbooks the spare it moves work to."""

from __future__ import annotations

import pytest

from legionrm.collection.collection import Collection
from legionrm.models import AccessPolicy, Identity, ObjectRequest, SchedulingRequest
from legionrm.models.cluster import HostSpec
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning.declared import DeclaredHosts
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


# --- a host not reporting: waited for when it may take the request, never when it would refuse ----------------

def _declared_fleet() -> tuple[Collection, FakeClock, DeclaredHosts]:
    """n1 (x86, 8 cpus) and n2 (arm, 8 cpus, bob only) as the cluster file declares them, both joined."""
    clock = FakeClock()
    specs = (HostSpec(name="n1", nodepool="a", attributes={"cpus": 8, "memory_gb": 32, "arch": "x86"}),
             HostSpec(name="n2", nodepool="b", attributes={"cpus": 8, "memory_gb": 32, "arch": "arm"},
                      access=AccessPolicy(allow_users=("alice", "bob"), deny_classes=("Batch",))))
    c = Collection(clock=clock)
    for h in specs:
        c.join(host(h.name, access=h.access, nodepool=h.nodepool, **h.attributes))
    return c, clock, DeclaredHosts(specs)


def _silence(c: Collection, clock: FakeClock, how: str) -> None:
    """n2 stops reporting: varied off, stale (n1 still beats), or not held at all (not joined since a restart)."""
    if how == "off":
        c.vary_off("n2")
    elif how == "stale":
        clock.advance(c.stale_window_s + 1)
        c.update("n1")
    else:
        c.leave("n2")


@pytest.mark.parametrize("how", ["off", "stale", "absent"])
@pytest.mark.parametrize(
    "constraint, who, klass, served, waits",
    [
        ('$arch == "arm"', "alice", W, None, "host.unreported"),
        ('$name == "n2"', "bob", W, None, "host.unreported"),
        ('$arch == "sparc"', "alice", W, None, None),  # n2 never matches: no reason to wait
        ('$arch == "arm"', "carol", W, None, None),  # n2 would not accept carol
        ('$arch == "arm"', "alice", "Batch", None, None),  # nor the class Batch
        ('$arch == "arm"', "alice", W, '$nodepool == "a"', None),  # nor does this scheduler serve n2
        ('$arch == "arm"', "alice", W, '$nodepool == "a" or $nodepool == "b"', "host.unreported"),
        ('$arch == "arm"', "alice", W, '$nodepool == "b"', "no_hosts"),  # it serves n2 alone: no host at all now
    ],
    ids=["matches", "by-name", "never-matches", "user-not-accepted", "class-not-accepted", "not-served", "served",
         "serves-it-alone"],
)
def test_a_request_only_a_silent_host_may_take_waits_for_it(how, constraint, who, klass, served, waits) -> None:
    c, clock, declared = _declared_fleet()
    _silence(c, clock, how)
    snap = c.snapshot() if served is None else c.snapshot().served(served)
    request = SchedulingRequest(request_id="r1", identity=Identity(user=who), objects=(
        ObjectRequest(class_name=klass, cpus=1, memory_gb=1, constraint=constraint),))
    plan = Planner(declared=declared).make_schedules(request, snap)
    [f] = plan.failures
    if waits:
        assert (f.code, f.lasting, f.stage) == (waits, False, "plan")
        assert waits == "no_hosts" or ("n2" in f.reason and "n1" not in f.reason.split("may:")[-1])
    else:
        assert f.lasting and f.code in ("query.no_match", "access.denied"), f


def test_a_host_no_cluster_file_declares_is_never_waited_for() -> None:
    c, _, _ = _declared_fleet()
    c.leave("n2")
    request = req(ObjectRequest(class_name=W, cpus=1, constraint='$arch == "arm"'))
    [f] = Planner().make_schedules(request, c.snapshot()).failures
    assert (f.code, f.lasting) == ("query.no_match", True)
