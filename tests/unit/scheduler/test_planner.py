"""The planner: pipeline, what of, masters and deltas, explanations."""

from __future__ import annotations

import numpy as np
import pytest

from legionrm.collection.collection import Collection
from legionrm.models import (
    AccessPolicy,
    ClassSpec,
    Identity,
    ObjectRequest,
    SchedulingRequest,
)
from legionrm.scheduler.planning.pipeline import HostTable
from legionrm.scheduler.planner import Planner, assign
from legionrm.testing import FakeClock, host, vault

ALICE = Identity(user="alice")
X86 = '$arch == "x86_64"'


def cluster(clock: FakeClock | None = None) -> Collection:
    c = Collection(clock=clock or FakeClock())
    for i in range(1, 5):
        c.join(host(f"n{i}", cpus=8, memory_gb=32.0, arch="x86_64"))
    c.join(host("big", cpus=64, memory_gb=256.0, arch="x86_64"))
    c.join(host("arm", cpus=8, memory_gb=32.0, arch="aarch64"))
    c.join(host("priv", cpus=8, memory_gb=32.0, arch="x86_64", access=AccessPolicy(allow_users=("bob",))))
    c.join(vault("v1", storage_gb=100.0, serves="n*,big"))
    c.join(vault("v2", storage_gb=10.0, serves="arm,priv"))
    return c


def req(*objs: ObjectRequest, rid: str = "r1", user: Identity = ALICE) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=user, objects=objs)


def hosts_of(master) -> list[str]:
    return [p.host for p in master.placements]


@pytest.mark.parametrize(
    "obj, expected",
    [
        (ObjectRequest(class_name="A", count=2, cpus=8, placement="scatter", constraint=X86), ["big", "n1"]),
        (ObjectRequest(class_name="A", count=3, cpus=2, placement="pack", constraint=X86), ["n1", "n1", "n1"]),
        (ObjectRequest(class_name="A", count=3, cpus=4, placement="pack", constraint=X86), ["big", "big", "big"]),
        (ObjectRequest(class_name="A", count=2, cpus=1, constraint='$arch == "aarch64"'), ["arm", "arm"]),
        # exclusive: the placement engine's bucket path chooses (legionrm place would too): the 8-cpu
        # bucket comes first (its first host, arm, is first in node order), one instance per host
        (ObjectRequest(class_name="A", count=2, cpus=4, exclusive=True, constraint=X86), ["n1", "n2"]),
        (ObjectRequest(class_name="A", count=10, cpus=8, constraint=X86), ["big"] * 8 + ["n1", "n2"]),
    ],
    ids=["scatter", "pack-best-fit", "pack-needs-room", "constraint", "exclusive", "free-fills-in-rank-order"],
)
def test_master_one_places_every_instance(obj, expected) -> None:
    plan = Planner().make_schedules(req(obj), cluster().snapshot())
    assert plan.ok
    assert hosts_of(plan.masters[0]) == expected


def test_pack_prefers_the_fullest_host_that_fits() -> None:
    c = cluster()
    c.update("n2", {"free_cpus": 3.0})
    plan = Planner().make_schedules(req(ObjectRequest(class_name="A", count=1, cpus=2, placement="pack")), c.snapshot())
    assert hosts_of(plan.masters[0]) == ["n2"]


def test_masters_are_alternatives_and_deltas_move_one_host_each() -> None:
    plan = Planner(max_masters=3).make_schedules(
        req(ObjectRequest(class_name="A", count=2, cpus=8, placement="scatter", constraint=X86)), cluster().snapshot()
    )
    m1, m2 = plan.masters[0], plan.masters[1]
    assert set(hosts_of(m1)).isdisjoint(hosts_of(m2))
    # one delta per host of the master, then further alternatives while spares last
    assert [d.placements[0].key for d in m1.deltas] == ["A#0", "A#1", "A#0"]
    for d in m1.deltas:
        assert len(d.placements) == 1
        assert d.placements[0].host not in hosts_of(m1)
    # deltas use distinct spares while spares last
    assert len({d.placements[0].host for d in m1.deltas}) == 3


def test_vaults_are_paired_by_what_they_serve() -> None:
    plan = Planner().make_schedules(
        req(ObjectRequest(class_name="A", count=1, cpus=1, constraint='$arch == "aarch64"', storage_gb=5)),
        cluster().snapshot(),
    )
    assert plan.masters[0].placements[0].vault == "v2"


def test_access_and_filters_explain_every_refusal() -> None:
    c = cluster()
    c.update("n1", {"free_cpus": 0.0})
    request = req(ObjectRequest(class_name="A", count=1, cpus=16, constraint='$arch == "x86_64"'))
    plan = Planner().make_schedules(request, c.snapshot())
    assert hosts_of(plan.masters[0]) == ["big"]
    assert "access.denied" in plan.why("priv") and "by query" in plan.why("priv")
    assert "query.no_match" in plan.why("arm")
    assert "total_capacity" in plan.why("n1")
    assert "used by master 1" in plan.why("big")


def test_free_capacity_and_calendar_filters() -> None:
    clock = FakeClock()
    c = cluster(clock)
    c.update("big", {"free_cpus": 1.0})
    c.update("n1", {"next_event": clock.now + 100})
    request = req(ObjectRequest(class_name="A", count=1, cpus=4, walltime_s=600, constraint=X86 + ' and $name != "n2"'))
    plan = Planner().make_schedules(request, c.snapshot())
    assert "free_capacity" in plan.why("big")
    assert "calendar" in plan.why("n1")
    assert hosts_of(plan.masters[0]) == ["n3"]


