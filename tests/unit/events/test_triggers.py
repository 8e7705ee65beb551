"""The trigger registry: every fired event reaches exactly the matching live
subscribers, a removed trigger never fires, a failing subscriber is dropped
after its failures and never stops the others; the Scheduler fires at every
transition its book records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.errors import SchedulingError
from legionrm.events.triggers import EVERY, STATUSES, Triggers
from legionrm.inprocess import LocalSystem
from legionrm.scheduler.door import events_since
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.testing import FakeClock

SUBJECTS = ("r1", "r2", "i1", EVERY)
USERS = ("alice", "bob", None)


def event(rid: str = "r1", status: str = "started", user: str = "alice", obj: str | None = None) -> StatusEvent:
    return StatusEvent(at=0.0, request_id=rid, user=user, status=status, object_id=obj)  # type: ignore[arg-type]


class Recorder:
    def __init__(self) -> None:
        self.got: list[StatusEvent] = []

    def __call__(self, e: StatusEvent) -> None:
        self.got.append(e)


ops = st.lists(st.one_of(
    st.tuples(st.just("register"), st.sampled_from(SUBJECTS), st.sets(st.sampled_from(STATUSES), max_size=3),
              st.sampled_from(USERS), st.booleans()),
    st.tuples(st.just("remove"), st.integers(0, 20)),
    st.tuples(st.just("fire"), st.sampled_from(("r1", "r2")), st.sampled_from(STATUSES),
              st.sampled_from(("alice", "bob")), st.sampled_from((None, "i1", "i2")), st.integers(0, 3)),
), max_size=40)


@settings(max_examples=150, deadline=None)
@given(ops, st.booleans())
def test_every_event_reaches_exactly_the_matching_live_subscribers(script, streams: bool) -> None:
    """(Without streams, ``wants`` says yes to every event some trigger hears, and keeps none.)
    A fire of ``n`` > 0 is ``fire_many`` of ``n`` such events at once (a request's instances that started
    together): each heard as if fired alone, in order, numbered one after the other."""
    reg = Triggers()
    reg.streams = streams
    live: dict[str, tuple[str, frozenset[str], str | None, bool, Recorder]] = {}
    made: list[str] = []
    expected: dict[str, list[int]] = {}
    recorders: dict[str, Recorder] = {}
    for op in script:
        if op[0] == "register":
            _, subject, statuses, user, instances = op
            rec = Recorder()
            tid = reg.register(subject, statuses, rec, user=user, instances=instances)
            live[tid] = (subject, frozenset(statuses) or frozenset(STATUSES), user, instances, rec)
            recorders[tid], expected[tid] = rec, []
            made.append(tid)
        elif op[0] == "remove":
            if made:
                tid = made[op[1] % len(made)]
                assert reg.remove(tid) == (tid in live)
                live.pop(tid, None)
        else:
            _, rid, status, user, obj, n = op
            heard = [tid for tid, (subject, statuses, who, instances, _) in live.items()
                     if status in statuses and subject in (EVERY, rid, obj) and who in (None, user)
                     and (instances or obj is None)]
            assert reg.wants(status, obj is not None) if heard or streams else True
            before = len(reg.events_since(rid))
            fired = reg.fire_many([event(rid, status, user, obj) for _ in range(n)]) if n else [
                reg.fire(event(rid, status, user, obj))]
            assert [e.seq for e in fired] == list(range(fired[0].seq, fired[0].seq + len(fired)))
            for e in fired:
                for tid in heard:
                    expected[tid].append(e.seq)
            assert reg.has_stream(rid) == streams
            if streams:
                assert reg.events_since(rid)[before:] == fired
    for tid, rec in recorders.items():
        assert [e.seq for e in rec.got] == expected[tid]


def test_without_streams_an_event_no_trigger_hears_is_not_wanted() -> None:
    reg = Triggers()
    assert reg.wants("ended", True)  # streams kept: every event is
    reg.streams = False
    tid = reg.register(EVERY, ["started"], Recorder(), instances=False)
    assert [reg.wants(s, i) for s, i in (("started", False), ("started", True), ("ended", False))] == [True, False, False]
    reg.remove(tid)
    assert not reg.wants("started", False)


def test_sequence_numbers_order_the_stream_and_a_cursor_reads_what_came_after() -> None:
    reg = Triggers(keep_per_request=3)
    seqs = [reg.fire(event("r1", s)).seq for s in ("pending", "placing", "started", "ended")]
    reg.fire(event("r2"))
    assert seqs == [1, 2, 3, 4]
    assert [e.status for e in reg.events_since("r1")] == ["placing", "started", "ended"]  # the oldest went
    assert [e.seq for e in reg.events_since("r1", 3)] == [4] and reg.events_since("nope") == []


def test_a_failing_subscriber_is_dropped_after_its_failures_and_the_others_still_hear() -> None:
    reg = Triggers(max_failures=3)
    calls: list[int] = []

    def bad(e: StatusEvent) -> None:
        calls.append(e.seq)
        raise RuntimeError("subscriber gone")

    good = Recorder()
    bad_id = reg.register("r1", (), bad)
    reg.register("r1", (), good)
    for _ in range(5):
        reg.fire(event())
    assert calls == [1, 2, 3] and bad_id not in reg and list(reg.dropped) == [bad_id]
    assert [e.seq for e in good.got] == [1, 2, 3, 4, 5]


def test_one_success_resets_the_failure_count() -> None:
    reg = Triggers(max_failures=2)
    answers = iter([RuntimeError, None, RuntimeError, None])

    def flaky(e: StatusEvent) -> None:
        exc = next(answers)
        if exc is not None:
            raise exc("no")

    tid = reg.register("r1", (), flaky)
    for _ in range(4):
        reg.fire(event())
    assert tid in reg


@pytest.mark.parametrize("subject, statuses, words", [
    pytest.param("r1", ("started", "exploded"), "unknown status 'exploded'", id="unknown-status"),
    pytest.param("", ("started",), "needs a subject", id="no-subject"),
])
def test_bad_triggers_are_refused_with_a_reason(subject: str, statuses: tuple, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Triggers().register(subject, statuses, Recorder())


def test_the_registry_is_bounded() -> None:
    reg = Triggers(max_triggers=2)
    reg.register("r1", (), Recorder())
    reg.register("r1", (), Recorder())
    with pytest.raises(ValueError, match="holds 2"):
        reg.register("r1", (), Recorder())


# --- fired by the Scheduler -----------------------------------------------------------


def test_the_scheduler_fires_every_transition_of_a_reserved_request() -> None:
    clock = FakeClock()
    s = LocalSystem(ClusterSpec(hosts=(HostSpec(name="h0", attributes={"cpus": 4, "memory_gb": 16}),),
                                classes=(ClassSpec(name="W"),)), clock=clock)
    mine, others = Recorder(), Recorder()
    s.scheduler.triggers.register("r1", ("reserved", "started", "ended", "host_lost", "migrated"), mine, user="alice")
    s.scheduler.triggers.register(EVERY, (), others, user="bob")  # bob's trigger never sees alice's work
    s.scheduler.scheduleObjects(SchedulingRequest(
        request_id="r1", identity=Identity(user="alice"), start=clock() + 60, walltime_s=30,
        objects=(ObjectRequest(class_name="W", cpus=1, memory_gb=1),)))
    clock.advance(60)
    s.tick()
    [iid] = s.scheduler.instances
    ref = s.scheduler.instances[iid]
    s.mobility.record("migrated", iid, "alice", instance=ref, from_host="h1", detail="moved by its owner")
    s.mobility.record("migrated", "nobody", "alice", instance=ref, from_host="h1")  # no request knows it: no event
    clock.advance(30)
    s.tick()
    assert [(e.status, e.object_id) for e in mine.got] == [
        ("reserved", None), ("started", iid), ("started", None), ("migrated", iid), ("ended", iid), ("ended", None)]
    assert others.got == []
    stream = events_since(s.scheduler, "r1")
    assert [e.status for e in stream][:4] == ["pending", "admitted", "placing", "reserved"]
    assert [e.seq for e in stream] == sorted(e.seq for e in stream)


# --- at the Scheduler's door ------------------------------------------------------------


def test_a_user_subscribes_to_their_own_work_only_and_an_admin_to_all() -> None:
    from legionrm.auth.errors import AuthRefusedError
    from tests.unit.auth.test_wire import World

    w = World()
    assert w.submit(w.alice, "a1").ok

    def register(who, subject: str, rec: Recorder) -> str:
        args = {"subject": subject, "statuses": []}
        return w.door.register_trigger(subject, [], rec, w.proof(who, "register_trigger", args))

    with pytest.raises(AuthRefusedError):
        register(w.mallory, "a1", Recorder())  # alice's request
    alice_instance = w.scheduler.request_info("a1").instances[0].id
    with pytest.raises(AuthRefusedError):
        register(w.mallory, alice_instance, Recorder())  # alice's object
    with pytest.raises(SchedulingError, match="no request or object"):
        register(w.mallory, "nosuch", Recorder())
    assert w.submit(w.mallory, "m1").ok  # (the fake port may give it the same instance ids)
    snoop, admin = Recorder(), Recorder()
    register(w.mallory, EVERY, snoop)  # everything mallory may see: her own work only
    register(w.ops, EVERY, admin)
    mine = register(w.alice, "a1", Recorder())
    with pytest.raises(AuthRefusedError):
        w.door.remove_trigger(mine, w.proof(w.mallory, "remove_trigger", {"trigger_id": mine}))
    with pytest.raises(AuthRefusedError):
        w.door.events_since("a1", 0, w.proof(w.mallory, "events_since", {"request_id": "a1", "cursor": 0}))
    w.door.cancel("a1", "done", w.proof(w.alice, "cancel", {"request_id": "a1", "reason": "done"}))
    w.door.cancel("m1", "done", w.proof(w.mallory, "cancel", {"request_id": "m1", "reason": "done"}))
    assert {e.user for e in snoop.got} == {"mallory"} and {e.user for e in admin.got} == {"alice", "mallory"}
    assert w.door.remove_trigger(mine, w.proof(w.alice, "remove_trigger", {"trigger_id": mine}))
    seen = w.door.events_since("a1", 0, w.proof(w.alice, "events_since", {"request_id": "a1", "cursor": 0}))
    assert seen[-1].status == "cancelled"


@pytest.mark.parametrize("how, instance_status, request_status", [
    pytest.param("lost", "host_lost", "failed", id="host-lost"),
    pytest.param("ended", "ended", "ended", id="ended"),
])
def test_an_instance_end_fires_its_status_then_its_requests(how: str, instance_status: str, request_status: str) -> None:
    s = LocalSystem(ClusterSpec(hosts=(HostSpec(name="h0", attributes={"cpus": 4, "memory_gb": 16}),),
                                classes=(ClassSpec(name="W"),)), clock=FakeClock())
    rec = Recorder()
    s.scheduler.triggers.register(EVERY, ("host_lost", "ended", "failed"), rec)
    s.scheduler.scheduleObjects(SchedulingRequest(request_id="r", identity=Identity(user="a"),
                                                  objects=(ObjectRequest(class_name="W", cpus=1, memory_gb=1),)))
    [iid] = s.scheduler.instances
    s.scheduler.instance_ended(iid, "the host is gone", how)
    assert [(e.status, e.object_id) for e in rec.got] == [(instance_status, iid), (request_status, None)]


# --- after a restart: the past from the book ---------------------------------------------


def test_a_restarted_scheduler_streams_each_requests_past_from_its_book(tmp_path) -> None:
    """The stream a restarted Scheduler gives of an old request is the one the
    live Scheduler gave (statuses, objects, reasons, times, in order), and a
    live event after the restart follows it (a cursor from the past still works)."""
    from legionrm.scheduler.wiring import pool_gate
    from legionrm.state import RequestStore
    from tests.unit.scheduler.test_lifecycle import cluster, req
    from tests.unit.scheduler.test_restart import restarted

    clock = FakeClock()
    spec = cluster()
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=RequestStore(tmp_path / "r.db"))
    s.scheduler.scheduleObjects(req("run", count=1, walltime=100))
    s.scheduler.scheduleObjects(req("big", count=2))
    clock.advance(101)
    s.tick()  # "run" completes: its instance ends, then the request
    [lost] = [i.id for i in s.scheduler.request_info("big").instances][:1]
    clock.advance(1)  # (at one time, a loss and a start are ordered as the book fires them: start first)
    s.scheduler.instance_ended(lost, "the host is gone", "lost")

    def seen(sched, rid: str, cursor: int = 0) -> list[tuple]:
        return [(e.status, e.object_id, e.reason, e.at) for e in events_since(sched, rid, cursor)]

    live = {rid: seen(s.scheduler, rid) for rid in ("run", "big")}
    assert [st for st, *_ in live["run"]][-2:] == ["ended", "ended"] and ("host_lost", lost) in [
        (st, o) for st, o, *_ in live["big"]]
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    assert {rid: seen(new, rid) for rid in ("run", "big")} == live
    assert new.triggers.events_since("nosuch") == []
    last = events_since(new, "big")[-1].seq
    clock.advance(1)
    new.cancel("big", "done")
    assert [st for st, *_ in seen(new, "big", last)] == ["ended", "cancelled"]  # its other instance, then itself


def test_seeding_keeps_a_live_stream_and_the_bounds() -> None:
    reg = Triggers()
    reg.fire(event("r1", "pending"))
    past = [event(rid, st) for rid in ("r0", "r1", "r2") for st in ("pending", "started")]
    assert reg.seed(past) == 4  # r1's live stream stays as it was
    assert [e.status for e in reg.events_since("r1")] == ["pending"]
    assert [(e.status, e.seq) for e in reg.events_since("r2")] == [("pending", 4), ("started", 5)]
    assert reg.fire(event("r2", "ended")).seq == 6  # live events follow the past
    few = Triggers(keep_requests=2)
    few.seed(past)
    assert [rid for rid in ("r0", "r1", "r2") if few.events_since(rid)] == ["r1", "r2"]  # the newest two


def test_a_cursor_from_before_a_restart_neither_repeats_nor_skips(tmp_path) -> None:
    """A follower's cursor from the live Scheduler, asked of the restarted one,
    gives exactly what happened after it (the restart's own moves included)."""
    from legionrm.scheduler.wiring import pool_gate
    from legionrm.state import RequestStore
    from tests.unit.scheduler.test_lifecycle import cluster, req
    from tests.unit.scheduler.test_restart import restarted

    clock = FakeClock()
    spec = cluster()
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=RequestStore(tmp_path / "r.db"))
    s.scheduler.scheduleObjects(req("run", count=1))
    [ref] = s.scheduler.instances.values()
    s.mobility.record("migrated", ref.instance_id, ref.user, instance=ref, from_host="h9")  # fired, not in the book
    clock.advance(0.5)
    entry = s.scheduler.book.add(req("x"))
    s.scheduler.book.move(entry, "admitted", "admitted to pool /")
    clock.advance(0.5)
    s.scheduler.book.move(entry, "placing", "enacting 1 master schedule(s)")
    seen = events_since(s.scheduler, "x")
    cursor = seen[-1].seq  # the follower saw "placing"
    clock.advance(2)
    new = restarted(s, RequestStore(tmp_path / "r.db"))  # it puts "x" back in the queue
    after = events_since(new, "x", cursor)
    assert [(e.status, e.reason) for e in after] == [("pending", "the scheduler restarted while placing it")]
    assert [e.seq for e in events_since(new, "x")][:len(seen)] == [e.seq for e in seen]  # the same numbers


