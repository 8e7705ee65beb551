"""Preemption on the negotiated path, in one process: real hosts, tokens,
the Enactor, the queue with its QoS (issue 26, item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from legionrm import codes
from legionrm.config import parse_cluster
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.testing import FakeClock

QOS = [{"name": "normal", "default": True}, {"name": "scavenger", "preemptable": True},
       {"name": "scavenger-hi", "preemptable": True, "priority": 5}, {"name": "urgent", "priority": 10}]


def system(hosts: int = 2, host_policy: dict[str, Any] | None = None, qos: list | None = None) -> LocalSystem:
    spec = parse_cluster({"host": [{"name": f"h{i}", "attributes": {"cpus": 4, "memory_gb": 16},
                                    **((host_policy or {}) if i == hosts - 1 else {})} for i in range(hosts)],
                          "class": [{"name": "W"}], "qos": QOS if qos is None else qos})
    return LocalSystem(spec, clock=FakeClock())


def req(rid: str, user: str, qos: str | None = None, cpus: float = 4, wall: float = 100, **kw: Any
        ) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), qos=qos, objects=(
        ObjectRequest(class_name="W", cpus=cpus, memory_gb=1, walltime_s=wall),), **kw)


def fill(s: LocalSystem, qos: str = "scavenger", **kw: Any) -> None:
    """bob's two 4-cpu requests fill both hosts, b1 first (older), then b2."""
    for rid in ("b1", "b2"):
        assert s.scheduler.scheduleObjects(req(rid, "bob", qos, **kw)).ok
        s.clock.advance(1)  # type: ignore[attr-defined]


def state(s: LocalSystem, rid: str) -> str:
    return s.scheduler.request_info(rid).state


@pytest.mark.parametrize("victims_qos, preemptor_qos, preempted", [
    ("scavenger", None, True),            # normal (non-preemptable) over preemptable
    ("scavenger", "urgent", True),
    ("scavenger", "scavenger-hi", True),  # higher priority, both preemptable
    ("scavenger-hi", "scavenger", False),  # lower priority
    ("scavenger", "scavenger", False),    # equal priority
    ("normal", "urgent", False),          # non-preemptable is never a victim
], ids=["normal-over-scavenger", "urgent-over-scavenger", "higher-preemptable", "lower-preemptable",
        "equal-preemptable", "never-non-preemptable"])
def test_who_preempts_whom_on_a_live_queue(victims_qos: str, preemptor_qos: str | None, preempted: bool) -> None:
    s = system()
    fill(s, victims_qos)
    assert s.scheduler.scheduleObjects(req("a", "alice", preemptor_qos)).state == "pending"
    s.scheduler.tick()
    assert state(s, "a") == ("running" if preempted else "pending")
    assert [state(s, b) for b in ("b1", "b2")].count("running") == (1 if preempted else 2)


@pytest.mark.parametrize("on_preempt, victim_state", [(None, "pending"), ("requeue", "pending"),
                                                      ("cancel", "preempted")],
                         ids=["default-requeues", "requeue", "cancel"])
def test_the_victim_is_the_youngest_and_is_requeued_or_ended(on_preempt: str | None, victim_state: str) -> None:
    s = system()
    fill(s, on_preempt=on_preempt)
    s.scheduler.scheduleObjects(req("a", "alice", "urgent"))
    s.scheduler.tick()
    b2 = s.scheduler.request_info("b2")
    assert (state(s, "a"), state(s, "b1"), b2.state) == ("running", "running", victim_state)
    event = next(h for h in b2.history if h.state == "preempted")  # show: who preempted it and why
    assert event.reason.startswith(codes.QUEUE_PREEMPTED) and "preempted by a" in event.reason
    assert "QoS urgent is not preemptable" in event.reason
    assert all(i.state == "stopped" for i in b2.instances)
    assert any("preempted b2" in h.reason for h in s.scheduler.request_info("a").history)
    assert not s.host("h1").list_instances() or all(  # the victim's instance is gone from its host
        i.instance_id not in {x.id for x in b2.instances} for i in s.host("h1").list_instances())


