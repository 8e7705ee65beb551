"""Masters decided as columns and made models when read (planning.drafts):
what is read is what an eager build makes, each master made once, and the
sequence behaves as the list it stands for."""

from __future__ import annotations

import pickle

import pytest

from legionrm.collection.collection import Collection
from legionrm.models import Identity, MasterSchedule, ObjectRequest, Placement, SchedulingRequest
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning.drafts import LazyMasters
from legionrm.testing import FakeClock, host, vault


def plan_of(*objs: ObjectRequest):
    c = Collection(clock=FakeClock())
    for i in range(12):
        c.join(host(f"n{i:02d}", cpus=8, memory_gb=32.0, host_group=f"g{i % 3}"))
    c.join(vault("v1", storage_gb=100.0, serves="n*"))
    return Planner().make_schedules(SchedulingRequest(request_id="r", identity=Identity(user="u"), objects=objs),
                                    c.snapshot())


TWO = (ObjectRequest(class_name="A", count=3, cpus=2, placement="scatter", storage_gb=1.0),
       ObjectRequest(class_name="B", count=4, cpus=4, placement="free"))


def test_masters_are_valid_models_in_key_order() -> None:
    plan = plan_of(*TWO)
    assert isinstance(plan.masters, LazyMasters) and len(plan.masters) >= 2
    for m in plan.masters:
        assert isinstance(m, MasterSchedule)
        assert [p.key for p in m.placements] == [f"A#{i}" for i in range(3)] + [f"B#{i}" for i in range(4)]
        # the trusted values are what validation would make of them
        assert MasterSchedule.model_validate(m.model_dump()) == m
        assert all(p.vault == "v1" for p in m.placements[:3]) and all(p.group for p in m.placements)
        for d in m.deltas:
            assert d.keys <= {p.key for p in m.placements}
            assert all(Placement.model_validate(p.model_dump()) == p for p in d.placements)


def test_each_master_is_made_once_and_reads_as_a_list() -> None:
    masters = plan_of(*TWO).masters
    n = len(masters)
    assert masters._made == [None] * n  # its length made none
    first = masters[0]
    assert masters[0] is first and masters[-n] is first
    made = list(masters)
    assert masters == made and masters[1:] == made[1:] and tuple(masters) == tuple(made)
    assert masters != made[:-1]
    with pytest.raises(IndexError):
        masters[n]
    again = pickle.loads(pickle.dumps(masters))
    assert type(again) is list and again == made
