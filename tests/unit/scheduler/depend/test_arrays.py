"""Issue 26 items 5 and 7 on the in-process system: job arrays (tasks
``ID_INDEX``, at most ``%L`` at once, ``LEGIONRM_ARRAY_INDEX``, one line in
``list``, ``show`` / ``cancel`` of the whole array and of one task), and
work on a lost node (requeued with ``requeue = true``, else ``node_lost``).
Hypothesis holds the invariants: an array never runs more than its limit,
a dependent never starts before its dependency completed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm import codes
from legionrm.errors import SchedulingError
from legionrm.models.arrays import ARRAY_ENV, parse_array
from legionrm.scheduler.watch.settle import list_page
from tests.unit.scheduler.depend.test_depend import dep, state, system
from tests.unit.scheduler.test_lifecycle import req


def array(rid: str, spec: str, cpus: float = 1, walltime: float | None = 10, **kw: Any):
    return req(rid, cpus=cpus, walltime=walltime, **kw).model_copy(update={"array": spec})


def running(s, aid: str) -> int:
    return sum(1 for e in s.scheduler.book.entries() if e.id.startswith(aid + "_") and e.state == "running")


@pytest.mark.parametrize("spec, indices, limit", [
    ("0-99%10", tuple(range(100)), 10), ("7", (7,), None), ("1,3,10-20:5", (1, 3, 10, 15, 20), None),
    ("0-3,2-5%2", tuple(range(6)), 2), (" 0-1 ", (0, 1), None),
], ids=["range-limit", "one", "list-step", "overlap", "spaces"])
def test_an_array_spec_names_its_tasks(spec: str, indices: tuple[int, ...], limit: int | None) -> None:
    assert parse_array(spec) == (indices, limit)


@pytest.mark.parametrize("spec, says", [
    ("0-", "is not an index"), ("5-2", "ends before it starts"), ("%0", "at least 1"), ("0-9%", "at least 1"),
    ("", "give the task indices"), ("0-5:0", "at least 1"), ("0-20000", "at most 10000 tasks"),
], ids=["open-range", "backwards", "limit-0", "limit-missing", "empty", "step-0", "too-many"])
def test_a_bad_array_spec_says_what_is_wrong(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_array(spec)


def test_an_array_runs_its_tasks_at_most_its_limit_at_once_each_seeing_its_index() -> None:
    s, clock = system()
    r = s.scheduler.scheduleObjects(array("arr", "0-5%2"))
    assert r.ok and r.request_id == "arr" and len(r.instances) == 2
    assert running(s, "arr") == 2
    assert s.scheduler.request_info("arr_2").reason.startswith(f"{codes.ARRAY_LIMIT}: array arr runs 2 tasks")
    task = s.scheduler.book.get("arr_4").request
    assert (task.array_index, task.objects[0].env[ARRAY_ENV]) == (4, "4")
    for _ in range(3):
        clock.advance(11)
        s.tick()
        assert running(s, "arr") <= 2
    assert s.scheduler.request_info("arr").state == "completed"


def test_show_and_list_give_an_array_as_one_line_with_its_counts() -> None:
    s, clock = system()
    s.scheduler.scheduleObjects(req("before", cpus=1))
    clock.advance(1)
    s.scheduler.scheduleObjects(array("arr", "0-4%2"))
    info = s.scheduler.request_info("arr")
    assert (info.id, info.state, info.count, info.array) == ("arr", "running", 5, "0-4%2")
    assert info.array_counts == {"running": 2, "pending": 3}
    lines = list_page(s.scheduler).requests
    assert [(i.id, i.array_counts) for i in lines] == [("before", {}), ("arr", {"running": 2, "pending": 3})]


@pytest.mark.parametrize("target, left", [("arr", {"cancelled": 4}), ("arr_3", {"cancelled": 1, "running": 2,
                                                                                 "pending": 1})],
                         ids=["whole-array", "one-task"])
def test_cancel_of_the_whole_array_or_one_task(target: str, left: dict[str, int]) -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(array("arr", "0-3%2"))
    s.scheduler.cancel(target)
    assert s.scheduler.request_info("arr").array_counts == left
    assert running(s, "arr") == left.get("running", 0)


def test_an_array_id_in_use_is_refused_and_a_dependency_may_name_the_whole_array() -> None:
    s, clock = system()
    s.scheduler.scheduleObjects(array("arr", "0-1"))
    with pytest.raises(SchedulingError):
        s.scheduler.scheduleObjects(array("arr", "0-1"))
    s.scheduler.scheduleObjects(dep("after", "after_ok", "arr"))
    assert state(s, "after") == "pending"
    clock.advance(11)
    s.tick()
    assert state(s, "after") == "running"


# --- item 7: a lost node --------------------------------------------------------------------------

@pytest.mark.parametrize("requeue, ends", [(True, "running"), (False, "node_lost")], ids=["requeue", "no-requeue"])
def test_work_on_a_lost_node_is_requeued_or_ends_node_lost(requeue: bool, ends: str) -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(req("a", cpus=4).model_copy(update={"requeue": requeue}))
    lost = r.instances[0].host
    s.carrier(lost).remove(lost, "node died")
    s.tick()
    s.tick()
    info = s.scheduler.request_info("a")
    assert info.state == ends
    lost_event = [h for h in info.history if h.reason.startswith(f"{codes.NODE_LOST}: ")]
    assert lost_event and lost_event[0].state == ("pending" if requeue else "node_lost")
    if requeue:  # it runs again elsewhere; the lost run stays in its story
        assert [(i.host == lost, i.state, i.requeued) for i in info.instances] == [(True, "lost", True),
                                                                                  (False, "running", False)]
        assert s.scheduler.accounts.pools.held() == {"a": s.scheduler.accounts.pools.held()["a"]}
    else:
        assert s.scheduler.accounts.pools.held() == {}


def test_a_requeued_run_that_then_completes_ends_completed() -> None:
    s, clock = system()
    r = s.scheduler.scheduleObjects(req("a", cpus=4, walltime=10).model_copy(update={"requeue": True}))
    s.carrier(r.instances[0].host).remove(r.instances[0].host, "node died")
    s.tick()
    s.tick()
    clock.advance(11)
    s.tick()
    info = s.scheduler.request_info("a")
    assert info.state == "completed"  # the lost run (requeued) no longer decides its end


# --- invariants -----------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 12), limit=st.integers(1, 5), walls=st.lists(st.integers(1, 30), min_size=1, max_size=12),
       steps=st.lists(st.integers(1, 15), min_size=1, max_size=15))
def test_an_array_never_runs_more_than_its_limit_at_once(n: int, limit: int, walls: list[int],
                                                         steps: list[int]) -> None:
    s, clock = system()
    s.scheduler.scheduleObjects(array("arr", f"0-{n - 1}%{limit}", walltime=walls[0]))
    assert running(s, "arr") <= limit
    for step in steps:
        clock.advance(step)
        s.tick()
        assert running(s, "arr") <= limit


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(walls=st.lists(st.integers(1, 20), min_size=2, max_size=6), cancel_at=st.integers(-1, 5),
       steps=st.lists(st.integers(1, 12), min_size=1, max_size=20))
def test_a_dependent_never_starts_before_its_dependency_completed(walls: list[int], cancel_at: int,
                                                                   steps: list[int]) -> None:
    """A chain r0 <- r1 <- ... (each after_ok the one before); one link may be cancelled on the way."""
    s, clock = system()
    s.scheduler.scheduleObjects(req("r0", cpus=1, walltime=walls[0]))
    for i, w in enumerate(walls[1:], 1):
        s.scheduler.scheduleObjects(dep(f"r{i}", "after_ok", f"r{i - 1}", walltime=w))
    for k, step in enumerate(steps):
        if k == cancel_at:
            s.scheduler.cancel(f"r{k % len(walls)}")
        clock.advance(step)
        s.tick()
        for i in range(1, len(walls)):
            info = s.scheduler.request_info(f"r{i}")
            started = any(h.state == "running" for h in info.history)
            if started:
                before = s.scheduler.request_info(f"r{i - 1}")
                assert before.state == "completed"
                assert before.history[-1].at <= next(h.at for h in info.history if h.state == "running")
    for _ in walls:  # a cancel cascades down the chain, one link a pass at least
        s.tick()
    for i in range(1, len(walls)):
        if s.scheduler.request_info(f"r{i - 1}").state == "cancelled":
            assert s.scheduler.request_info(f"r{i}").state == "cancelled"


def test_each_tasks_work_sees_its_index_in_legionrm_array_index(tmp_path) -> None:
    """Real processes (the in-process runner): each task's shell prints the index it sees."""
    from legionrm.models import Identity, ObjectRequest, SchedulingRequest
    from tests.unit.scheduler.test_work_results import system as work_system
    from tests.unit.scheduler.test_work_results import until_final

    s = work_system(tmp_path)
    r = s.scheduler.scheduleObjects(SchedulingRequest(
        request_id="arr", identity=Identity(user="alice"), array="0-2%1", objects=(ObjectRequest(
            class_name="Command", cpus=1, memory_gb=0.5, args={"command": f"echo i=${ARRAY_ENV}"}),)))
    assert r.ok and len(r.instances) == 1
    assert until_final(s, "arr").array_counts == {"completed": 3}
    assert [s.scheduler.results.output(f"arr_{i}")[0] for i in range(3)] == [b"i=0\n", b"i=1\n", b"i=2\n"]