def test_an_objects_moves_are_read_back_from_its_copies() -> None:
    from legionrm.events.triggers import past_events
    from legionrm.models import InstanceInfo, RequestEvent, RequestInfo

    info = RequestInfo(id="r", user="alice", state="running", history=(
        RequestEvent(at=0, state="pending", reason="submitted"), RequestEvent(at=0, state="admitted"),
        RequestEvent(at=0, state="placing"), RequestEvent(at=0, state="running", reason="master 1 of 1")), instances=(
        InstanceInfo(id="c", host="h3", started_at=31, object_id="a"),
        InstanceInfo(id="a", host="h1", state="moved", ended_at=10, reason="activated on h2", vault="v1"),
        InstanceInfo(id="b", host="h2", started_at=20, state="moved", ended_at=30, reason="migrated to h3",
                     object_id="a"),
        InstanceInfo(id="d", host="h1", state="lost", ended_at=40, reason="host h1 died"),
        InstanceInfo(id="e", host="h1", state="inert", ended_at=50, reason="by its user", vault="v1")))
    assert [(e.at, e.status, e.object_id, e.reason) for e in past_events(info)] == [
        (0, "pending", None, "submitted"), (0, "admitted", None, ""), (0, "placing", None, ""),
        (0, "started", "a", "on h1"), (0, "started", "d", "on h1"), (0, "started", "e", "on h1"),
        (0, "started", None, "master 1 of 1"),
        (10, "deactivated", "a", "in v1"), (20, "activated", "a", "activated on h2"),
        (31, "migrated", "a", "migrated to h3"), (40, "host_lost", "d", "host h1 died"), (50, "deactivated", "e", "in v1")]