def test_class_host_list_filter() -> None:
    planner = Planner(classes={"A": ClassSpec(name="A", host_list=("n3", "n4"))})
    plan = planner.make_schedules(req(ObjectRequest(class_name="A", count=2, cpus=1, placement="scatter")),
                                  cluster().snapshot())
    assert sorted(hosts_of(plan.masters[0])) == ["n3", "n4"]
    assert "class_host_list" in plan.why("big")


KNOWN = {"A": ClassSpec(name="A"), "B": ClassSpec(name="B")}


@pytest.mark.parametrize(
    "classes, objects, refused",
    [
        (KNOWN, [ObjectRequest(class_name="Z", count=1, cpus=1)], ["Z#*"]),
        (KNOWN, [ObjectRequest(class_name="A", count=1, cpus=1), ObjectRequest(class_name="Z", count=2, cpus=1),
                 ObjectRequest(class_name="Y", count=1, cpus=1)], ["Z#*", "Y#*"]),
        (KNOWN, [ObjectRequest(class_name="A", count=1, cpus=1), ObjectRequest(class_name="B", count=1, cpus=1)], []),
        ({}, [ObjectRequest(class_name="Z", count=1, cpus=1)], []),
    ],
    ids=["unknown-class", "one-unknown-among-known", "all-known", "planner-without-classes-accepts-any"],
)
def test_unknown_class_is_refused_at_plan(classes, objects, refused) -> None:
    planner = Planner(classes=classes)
    plan = planner.make_schedules(req(*objects), cluster().snapshot())
    assert plan.ok == (not refused)
    unknown = [f for f in plan.failures if f.code == "class.unknown"]
    assert [f.key for f in unknown] == refused
    for f in unknown:
        assert (f.stage, f.resource) == ("plan", "planner")
        assert repr(f.key[:-2]) in f.reason and "known: A, B" in f.reason
    if refused:
        assert "class.unknown" in plan.why("n1") and not plan.masters
        assert planner.candidates(objects[-1], ALICE, cluster().snapshot()) == []


def test_second_object_request_sees_what_the_first_took() -> None:
    plan = Planner().make_schedules(
        req(ObjectRequest(class_name="A", count=1, cpus=64), ObjectRequest(class_name="B", count=1, cpus=8)),
        cluster().snapshot(),
    )
    a, b = plan.masters[0].placements
    assert (a.key, a.host) == ("A#0", "big") and b.host != "big"


def test_impossible_request_fails_at_plan_with_the_reason() -> None:
    plan = Planner().make_schedules(req(ObjectRequest(class_name="A", count=1, cpus=128)), cluster().snapshot())
    assert not plan.ok
    assert plan.failures[0].stage == "plan" and plan.failures[0].code == "capacity.total"


def test_too_many_instances_fail_with_capacity() -> None:
    plan = Planner().make_schedules(
        req(ObjectRequest(class_name="A", count=9, cpus=8, placement="scatter")), cluster().snapshot()
    )
    assert not plan.ok and plan.failures[0].code == "capacity"


def _table(free: list[float]) -> HostTable:
    n = len(free)
    f = np.array(free, float)
    z = np.zeros(n)
    return HostTable(row=np.arange(n), row_names=np.array([f"h{i}" for i in range(n)], object), cpus=np.full(n, 8.0),
                     memory_gb=np.full(n, 64.0), gpus=z, free_cpus=f, free_memory_gb=np.full(n, 64.0), free_gpus=z,
                     load=z, instances=z, next_event=np.full(n, np.inf), risk=z)


@pytest.mark.parametrize(
    "mode, free, count, expected",
    [
        ("free", [2, 2, 8], 5, [0, 0, 1, 1, 2]),
        ("free", [2, 2], 5, None),
        ("pack", [2, 8], 3, [1, 1, 1]),
        ("pack", [2, 2], 3, None),
        ("scatter", [2, 0, 8], 2, [0, 2]),
        ("scatter", [8], 2, None),
        ("free", [], 1, None),
    ],
    ids=["free", "free-short", "pack", "pack-none", "scatter", "scatter-short", "empty"],
)
def test_assign(mode, free, count, expected) -> None:
    assert assign(ObjectRequest(class_name="A", cpus=1, memory_gb=1, placement=mode), _table(free), count) == expected


@pytest.mark.parametrize(
    "groups, expected",
    [
        ({"a": "g1", "b": "g2", "c": "g1", "d": "g2"}, ["g1", "g2", "g1", "g2"]),
        ({"a": "g1", "c": "g1"}, ["g1", None, "g1", None]),
        ({"a": 7, "b": "g2", "c": True}, ["7", "g2", "True", None]),
        ({}, [None, None, None, None]),
    ],
    ids=["strings", "some-name-none", "not-a-string-read-as-text", "no-column"],
)
def test_each_placement_carries_its_hosts_group(groups: dict, expected: list) -> None:
    """A placement's host group is its host's ``host_group`` as text (None: it names
    none), in a master and in the deltas that move its instances to spares alike."""
    c = Collection(clock=FakeClock())
    for name in "abcd":
        extra = {"host_group": groups[name]} if name in groups else {}
        c.join(host(name, cpus=8, memory_gb=32.0, **extra))
    plan = Planner(max_masters=2).make_schedules(
        req(ObjectRequest(class_name="A", count=2, cpus=8, placement="scatter")), c.snapshot())
    want = dict(zip("abcd", expected))
    placements = [p for m in plan.masters for p in (*m.placements, *(q for d in m.deltas for q in d.placements))]
    assert len({p.host for p in placements}) == 4
    assert all(p.group == want[p.host] for p in placements)
