"""scheduleObjects with several object requests, activation of existing
objects, and the scheduler's confirmation: the Scheduler core over a
Collection and the Enactor on the scripted fake port (no Ray)."""

from __future__ import annotations

import pytest

from legionrm.collection.collection import Collection
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakePort
from legionrm.models import (
    Identity,
    ObjectRequest,
    ReservationRequest,
    SchedulingRequest,
)
from legionrm.scheduler.wiring import SchedulerPorts, SchedulerSettings, wire
from legionrm.testing import FakeClock, host

ALICE = Identity(user="alice")


class Rig:
    """Three 8-cpu hosts known to the Collection and carried by the fake port."""

    def __init__(self) -> None:
        clock = FakeClock()
        self.collection = Collection(clock=clock)
        for n in ("n1", "n2", "n3"):
            self.collection.join(host(n, cpus=8, memory_gb=32.0))
        self.port = FakePort.of("n1", "n2", "n3", clock=clock)
        self.asked: list[ReservationRequest] = []
        self.port.before_reserve = self.asked.extend
        self.scheduler = wire(SchedulerSettings(), SchedulerPorts(
            collection=self.collection, enactor=lambda approve: Enactor(self.port, clock=clock, approve=approve))
        ).scheduler
        self.enactor = self.scheduler.getEnactor()


def req(rid: str, *objs: ObjectRequest, activate: tuple[str, ...] = ()) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=ALICE, objects=objs, activate=activate)


@pytest.mark.parametrize(
    "objects, durations",
    [
        ([ObjectRequest(class_name="W", cpus=1, walltime_s=60), ObjectRequest(class_name="W", cpus=1, walltime_s=600)],
         {"W#0": 60, "W#1": 600}),
        ([ObjectRequest(class_name="W", cpus=1, walltime_s=60), ObjectRequest(class_name="W", cpus=1)],
         {"W#0": 60, "W#1": None}),
        ([ObjectRequest(class_name="W", cpus=1), ObjectRequest(class_name="W", count=2, cpus=1, walltime_s=30)],
         {"W#0": None, "W#1": 30, "W#2": 30}),
    ],
    ids=["two-walltimes-one-class", "walltime-and-open-ended", "open-ended-then-counted"],
)
def test_each_object_request_reserves_for_its_own_walltime(objects, durations) -> None:
    rig = Rig()
    r = rig.scheduler.scheduleObjects(req("r1", *objects))
    assert r.ok, r.message
    asked = {rq.request_id.split("/")[1]: rq.duration_s for rq in rig.asked}
    assert asked == durations


def test_each_object_request_creates_with_its_own_args() -> None:
    rig = Rig()
    seen: dict[str, dict] = {}
    create = rig.port.create_instances

    def spy(items):
        seen.update({it.key: dict(it.args) for it in items})
        return create(items)

    rig.port.create_instances = spy  # type: ignore[method-assign]
    r = rig.scheduler.scheduleObjects(req(
        "r1", ObjectRequest(class_name="W", cpus=1, args={"role": "head"}),
        ObjectRequest(class_name="W", count=2, cpus=1, args={"role": "worker"}),
    ))
    assert r.ok, r.message
    assert seen == {"W#0": {"role": "head"}, "W#1": {"role": "worker"}, "W#2": {"role": "worker"}}


@pytest.mark.parametrize(
    "activate, with_object, ok, failed",
    [
        (("running",), False, True, []),
        (("ghost",), False, False, ["ghost"]),
        (("running", "ghost"), True, False, ["ghost"]),
        (("running",), True, True, []),
    ],
    ids=["an-active-object-is-reported", "an-unknown-object-fails-by-name", "unknown-among-several-sinks-the-request",
         "activate-alongside-new-objects"],
)
def test_activation_of_existing_objects(activate, with_object, ok, failed) -> None:
    rig = Rig()
    first = rig.scheduler.scheduleObjects(req("r0", ObjectRequest(class_name="W", cpus=1)))
    running = first.instances[0].instance_id
    names = tuple(running if a == "running" else a for a in activate)
    objects = (ObjectRequest(class_name="W", cpus=1),) if with_object else ()
    before = len(rig.port.live())
    r = rig.scheduler.scheduleObjects(req("r1", *objects, activate=names))
    assert r.ok is ok, r.message
    assert [f.key for f in r.failures] == failed
    for f in r.failures:
        assert (f.code, f.stage, f.resource) == ("activate.unknown", "plan", "scheduler") and "ghost" in f.reason
    if ok:
        assert running in {i.instance_id for i in r.instances}
        assert len(r.instances) == 1 + len(objects)
    else:
        assert len(rig.port.live()) == before  # nothing reserved or started for a request that failed


def test_the_scheduler_confirms_the_schedules_of_its_own_requests() -> None:
    rig = Rig()
    seen = []
    approve = rig.scheduler.enactment.approve
    rig.enactor.approve = lambda p: seen.append(p.request_id) or approve(p)
    assert rig.scheduler.scheduleObjects(req("r1", ObjectRequest(class_name="W", count=2, cpus=1))).ok
    assert seen == ["r1"]


@pytest.mark.parametrize(
    "rid, keys, code",
    [
        ("stranger", ("W#0",), "approval.unknown_request"),
        ("r1", ("W#0",), "approval.keys"),
        ("r1", ("W#0", "W#1", "W#2"), "approval.keys"),
    ],
    ids=["a-request-it-is-not-scheduling", "a-placement-missing", "a-placement-too-many"],
)
def test_the_scheduler_declines_what_it_did_not_ask_for(rid, keys, code) -> None:
    from legionrm.models import Placement, ScheduleProposal

    rig = Rig()
    verdicts = []

    def intercept(p: ScheduleProposal):
        bogus = ScheduleProposal(request_id=rid, master=0,
                                 placements=tuple(Placement(key=k, class_name="W", host="n1") for k in keys))
        verdicts.append(rig.scheduler.enactment.approve(bogus))
        return rig.scheduler.enactment.approve(p)

    rig.enactor.approve = intercept
    assert rig.scheduler.scheduleObjects(req("r1", ObjectRequest(class_name="W", count=2, cpus=1))).ok
    [v] = verdicts
    assert not v and v.code == code and v.by == "scheduler"
