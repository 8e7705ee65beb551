"""The enactor core on real hostobj cores (signed tokens, calendars, policies) in process."""

from __future__ import annotations

from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakeClock
from legionrm.enactor.ports import InProcessPort
from legionrm.hostobj import ClassObject, DenyUsers, HostGroup, HostObject, VaultObject
from legionrm.models import (
    DeltaSchedule,
    EnactRequest,
    Holder,
    MasterSchedule,
    Placement,
    Refusal,
    Resources,
)

ALICE = Holder(user="alice", class_name="Foo")


class NoStartsOnFridays(HostObject):
    """An owner who accepts reservations but vetoes every start."""

    def admit_start(self, token, class_name):
        return Refusal(code="policy.start", reason="no starts today")


def world(clock):
    hosts = [
        HostObject("n1", Resources(cpus=4, memory_gb=8), clock=clock),
        HostObject("n2", Resources(cpus=4, memory_gb=8), clock=clock, policy=DenyUsers(["alice"])),
        HostObject("n3", Resources(cpus=4, memory_gb=8), clock=clock),
        NoStartsOnFridays("n4", Resources(cpus=4, memory_gb=8), clock=clock),
    ]
    group = HostGroup("g0", hosts)
    vault = VaultObject("v1", Resources(storage_gb=100), clock=clock)
    foo = ClassObject("Foo", hosts=lambda name: group if name in group else None, vaults={"v1": vault})
    return group, vault, foo, InProcessPort.of([group, vault], [foo])


def P(key, host, vault=None):
    return Placement(key=key, class_name="Foo", host=host, vault=vault, resources=Resources(cpus=2, storage_gb=1), group="g0")


def live(group, vault):
    return {t.token_id for t in vault.reservations()} | {t.token_id for h in group.names() for t in group.get(h).reservations()}


def test_owner_veto_repaired_by_delta_with_real_signed_tokens():
    clock = FakeClock()
    group, vault, foo, gw = world(clock)
    master = MasterSchedule(
        placements=(P("Foo#0", "n1", "v1"), P("Foo#1", "n2")),
        deltas=(DeltaSchedule(placements=(P("Foo#1", "n3"),)),),
    )
    r = Enactor(gw, clock=clock).enact_schedule(EnactRequest(request_id="q", holder=ALICE, masters=(master,)))
    assert r.ok and r.thrash == 0 and r.reservations_released == 0
    f = r.attempts[0].failures[0]
    assert (f.key, f.resource, f.code) == ("Foo#1", "n2", "policy.user")
    assert sorted(i.host for i in r.instances) == ["n1", "n3"]
    assert all(t.signature for t in r.host_tokens.values())
    assert {i.instance_id for i in foo.list_instances()} == {i.instance_id for i in r.instances}
    assert live(group, vault) == {t.token_id for t in [*r.host_tokens.values(), *r.vault_tokens.values()]}


def test_start_veto_on_a_real_host_then_delta():
    clock = FakeClock()
    group, vault, foo, gw = world(clock)
    master = MasterSchedule(placements=(P("Foo#0", "n4"),), deltas=(DeltaSchedule(placements=(P("Foo#0", "n1"),)),))
    r = Enactor(gw, clock=clock).enact_schedule(EnactRequest(request_id="q", holder=ALICE, masters=(master,)))
    assert r.ok and [i.host for i in r.instances] == ["n1"]
    assert [(f.resource, f.code, f.stage) for f in r.attempts[0].failures] == [("n4", "policy.start", "start")]
    assert group.get("n4").reservations() == []  # the vetoing host's reservation was cancelled


def test_failure_leaves_nothing_reserved_on_real_hosts():
    clock = FakeClock()
    group, vault, foo, gw = world(clock)
    master = MasterSchedule(placements=(P("Foo#0", "n1", "v1"), P("Foo#1", "n2"), P("Foo#2", "nX")))
    r = Enactor(gw, clock=clock).enact_schedule(EnactRequest(request_id="q", holder=ALICE, masters=(master,)))
    assert not r.ok
    assert {(f.key, f.code) for f in r.attempts[0].failures} == {("Foo#1", "policy.user"), ("Foo#2", "resource.unknown")}
    assert live(group, vault) == set() and foo.list_instances() == []
