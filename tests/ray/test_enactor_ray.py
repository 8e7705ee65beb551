"""The EnactorActor on the session Ray cluster: host group actors with owner
policies, a class actor, vetoes repaired by deltas, a dead group."""

from __future__ import annotations

import pytest
import ray

from legionrm.enactor.actor import EnactorActor
from legionrm.hostobj.actor import spawn_class, spawn_host_group
from legionrm.models import (
    ClassSpec,
    DeltaSchedule,
    EnactRequest,
    Holder,
    HostSpec,
    MasterSchedule,
    Placement,
    Resources,
)

pytestmark = pytest.mark.ray
ALICE = Holder(user="alice", class_name="RayFoo")


def host(name: str, deny: bool = False) -> HostSpec:
    return HostSpec(
        name=name,
        attributes={"cpus": 4, "memory_gb": 8},
        policy="DenyUsers" if deny else None,
        policy_args={"names": ["alice"]} if deny else {},
    )


def P(key: str, h: str, group: str) -> Placement:
    return Placement(key=key, class_name="RayFoo", host=h, resources=Resources(cpus=1, memory_gb=1), group=group)


@pytest.fixture
def actors(ray_cluster):
    made = []

    def keep(h):
        made.append(h)
        return h

    yield keep
    for h in made:
        ray.kill(h)


def test_veto_and_start_veto_repaired_by_deltas_on_a_host_group(actors):
    g = keep_group = actors(spawn_host_group("eg1", [host("e1-n1"), host("e1-n2", deny=True), host("e1-n3"), host("e1-n4")]))
    names = ray.get(keep_group.names.remote())
    cls = actors(spawn_class(ClassSpec(name="RayFoo", host_list=("e1-n1", "e1-n3")), hosts={n: g for n in names}))
    enactor = actors(EnactorActor.remote(groups={"eg1": g}, classes={"RayFoo": cls}))
    master = MasterSchedule(
        placements=(P("a", "e1-n1", "eg1"), P("b", "e1-n2", "eg1"), P("c", "e1-n4", "eg1")),
        deltas=(
            DeltaSchedule(placements=(P("b", "e1-n3", "eg1"),)),  # the owner of n2 denies alice
            DeltaSchedule(placements=(P("c", "e1-n3", "eg1"),)),  # the class refuses n4 at create time
        ),
    )
    r = ray.get(enactor.enact_schedule.remote(EnactRequest(request_id="ray1", holder=ALICE, masters=(master,))))
    assert r.ok, r.attempts
    assert {p.key: p.host for p in r.placements} == {"a": "e1-n1", "b": "e1-n3", "c": "e1-n3"}
    assert [(f.key, f.resource, f.code, f.stage) for f in r.attempts[0].failures] == [
        ("b", "e1-n2", "policy.user", "reserve"),
        ("c", "RayFoo", "class.host_list", "start"),
    ]
    assert r.thrash == 0
    running = ray.get(g.list_instances.remote())
    assert sorted(i.host for i in running) == ["e1-n1", "e1-n3", "e1-n3"]
    # every token the result hands back was consumed by exactly one start
    checks = ray.get(g.check_reservations.remote([t.token_id for t in r.host_tokens.values()]))
    assert [c.code for c in checks] == ["token.used"] * 3


def test_dead_group_is_reported_and_a_delta_to_another_group_succeeds(actors):
    dead = actors(spawn_host_group("eg2", [host("e2-n1")]))
    alive = actors(spawn_host_group("eg3", [host("e3-n1")]))
    enactor = actors(EnactorActor.remote(groups={"eg2": dead, "eg3": alive}, deadline_s=5.0))
    ray.kill(dead)
    master = MasterSchedule(
        placements=(P("a", "e2-n1", "eg2"),), deltas=(DeltaSchedule(placements=(P("a", "e3-n1", "eg3"),)),)
    )
    r = ray.get(enactor.enact_schedule.remote(EnactRequest(request_id="ray2", holder=ALICE, masters=(master,), create=False)))
    assert r.ok and r.placements[0].host == "e3-n1"
    f = r.attempts[0].failures[0]
    assert (f.resource, f.code) == ("e2-n1", "resource.dead")


def test_all_masters_fail_and_nothing_stays_reserved(actors):
    g = actors(spawn_host_group("eg4", [host("e4-n1", deny=True), host("e4-n2")]))
    enactor = actors(EnactorActor.remote(groups={"eg4": g}))
    master = MasterSchedule(placements=(P("a", "e4-n2", "eg4"), P("b", "e4-n1", "eg4")))
    r = ray.get(enactor.enact_schedule.remote(EnactRequest(request_id="ray3", holder=ALICE, masters=(master,))))
    assert not r.ok
    assert [(f.key, f.code) for f in r.attempts[0].failures] == [("b", "policy.user")]
    assert r.reservations_released == r.reservations_made == 1
    # the reservation granted on n2 was cancelled at the host: all 4 cpus can be had again
    whole = Placement(key="w", class_name="RayFoo", host="e4-n2", resources=Resources(cpus=4), group="eg4")
    again = EnactRequest(request_id="ray3b", holder=ALICE, masters=(MasterSchedule(placements=(whole,)),), create=False)
    assert ray.get(enactor.enact_schedule.remote(again)).ok
    assert ray.get(g.list_instances.remote()) == []
