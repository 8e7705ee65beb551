"""scheduleObjects end to end in one process: real host objects, tokens,
owner policies, the Enactor and the planner (no Ray)."""

from __future__ import annotations

import pytest

from legionrm.config import load_cluster
from legionrm.errors import SchedulingError
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.testing import FakeClock

ALICE = Identity(user="alice")
UVA_CPU = '$gpus == 0 and $site == "uva"'


@pytest.fixture
def system() -> LocalSystem:
    return LocalSystem(load_cluster(), clock=FakeClock())


def request(rid: str, *objs: ObjectRequest, who: Identity = ALICE) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=who, objects=objs)


def test_owner_veto_is_repaired_by_a_delta_without_thrashing(system: LocalSystem) -> None:
    r = system.scheduler.scheduleObjects(
        request("r1", ObjectRequest(class_name="Worker", count=2, cpus=12, placement="scatter", constraint=UVA_CPU))
    )
    assert r.ok, r.message
    veto = r.enact.attempts[0].failures[0]
    assert (veto.resource, veto.code) == ("lab1", "policy.load")
    assert r.enact.thrash == 0
    hosts = sorted(i.host for i in r.instances)
    assert "lab1" not in hosts and len(set(hosts)) == 2
    # the instances really run on those hosts, and capacity is charged there
    for inst in r.instances:
        assert inst.instance_id in {i.instance_id for i in system.host(inst.host).list_instances()}
    system.heartbeat()
    for inst in r.instances:
        assert system.collection.retrieve_all_attributes(inst.host)["free_cpus"] == 16 - 12


def test_a_request_that_cannot_fit_reports_why(system: LocalSystem) -> None:
    r = system.scheduler.scheduleObjects(request("r2", ObjectRequest(class_name="Worker", count=1, cpus=999)))
    assert not r.ok
    assert r.failures[0].stage == "plan" and r.failures[0].code == "capacity.total"


def test_class_host_list_is_respected(system: LocalSystem) -> None:
    r = system.scheduler.scheduleObjects(request("r3", ObjectRequest(class_name="Solver", count=1, cpus=4)))
    assert r.ok and r.instances[0].host == "sparc1"  # bigmem is only for the genomics group


def test_access_declared_to_the_collection_hides_hosts(system: LocalSystem) -> None:
    genomics = Identity(user="gina", groups=("genomics",))
    plan = system.scheduler.make_schedules(
        request("r4", ObjectRequest(class_name="Solver", count=1, cpus=24), who=genomics)
    )
    assert plan.masters[0].placements[0].host.startswith("bigmem")
    why = system.scheduler.explain(request("r5", ObjectRequest(class_name="Solver", count=1, cpus=24)), "bigmem1")
    assert "access.denied" in why


def test_sequential_requests_never_double_book(system: LocalSystem) -> None:
    # 20-cpu lab1 + 3 x 16-cpu batch hosts; 8-cpu instances fill them without overbooking
    placed = 0
    for k in range(12):
        r = system.scheduler.scheduleObjects(
            request(f"s{k}", ObjectRequest(class_name="Worker", count=1, cpus=8, constraint='$nodepool == "batch" and $cpus <= 20'))
        )
        system.heartbeat()
        placed += r.ok
    for name in ("lab1", "batch1", "batch2", "batch3"):
        cal = system.host(name).calendar
        assert (cal.usage_at(system.clock()) <= cal.capacity + 1e-9).all()
    assert placed == 1 + 2 * 3  # lab1 takes one (its load ceiling), the batch hosts two each


def test_repeated_request_id_is_refused(system: LocalSystem) -> None:
    system.scheduler.scheduleObjects(request("dup", ObjectRequest(class_name="Worker", count=1, cpus=1)))
    with pytest.raises(SchedulingError, match="dup"):
        system.scheduler.scheduleObjects(request("dup", ObjectRequest(class_name="Worker", count=1, cpus=1)))


def test_empty_request_is_a_clear_error(system: LocalSystem) -> None:
    with pytest.raises(SchedulingError, match="asks for nothing"):
        system.scheduler.scheduleObjects(request("empty"))


def test_get_and_set_return_the_prior_value(system: LocalSystem) -> None:
    s = system.scheduler
    first = s.getEnactor()
    assert s.setEnactor("other") is first and s.getEnactor() == "other"
    coll = s.getCollection()
    assert s.setCollection(coll) is coll