def test_a_requeued_victim_does_not_take_back_the_cpus_claimed_for_its_preemptor() -> None:
    s = system()
    fill(s)
    s.scheduler.scheduleObjects(req("a", "alice", "urgent"))
    for _ in range(3):
        s.scheduler.tick()
    assert (state(s, "a"), state(s, "b2")) == ("running", "pending")


def test_free_cpus_on_a_host_it_may_not_use_do_not_stop_a_preemption() -> None:
    s = system(hosts=3)
    fill(s)  # h0 and h1 full; h2 free, but the urgent request asks for h0
    s.scheduler.scheduleObjects(SchedulingRequest(request_id="a", identity=Identity(user="alice"), qos="urgent",
                                                  objects=(ObjectRequest(class_name="W", cpus=4, memory_gb=1,
                                                                         walltime_s=100, constraint='$name == "h0"'),)))
    s.scheduler.tick()
    b1 = s.scheduler.request_info("b1")
    assert (state(s, "a"), b1.state, state(s, "b2")) == ("running", "running", "running")
    assert any(h.state == "preempted" for h in b1.history)  # requeued, and started again on h2
    assert [i.host for i in b1.instances if i.state == "running"] == ["h2"]


def test_no_one_is_preempted_while_free_capacity_suffices() -> None:
    s = system(hosts=3)
    fill(s)
    assert s.scheduler.scheduleObjects(req("a", "alice", "urgent")).ok  # h2 is free
    s.scheduler.tick()
    assert [state(s, r) for r in ("a", "b1", "b2")] == ["running"] * 3


def test_an_owners_veto_still_holds_and_no_work_is_preempted_on_the_vetoing_host() -> None:
    # h1 takes only bob's work: alice's urgent request may only go to h0, so b1 (the older, on h0) is the victim
    s = system(host_policy={"policy": "AllowUsers", "policy_args": {"names": ["bob"]}})
    fill(s)
    s.scheduler.scheduleObjects(req("a", "alice", "urgent"))
    s.scheduler.tick()
    a = s.scheduler.request_info("a")
    assert (a.state, state(s, "b1"), state(s, "b2")) == ("running", "pending", "running")
    assert {i.host for i in a.instances} == {"h0"}


def test_no_preemption_without_a_preemptable_qos() -> None:
    s = system(qos=[{"name": "normal"}, {"name": "urgent", "priority": 10}])
    fill(s, "normal")
    s.scheduler.scheduleObjects(req("a", "alice", "urgent"))
    s.scheduler.tick()
    assert state(s, "a") == "pending"


@pytest.mark.parametrize("wall, preempted", [(1000, False), (20, True)], ids=["would-delay-it", "ends-before-it"])
def test_a_reserved_start_of_the_backfill_is_honoured(wall: float, preempted: bool) -> None:
    # one 8-cpu host: b1 (scavenger, 4 cpus, ends at 100) and c (normal, 4 cpus, ends at 50) run; big (urgent,
    # 8 cpus) waits at the top with its reserved start (100: preempting b1 alone cannot make room for it); a
    # 4-cpu urgent request comes next.  Preempting b1 makes room for it now, but if it runs past big's
    # reserved start it would delay it: then no one is preempted.
    spec = parse_cluster({"host": [{"name": "h0", "attributes": {"cpus": 8, "memory_gb": 16}}],
                          "class": [{"name": "W"}], "qos": QOS})
    s = LocalSystem(spec, clock=FakeClock())
    assert s.scheduler.scheduleObjects(req("b1", "bob", "scavenger")).ok
    assert s.scheduler.scheduleObjects(req("c", "carol", wall=50)).ok
    s.clock.advance(1)  # type: ignore[attr-defined]
    assert s.scheduler.scheduleObjects(req("big", "dave", "urgent", cpus=8, wall=10)).state == "pending"
    s.clock.advance(1)  # type: ignore[attr-defined]
    s.scheduler.scheduleObjects(req("a", "alice", "urgent", wall=wall))
    s.scheduler.tick()
    assert (state(s, "a"), state(s, "b1")) == (("running", "pending") if preempted else ("pending", "running"))
    assert state(s, "big") == "pending" and s.scheduler.request_info("big").reserved_start is not None