def test_an_array_survives_a_restart_with_its_limit_and_its_summary(tmp_path) -> None:
    from legionrm.state import RequestStore
    from tests.unit.scheduler.test_restart import restarted

    s, clock = system(tmp_path)
    s.scheduler.scheduleObjects(array("arr", "0-5%2"))
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    assert new.request_info("arr").array_counts == {"running": 2, "pending": 4}
    for _ in range(4):
        clock.advance(11)
        s.tick()  # the system's tick: the hosts', then the new Scheduler's
        assert sum(1 for e in new.book.entries() if e.state == "running") <= 2
    assert new.request_info("arr").state == "completed"


def test_hold_and_release_of_an_array_act_on_each_task_that_waits() -> None:
    from legionrm.scheduler.door import SchedulerDoor
    from tests.unit.scheduler.priority.test_site_queue import _Guard, caller

    s, _ = system()
    door = SchedulerDoor(s.scheduler, _Guard(caller("alice")))  # type: ignore[arg-type]
    s.scheduler.scheduleObjects(array("arr", "0-3%1"))
    held = door.hold("arr")
    assert held.array_counts == {"running": 1, "pending": 3}
    assert [s.scheduler.request_info(f"arr_{i}").hold for i in range(4)] == [None, "user", "user", "user"]
    door.release("arr")
    assert [s.scheduler.request_info(f"arr_{i}").hold for i in range(4)] == [None] * 4


