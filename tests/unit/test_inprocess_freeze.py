"""LocalSystem.freeze: opt-in, what the build made leaves the collector's generations, the system works on."""

from __future__ import annotations

import gc

import pytest

from legionrm.inprocess import LocalSystem
from legionrm.models import ClassSpec, ClusterSpec, HostSpec, Identity, ObjectRequest, ResourceRecord, SchedulingRequest


@pytest.fixture
def unfrozen():
    """Leave the process as it was: nothing frozen before the test, nothing after it."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def _system() -> LocalSystem:
    return LocalSystem(ClusterSpec(hosts=tuple(HostSpec(name=f"h{i}", attributes={"cpus": 8, "memory_gb": 16})
                                               for i in range(4)), classes=(ClassSpec(name="Worker"),)))


def _tracked(obj: object) -> bool:
    """Is ``obj`` in one of the collector's generations (not frozen)?"""
    return any(o is obj for o in gc.get_objects())


def test_building_a_system_freezes_nothing(unfrozen) -> None:
    system = _system()
    assert gc.get_freeze_count() == 0
    assert _tracked(system.collection)


def test_freeze_moves_the_built_system_out_of_the_collector_and_it_still_schedules(unfrozen) -> None:
    system = _system()
    frozen = system.freeze()
    assert 0 < gc.get_freeze_count() <= frozen  # (a frozen object freed since leaves the count)
    assert not _tracked(system.collection) and not _tracked(system.host("h0"))
    r = system.scheduler.scheduleObjects(SchedulingRequest(request_id="r1", identity=Identity(user="u"), objects=(
        ObjectRequest(class_name="Worker", count=4, cpus=2, memory_gb=2, placement="scatter"),)))
    assert r.ok and len(r.instances) == 4
    assert len({ref.token_id for g in system.groups.values() for ref in g.list_instances()}) == 4
    assert any(o is r for o in gc.get_objects())  # made after the freeze: the collector sees it


def _young_records() -> int:
    """Collection records in the collector's young generations."""
    return sum(type(o) is ResourceRecord for gen in (0, 1) for o in gc.get_objects(generation=gen))


@pytest.mark.parametrize("freeze", [True, False], ids=["frozen: the heartbeat collects", "not frozen: it does not"])
def test_a_frozen_systems_heartbeat_leaves_no_records_in_the_young_generations(unfrozen, freeze: bool) -> None:
    system = _system()
    if freeze:
        system.freeze()
    gc.collect()
    system.heartbeat()  # every host's record replaced
    assert system.frozen is freeze
    assert (_young_records() == 0) is freeze
    assert system.collection.record("h0").name == "h0"  # (the heartbeat replaced it: still there)
