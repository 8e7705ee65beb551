"""The backfill pass under the site's QoS: a request over a limit of its QoS
neither starts, nor gets a reserved start, nor keeps strict order waiting
behind it; work without a walltime gets its QoS's maximum before the
queue's default."""

from __future__ import annotations

from typing import Any

import pytest

from legionrm import codes
from legionrm.config import parse_cluster
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.testing import FakeClock

QOS = [{"name": "normal", "default": True}, {"name": "small", "max_running_cpus_per_user": 4},
       {"name": "short", "max_walltime_s": 60}]


def system(**queue: Any) -> LocalSystem:
    spec = parse_cluster({"host": [{"name": f"h{i}", "attributes": {"cpus": 4, "memory_gb": 16}} for i in range(2)],
                          "class": [{"name": "W"}], "qos": QOS, "queue": queue})
    return LocalSystem(spec, clock=FakeClock())


def req(rid: str, user: str, qos: str | None = None, walltime: float | None = 10, count: int = 1
        ) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), qos=qos, objects=(
        ObjectRequest(class_name="W", count=count, cpus=4, memory_gb=1, walltime_s=walltime),))


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
@pytest.mark.parametrize("try_now", [True, False], ids=["at-submit", "in-a-pass"])
def test_a_request_over_its_qos_limit_keeps_nobody_waiting(policy: str, try_now: bool) -> None:
    s = system(policy=policy)
    assert s.scheduler.scheduleObjects(req("a1", "alice", "small")).ok
    assert s.scheduler.scheduleObjects(req("a2", "alice", "small")).state == "pending"  # over 4 cpus a user
    s.scheduler.scheduleObjects(req("b", "bob"), try_now=try_now)  # behind a2 in the queue, and fits now
    s.scheduler.replan()
    assert s.scheduler.request_info("b").state == "running"
    a2 = s.scheduler.request_info("a2")
    assert (a2.state, a2.reserved_start) == ("pending", None)
    assert a2.reason.startswith(codes.QOS_MAX_RUNNING_CPUS_PER_USER)


def test_a_blocked_request_within_its_limits_does_keep_strict_order_waiting() -> None:
    s = system(policy="fcfs")
    assert s.scheduler.scheduleObjects(req("a1", "alice", "small")).ok
    assert s.scheduler.scheduleObjects(req("a2", "alice", count=2)).state == "pending"  # no room for 8 cpus now
    s.scheduler.scheduleObjects(req("b", "bob"), try_now=False)
    s.scheduler.replan()
    assert s.scheduler.request_info("b").state == "pending"


@pytest.mark.parametrize("qos, default, wall", [("short", 30, 60), ("short", None, 60), (None, 30, 30),
                                                 (None, None, None)],
                         ids=["qos-max-first", "qos-max", "queue-default", "none"])
def test_work_without_a_walltime_gets_the_qos_maximum_else_the_default(
        qos: str | None, default: float | None, wall: float | None) -> None:
    s = system(default_walltime_s=default)
    assert s.scheduler.scheduleObjects(req("r", "alice", qos, walltime=None)).ok
    assert s.scheduler.book.get("r").walltime("W") == wall  # type: ignore[union-attr]


@pytest.mark.parametrize("extra, limited", [
    ({}, False),
    ({"qos": "small"}, True),  # a QoS limit
    ({"qos": "short"}, True),  # a QoS maximum walltime
    ({"begin_at": 10_000.0}, True),  # not before its time
], ids=["unlimited", "qos-cpus", "qos-walltime", "begin-at"])
def test_a_pass_shows_every_request_to_the_gate_only_when_one_may_be_held_back(extra: dict, limited: bool) -> None:
    from legionrm.scheduler.queue import PassGate

    s = system(policy="easy")
    for rid, user in (("a", "alice"), ("b", "bob")):  # neither fits now: 16 cpus each on 8
        s.scheduler.scheduleObjects(req(rid, user, count=4), try_now=False)
    r = req("c", "carol", count=4).model_copy(update=extra)
    s.scheduler.scheduleObjects(r, try_now=False)
    queue = s.scheduler.queue
    order = queue.order()
    gate = PassGate(queue, queue.site.limits(queue._book.entries()), lambda e, why: None)
    skip = gate.skip_for(order)
    assert (skip is not None) == limited
    assert skip is None or not any(map(gate.held_back, [e for e in order if e.id != "c"]))