def test_update_and_top_of_an_array_act_on_each_waiting_task_together() -> None:
    from legionrm.scheduler.door import SchedulerDoor
    from tests.unit.scheduler.priority.test_site_queue import _Guard, caller

    s, _ = system()
    admin = SchedulerDoor(s.scheduler, _Guard(caller("root", admin=True)))  # type: ignore[arg-type]
    s.scheduler.scheduleObjects(array("arr", "0-3%1"))
    s.scheduler.scheduleObjects(req("other", count=2))  # waits: 8 cpus, and the array runs on one of them
    admin.update("other", priority=50)
    assert admin.update("arr", priority=7).array_counts == {"running": 1, "pending": 3}
    assert [s.scheduler.book.get(f"arr_{i}").request.priority for i in range(4)] == [None, 7, 7, 7]
    admin.top("arr")  # the array's waiting tasks go ahead of `other`, all at one priority
    prios = [s.scheduler.book.get(f"arr_{i}").request.priority for i in (1, 2, 3)]
    assert len(set(prios)) == 1 and prios[0] > 50


@pytest.mark.parametrize("rid, reads", [("arr", 2), ("other", 1)], ids=["an-array", "one-request"])
def test_top_reads_the_request_once_before_it_acts(rid: str, reads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``top`` reads the request's info once for its tasks and what it acts on (an array's
    summary once more at the end, after its tasks moved)."""
    from legionrm.scheduler.door import SchedulerDoor
    from tests.unit.scheduler.priority.test_site_queue import _Guard, caller

    s, _ = system()
    admin = SchedulerDoor(s.scheduler, _Guard(caller("root", admin=True)))  # type: ignore[arg-type]
    s.scheduler.scheduleObjects(array("arr", "0-3%1"))
    s.scheduler.scheduleObjects(req("other", count=2))
    read, seen = s.scheduler.request_info, []
    monkeypatch.setattr(s.scheduler, "request_info", lambda r: seen.append(r) or read(r))
    admin.top(rid)
    assert seen.count(rid) == reads
    assert s.scheduler.request_info("arr").array_counts == {"running": 1, "pending": 3}


@pytest.mark.parametrize("archived", [False, True], ids=["in-the-live-book", "in-the-history"])
@pytest.mark.parametrize("verb", ["hold", "release", "update", "top"])
def test_a_queue_verb_on_a_finished_request_names_its_state(verb: str, archived: bool, tmp_path) -> None:
    from legionrm.scheduler.door import SchedulerDoor
    from legionrm.scheduler.priority.control import QueueError
    from tests.unit.scheduler.priority.test_site_queue import _Guard, caller

    s, clock = system(tmp_path)
    admin = SchedulerDoor(s.scheduler, _Guard(caller("root", admin=True)))  # type: ignore[arg-type]
    assert s.scheduler.scheduleObjects(req("done", walltime=5)).ok
    clock.advance(6)
    for _ in range(3 if archived else 1):  # ended at the first tick, settled into the history by the third
        s.tick()
    assert ("done" not in s.scheduler.book) == archived and s.scheduler.request_info("done").state == "completed"
    args = {"update": {"priority": 3}}.get(verb, {})
    with pytest.raises(QueueError) as got:
        getattr(admin, verb)("done", **args)
    assert got.value.code == codes.QUEUE_NOT_PENDING and "done is completed" in str(got.value)
    with pytest.raises(SchedulingError, match="no request 'nope'"):
        getattr(admin, verb)("nope", **args)
