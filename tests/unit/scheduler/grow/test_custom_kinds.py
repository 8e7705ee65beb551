"""GPUs and custom resource kinds (issue 27 item 3), through a whole in-process
system: the planner counts them (total, free, and what one plan already put
on a host), the hosts' calendars never overbook them, MIL sees them, and a
request that no host can take fails at once, or, with an autoscaler, waits
and asks for a node (item 5)."""

from __future__ import annotations

import dataclasses
from typing import Callable

import pytest

from legionrm.inprocess import LocalSystem
from legionrm.models import (
    AutoscalerSpec,
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    SchedulerSettings,
    SchedulingRequest,
)
from legionrm.scheduler.wiring import wire
from legionrm.testing import FakeClock


def system(autoscaler: Callable[[list[dict]], None] | None = None) -> LocalSystem:
    """h-cpu: 8 cpus, no GPU, no tpu; h-gpu: 1 GPU; h-tpu: 2 tpus (a custom kind); with
    ``autoscaler`` (a fake of Ray's request_resources) and ``[autoscaler] enabled``."""
    spec = ClusterSpec(autoscaler=AutoscalerSpec(enabled=autoscaler is not None), hosts=(
        HostSpec(name="h-cpu", attributes={"cpus": 8, "memory_gb": 16}),
        HostSpec(name="h-gpu", attributes={"cpus": 4, "memory_gb": 16, "gpus": 1}),
        HostSpec(name="h-tpu", attributes={"cpus": 4, "memory_gb": 16}, resources={"tpu": 2}),
    ), classes=(ClassSpec(name="W"),))
    s = LocalSystem(spec, clock=FakeClock())
    if autoscaler is not None:  # its scheduler, wired again with the autoscaler's port
        ports = dataclasses.replace(s.scheduler_ports(), autoscaler=autoscaler)
        s.scheduler = wire(SchedulerSettings(cluster=spec), ports).scheduler
    return s


def req(rid: str, count: int = 1, wait: bool = True, **need: object) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="alice"), wait=wait,
                             objects=(ObjectRequest(class_name="W", count=count, cpus=1, memory_gb=1, **need),))


@pytest.mark.parametrize("need, host", [
    pytest.param({"gpus": 1}, "h-gpu", id="a-gpu-request-goes-to-the-gpu-host"),
    pytest.param({"resources": {"tpu": 1}}, "h-tpu", id="a-tpu-request-goes-to-the-tpu-host"),
])
def test_a_request_goes_to_the_host_with_its_kind(need: dict, host: str) -> None:
    s = system()
    r = s.scheduler.scheduleObjects(req("r", **need))
    assert r.ok, r.message
    assert [i.host for i in r.instances] == [host]


def test_one_plan_does_not_put_more_of_a_kind_on_a_host_than_it_has() -> None:
    s = system()
    r = s.scheduler.scheduleObjects(req("r", count=3, wait=False, resources={"tpu": 1}))
    assert not r.ok  # two tpus in the whole cluster: the third instance has nowhere to go
    assert s.host("h-tpu").calendar.usage_at(s.clock()).tolist()[-1] == 0  # nothing left booked
    r = s.scheduler.scheduleObjects(req("r2", count=2, resources={"tpu": 1}))
    assert r.ok, r.message
    assert sorted(i.host for i in r.instances) == ["h-tpu", "h-tpu"]


def test_a_kind_in_use_is_not_free_so_the_next_request_waits() -> None:
    s = system()
    assert s.scheduler.scheduleObjects(req("first", gpus=1)).ok
    s.heartbeat()
    r = s.scheduler.scheduleObjects(req("second", gpus=1))
    assert not r.ok and r.state == "pending"
    assert s.host("h-gpu").calendar.usage_at(s.clock()).tolist()[2] == 1  # gpus: one booked, never two


def test_mil_sees_a_custom_kind_and_what_is_free_of_it() -> None:
    s = system()
    assert s.scheduler.scheduleObjects(req("r", resources={"tpu": 1})).ok
    s.heartbeat()
    snap = s.collection.snapshot()
    assert snap.table.names[snap.rows("$tpu >= 2 and $free_tpu == 1")].tolist() == ["h-tpu"]


def test_a_host_refuses_a_kind_it_does_not_have() -> None:
    from legionrm.models import Holder, Refusal, ReservationRequest, Resources

    ask = ReservationRequest(request_id="x", resource="h-cpu", holder=Holder(user="alice"),
                             resources=Resources(cpus=1, custom=(("tpu", 1.0),)))
    out = system().host("h-cpu").make_reservation(ask)
    assert isinstance(out, Refusal) and out.code == "capacity.total" and "tpu" in out.reason


def test_no_host_with_enough_of_a_kind_fails_at_once_without_an_autoscaler() -> None:
    r = system().scheduler.scheduleObjects(req("r", resources={"tpu": 3}))
    assert not r.ok and r.state == "failed"
    assert r.failures[0].code == "capacity.total"


def test_with_an_autoscaler_it_waits_and_asks_for_a_node() -> None:
    asked: list[list[dict]] = []
    s = system(autoscaler=asked.append)
    r = s.scheduler.scheduleObjects(req("r", count=2, resources={"tpu": 3}, gpus=1))
    assert r.state == "pending", r.message
    s.tick()
    bundle = {"CPU": 1.0, "GPU": 1.0, "memory": float(1024**3), "tpu": 3.0}
    assert asked == [[bundle, bundle]]
    s.tick()
    assert len(asked) == 1  # the same demand is not asked again
    s.scheduler.cancel("r")
    s.tick()
    assert asked[-1] == []  # and a demand that went away is withdrawn


def test_ahead_a_kind_booked_over_the_window_is_not_free() -> None:
    s = system()
    now = s.clock()

    def ahead(rid: str, **need: object) -> SchedulingRequest:
        return req(rid, wait=False, **need).model_copy(update={"start": now + 1000, "walltime_s": 100.0})

    first = s.scheduler.scheduleObjects(ahead("a1", resources={"tpu": 2}))
    assert first.ok and first.state == "reserved", first.message
    s.heartbeat()
    later = s.scheduler.scheduleObjects(ahead("a2", resources={"tpu": 1}))
    assert not later.ok and "over its window" in later.message  # both tpus are booked then
    assert s.scheduler.scheduleObjects(ahead("a3")).ok  # what asks no tpu still fits then
