"""EASY backfill in the live queue, on the in-process system in simulated
time: big work is not starved by a stream of small work, a fresh submission
never jumps a reserved start, and ``show`` carries the reserved start."""

from __future__ import annotations

import random

import pytest

from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    QueueSpec,
    SchedulingRequest,
)
from legionrm.testing import FakeClock


def system(policy: str = "easy", default_walltime_s: float | None = None) -> tuple[LocalSystem, FakeClock]:
    clock = FakeClock()
    spec = ClusterSpec(hosts=(HostSpec(name="h0", attributes={"cpus": 8, "memory_gb": 64}),),
                       classes=(ClassSpec(name="W"),),
                       queue=QueueSpec(policy=policy, default_walltime_s=default_walltime_s))  # type: ignore[arg-type]
    return LocalSystem(spec, clock=clock), clock


def req(rid: str, user: str, cpus: float, walltime: float | None) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), objects=(
        ObjectRequest(class_name="W", cpus=cpus, memory_gb=1, walltime_s=walltime),))


def stream(s: LocalSystem, clock: FakeClock, until: float, seed: int = 7) -> float | None:
    """alice keeps h0 busy with 2-cpu work (walltimes 8-12 s, each ending at
    its walltime), a new one every 2 s; bob submits one 8-cpu request at
    11 s.  Returns how long after the last of alice's work submitted before
    his started he started (None: never)."""
    rng = random.Random(seed)
    t0 = clock()
    n = 0
    while clock() - t0 < until:
        s.scheduler.scheduleObjects(req(f"a{n}", "alice", 2, rng.uniform(8, 12)))
        n += 1
        clock.advance(1)
        if clock() - t0 == 11:
            s.scheduler.scheduleObjects(req("bob", "bob", 8, 12))
        clock.advance(1)
        s.tick()  # walltimes end, the hosts report, the queue is re-planned
        if s.scheduler.request_info("bob").state == "running" if clock() - t0 > 11 else False:
            break
    else:
        return None
    infos = s.scheduler.list_requests()
    started = {i.id: next((e.at for e in i.history if e.state == "running"), None) for i in infos}
    bob = next(i for i in infos if i.id == "bob")
    ahead = [started[i.id] for i in infos if i.user == "alice" and i.submitted < bob.submitted]
    assert None not in ahead  # everything submitted before him started before him
    return started["bob"] - max(ahead)


def test_greedy_starves_it_so_the_test_can_fail() -> None:
    s, clock = system("greedy")
    assert stream(s, clock, until=200) is None


def test_a_fresh_submission_waits_rather_than_delay_the_reserved_start() -> None:
    s, clock = system()
    assert s.scheduler.scheduleObjects(req("a", "alice", 6, 10)).ok
    assert s.scheduler.scheduleObjects(req("big", "bob", 8, 10)).state == "pending"
    s.scheduler.replan()
    reserved = s.scheduler.request_info("big").reserved_start
    assert reserved == clock() + 10  # when a's walltime ends
    long = s.scheduler.scheduleObjects(req("long", "carol", 2, 30))  # fits now, but would still run at 10 s
    assert (long.ok, long.state) == (False, "pending")
    assert "queue.behind" in s.scheduler.request_info("long").reason
    short = s.scheduler.scheduleObjects(req("short", "carol", 2, 5))  # ends before the reserved start: backfilled
    assert short.ok
    clock.advance(10)
    s.tick()
    assert s.scheduler.request_info("big").state == "running"


@pytest.mark.parametrize("policy, started", [("easy", {"a", "short"}), ("fcfs", {"a"})], ids=["easy", "fcfs"])
def test_fcfs_lets_nothing_pass_a_blocked_head(policy: str, started: set[str]) -> None:
    s, _ = system(policy)
    s.scheduler.scheduleObjects(req("a", "alice", 6, 10))
    s.scheduler.scheduleObjects(req("big", "bob", 8, 10))
    s.scheduler.scheduleObjects(req("short", "carol", 2, 5))
    s.scheduler.replan()
    assert {i.id for i in s.scheduler.list_requests() if i.state == "running"} == started


def test_work_without_a_walltime_gets_the_default() -> None:
    s, clock = system(default_walltime_s=30)
    assert s.scheduler.scheduleObjects(req("a", "alice", 8, None)).ok
    clock.advance(31)
    s.tick()
    assert s.scheduler.request_info("a").state == "completed"  # stopped at the default walltime


def test_an_advance_reservation_is_not_held_back_by_the_queue() -> None:
    s, clock = system()
    s.scheduler.scheduleObjects(req("a", "alice", 8, 10))
    s.scheduler.scheduleObjects(req("big", "bob", 8, 10))
    ahead = SchedulingRequest(request_id="later", identity=Identity(user="carol"), start=clock() + 100, objects=(
        ObjectRequest(class_name="W", cpus=8, memory_gb=1, walltime_s=10),))
    assert s.scheduler.scheduleObjects(ahead).state == "reserved"
