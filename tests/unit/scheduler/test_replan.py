"""A new schedule when every master fails (Legion: the Enactor reports the
failure and the Scheduler may build new schedules): the Scheduler plans once
more, avoiding the hosts that refused, up to the request's ``replans``."""

from __future__ import annotations

from legionrm.hostobj.policies import Policy
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    SchedulerSettings,
    SchedulingRequest,
)
from legionrm.scheduler.planning.pipeline import AvoidFilter, HostTable, PlanContext
from legionrm.testing import FakeClock


class VetoStart(Policy):
    """Admits every reservation, then refuses the start: nothing the planner can see."""

    def admit_start(self, host, token, class_name):
        return self.refuse(host, "policy.test", "this host refuses every start")


class VetoReserve(Policy):
    def admit_reservation(self, host, request):
        return self.refuse(host, "policy.test", "this host refuses every reservation")


def system() -> LocalSystem:
    """h0 is the biggest (ranked first) but its owner refuses every start; the planner
    makes one master and no deltas, so only a fresh plan can help."""
    spec = ClusterSpec(
        hosts=(HostSpec(name="h0", attributes={"cpus": 8, "memory_gb": 16}, policy="tests.unit.scheduler.test_replan:VetoStart"),
               HostSpec(name="h1", attributes={"cpus": 4, "memory_gb": 16})),
        classes=(ClassSpec(name="W"),),
    )
    return LocalSystem(spec, clock=FakeClock(), settings=SchedulerSettings(cluster=spec, max_masters=1, max_deltas=0))


def req(rid: str, replans: int = 1) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="alice"), wait=False, replans=replans,
                             objects=(ObjectRequest(class_name="W", cpus=4, memory_gb=1),))


def test_the_first_plan_uses_the_host_that_vetoes() -> None:
    s = system()
    plan = s.scheduler.make_schedules(req("r"))
    assert [p.host for p in plan.masters[0].placements] == ["h0"]


def test_all_masters_failed_then_a_fresh_plan_avoiding_the_vetoing_host_succeeds() -> None:
    s = system()
    r = s.scheduler.scheduleObjects(req("r"))
    assert r.ok, r.message
    assert [i.host for i in r.instances] == ["h1"]
    info = s.scheduler.request_info("r")
    assert any("re-plan 1" in e.reason and "h0" in e.reason for e in info.history)


def test_no_replans_asked_fails_with_the_vetoes() -> None:
    s = system()
    r = s.scheduler.scheduleObjects(req("r", replans=0))
    assert not r.ok and r.state == "failed"
    assert [(f.resource, f.code, f.stage) for f in r.failures] == [("VetoStart@h0", "policy.test", "start")]


def test_when_the_fresh_plan_fails_too_every_master_of_every_plan_is_reported() -> None:
    s = system()
    s.host("h1").policy = VetoReserve()  # now h1 refuses too
    r = s.scheduler.scheduleObjects(req("r", replans=3))
    assert not r.ok
    assert r.enact is not None and len(r.enact.attempts) == 2  # the first plan's master, then the re-plan's
    assert [f.resource for f in r.failures] == ["VetoStart@h0", "h1"]
    assert r.state == "failed"


def test_avoid_filter_drops_only_the_named_hosts() -> None:
    import numpy as np
    names = np.array(["a", "b", "c"], dtype=object)
    z = np.zeros(3)
    table = HostTable(row=np.arange(3), row_names=names, cpus=z, memory_gb=z, gpus=z, free_cpus=z, free_memory_gb=z,
                      free_gpus=z, load=z, instances=z, next_event=z, risk=z)
    ctx = PlanContext(ObjectRequest(class_name="W", avoid_hosts=("b",)), None, 0.0)
    v = AvoidFilter().apply(ctx, table)
    assert v.keep.tolist() == [True, False, True] and v.code == "replan.avoided"
    assert AvoidFilter().apply(PlanContext(ObjectRequest(class_name="W"), None, 0.0), table).keep.all()
