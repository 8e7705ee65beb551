"""A request's life on the in-process system: it waits when it cannot run
now, runs when room frees, completes when its instances end, can be
cancelled at any point, and every account is booked back -- the auditor
finds nothing after each step, whatever order arrivals, ends and cancels
come in."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.errors import SchedulingError
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    PoolSpec,
    SchedulingRequest,
)
from legionrm.models.cluster import PoolResourceSpec
from legionrm.scheduler.audit import audit, views_of
from legionrm.scheduler.priority import QueueControl
from legionrm.scheduler.requests import ALLOWED, RequestBook
from legionrm.scheduler.wiring import pool_gate
from legionrm.testing import FakeClock


def cluster(hosts: int = 2, cpus: int = 4, pools: bool = True) -> ClusterSpec:
    pool = (PoolSpec(path="/batch", default=True, resources=(
        PoolResourceSpec(kind="cpu", reservation=0, limit=hosts * cpus, share=1),
        PoolResourceSpec(kind="memory", reservation=0, limit=hosts * 16 * 1024, share=1))),) if pools else ()
    return ClusterSpec(
        hosts=tuple(HostSpec(name=f"h{i}", attributes={"cpus": cpus, "memory_gb": 16}) for i in range(hosts)),
        classes=(ClassSpec(name="W"),), pools=pool,
    )


def system(**kw) -> tuple[LocalSystem, FakeClock]:
    clock = FakeClock()
    spec = cluster(**kw)
    return LocalSystem(spec, clock=clock, pools=pool_gate(spec)), clock


def req(rid: str, count: int = 1, cpus: float = 4, user: str = "alice", walltime: float | None = None,
        wait: bool = True) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), wait=wait, objects=(
        ObjectRequest(class_name="W", count=count, cpus=cpus, memory_gb=1, walltime_s=walltime),))


def hosts(s: LocalSystem) -> list:
    return [h for g in s.groups.values() for h in (g.get(n) for n in g.names())]


def books_balance(s: LocalSystem) -> list[str]:
    return [f"{f.code} {f.subject}: {f.detail}" for f in audit(
        s.scheduler, views_of([*hosts(s), *s.vaults.values()]),
        {n: [r.instance_id for r in c.list_instances()] for n, c in s.classes.items()})]


def states(s: LocalSystem) -> dict[str, str]:
    return {i.id: i.state for i in s.scheduler.list_requests()}


def test_a_request_too_big_for_now_waits_then_runs_when_room_frees() -> None:
    s, clock = system()
    assert s.scheduler.scheduleObjects(req("big", count=2, walltime=60)).ok
    r = s.scheduler.scheduleObjects(req("next", count=1))
    assert (r.ok, r.state) == (False, "pending")
    info = s.scheduler.request_info("next")
    assert info.reason  # it says why not now
    assert info.earliest_start == clock() + 60  # when big's walltime ends
    assert books_balance(s) == []
    clock.advance(61)
    s.tick()
    assert states(s) == {"big": "completed", "next": "running"}
    assert books_balance(s) == []


def test_wait_false_keeps_the_immediate_answer() -> None:
    s, _ = system()
    assert s.scheduler.scheduleObjects(req("a", count=2)).ok
    r = s.scheduler.scheduleObjects(req("b", wait=False))
    assert (r.ok, r.state) == (False, "failed")
    assert books_balance(s) == []


@pytest.mark.parametrize("request_, code", [
    (req("huge", count=3, cpus=4), "request.too_big"),
    (SchedulingRequest(request_id="nowhere", identity=Identity(user="a"), objects=(
        ObjectRequest(class_name="W", constraint='$arch == "sparc"'),)), "query.no_match"),
], ids=["bigger-than-the-cluster", "no-host-ever-matches"])
def test_what_can_never_run_fails_at_once(request_, code) -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(request_)
    assert r.state == "failed"
    assert code in {f.code for f in r.failures}
    assert books_balance(s) == []


def test_cancel_a_running_and_a_pending_request_books_everything_back() -> None:
    s, _ = system()
    assert s.scheduler.scheduleObjects(req("run", count=2)).ok
    assert s.scheduler.scheduleObjects(req("wait", count=2)).state == "pending"
    assert s.scheduler.cancel("wait").state == "cancelled"
    assert s.scheduler.cancel("run").state == "cancelled"
    assert all(not h.list_instances() for h in hosts(s))
    assert s.scheduler.accounts.pools.held() == {}
    assert books_balance(s) == []
    assert s.scheduler.cancel("run").state == "cancelled"  # idempotent
    with pytest.raises(SchedulingError):
        s.scheduler.cancel("nosuch")


def test_a_cancel_that_comes_while_a_check_claims_the_request_is_carried_out_by_the_next_tick() -> None:
    """A cancel waits while a claim holds its request; a claim that only
    checks (a pass's limit check, a settling sweep) never carries it out, and
    a held request is never attempted, so only the tick can: never lost."""
    s, _ = system()
    assert s.scheduler.scheduleObjects(req("run", count=2)).ok
    assert s.scheduler.scheduleObjects(req("wait", count=2)).state == "pending"
    QueueControl(s.scheduler.book, s.scheduler.queue.site, s.scheduler.replan).hold("wait", admin=True)  # no pass will try it: only the tick sees the cancel
    with s.scheduler.queue.claim("wait") as claimed:
        assert claimed
        assert s.scheduler.cancel("wait").state == "pending"  # asked: carried out once the claim ends
    s.scheduler.tick()
    assert states(s)["wait"] == "cancelled"
    s.scheduler.tick()  # once: the next tick has nothing left to carry out
    assert s.scheduler.queue.cancels_left() == []
    assert books_balance(s) == []


def test_cancelling_the_running_one_lets_the_waiting_one_run() -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(req("first", count=2))
    s.scheduler.scheduleObjects(req("second", count=2))
    s.scheduler.cancel("first")
    assert states(s) == {"first": "cancelled", "second": "running"}


def test_an_instance_that_ends_on_its_host_is_seen_and_booked_back() -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(req("a", count=1))
    inst = r.instances[0]
    s.host(inst.host).stop_object(inst.instance_id, "finished")  # the work ended on its own
    s.classes["W"].instance_stopped(inst.instance_id)
    assert s.tick() == 1
    assert states(s) == {"a": "completed"}
    assert books_balance(s) == []


def test_a_host_that_disappears_loses_its_instances() -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(req("a", count=1))
    host = r.instances[0].host
    s.carrier(host).remove(host, "node died")
    s.tick()
    info = s.scheduler.request_info("a")
    assert info.state == "node_lost" and info.instances[0].state == "lost"  # issue 26 item 7
    assert info.reason.startswith("node.lost: ")
    assert s.scheduler.accounts.pools.held() == {}


def test_history_records_each_transition_with_time_and_reason() -> None:
    s, clock = system()
    s.scheduler.scheduleObjects(req("a", walltime=10))
    clock.advance(11)
    s.tick()
    hist = s.scheduler.request_info("a").history
    assert [e.state for e in hist] == ["pending", "admitted", "placing", "running", "completed"]
    assert all(e.reason for e in hist)
    assert hist[-1].at > hist[0].at


def test_the_auditor_sees_what_leaked() -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(req("a"))
    s.scheduler.accounts.pools.release("a")  # a bug that gives back too early
    assert any("pool.allocation" in f for f in books_balance(s))
    inst = r.instances[0]
    s.host(inst.host).stop_object(inst.instance_id, "behind the scheduler's back")
    assert any("instance.ghost" in f for f in books_balance(s))


def test_transitions_the_table_forbids_are_refused() -> None:
    book = RequestBook(FakeClock())
    e = book.add(req("a"))
    book.move(e, "cancelled", "x")
    for state in ALLOWED:
        if state != "cancelled":
            with pytest.raises(SchedulingError):
                book.move(e, state, "back from the dead")


def test_queue_goes_by_fair_share_then_age() -> None:
    """What runs now counts in fair share: a user holding the cluster waits behind one who holds nothing."""
    s, clock = system()
    s.scheduler.scheduleObjects(req("run", count=2, user="heavy"))
    for rid, user in (("a", "heavy"), ("b", "light"), ("c", "heavy")):
        s.scheduler.scheduleObjects(req(rid, user=user))
        clock.advance(1)
    clock.advance(60)  # the running work's usage builds up
    assert [e.id for e in s.scheduler.queue.order()] == ["b", "a", "c"]


steps = st.lists(st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 3), st.sampled_from([2.0, 4.0]), st.sampled_from(["u1", "u2"])),
    st.tuples(st.just("cancel"), st.integers(0, 20)),
    st.tuples(st.just("end"), st.integers(0, 20)),
    st.tuples(st.just("time"), st.sampled_from([5.0, 30.0])),
), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_the_books_balance_after_every_step(ops) -> None:
    s, clock = system(hosts=3, cpus=4)
    n = 0
    for op in ops:
        ids = [i.id for i in s.scheduler.list_requests()]
        if op[0] == "submit":
            s.scheduler.scheduleObjects(req(f"r{n}", count=op[1], cpus=op[2], user=op[3], walltime=20))
            n += 1
        elif op[0] == "cancel" and ids:
            s.scheduler.cancel(ids[op[1] % len(ids)])
        elif op[0] == "end":
            running = s.scheduler.book.running_instances()
            if running:
                ref = running[op[1] % len(running)]
                s.host(ref.host).stop_object(ref.instance_id, "done")
                s.classes["W"].instance_stopped(ref.instance_id)
                s.tick()
        else:
            clock.advance(op[1])
            s.tick()
        assert books_balance(s) == []
    # everything ends: nothing is held anywhere
    for i in s.scheduler.list_requests():
        s.scheduler.cancel(i.id)
    assert books_balance(s) == []
    assert s.scheduler.accounts.pools.held() == {}
    assert all(not h.list_instances() and not h.reservations() for h in hosts(s))
    assert all(i.state in ("completed", "failed", "cancelled") for i in s.scheduler.list_requests())


def test_pools_follow_the_cluster_as_hosts_leave_and_join() -> None:
    s, clock = system(hosts=2, cpus=4)
    s.tick()
    assert s.scheduler.accounts.pools.capacity["cpu"] == 8
    s.collection.vary_off("h1")
    s.tick()
    assert s.scheduler.accounts.pools.capacity["cpu"] == 4
    r = s.scheduler.scheduleObjects(req("two", count=2, cpus=4))
    assert r.state == "pending"  # h1 may come back: the request waits for it
    s.collection.vary_on("h1")
    s.tick()
    assert s.scheduler.accounts.pools.capacity["cpu"] == 8
    assert states(s) == {"two": "running"}


def test_a_request_retried_for_the_same_reason_keeps_a_short_history() -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(req("hog", count=2))
    s.scheduler.scheduleObjects(req("waits"))
    for _ in range(5):
        s.tick()
    hist = [e.state for e in s.scheduler.request_info("waits").history]
    assert hist == ["pending", "pending"]  # submitted, then why not now: once, however often retried


def test_a_host_list_that_rules_out_every_host_fails_at_once_but_a_busy_host_waits() -> None:
    spec = ClusterSpec(hosts=(HostSpec(name="h0", attributes={"cpus": 4, "memory_gb": 16}),),
                       classes=(ClassSpec(name="W"), ClassSpec(name="Only", host_list=("x*",))))
    s = LocalSystem(spec, clock=FakeClock())
    r = s.scheduler.scheduleObjects(SchedulingRequest(request_id="a", identity=Identity(user="u"), objects=(
        ObjectRequest(class_name="Only", cpus=1),)))
    assert r.state == "failed" and r.failures[0].lasting
    assert s.scheduler.scheduleObjects(req("b", cpus=4)).ok
    r = s.scheduler.scheduleObjects(req("c", cpus=4))
    assert r.state == "pending" and not r.failures[0].lasting


def test_explain_names_every_refused_host_and_why() -> None:
    spec = ClusterSpec(hosts=(HostSpec(name="small", attributes={"cpus": 2, "memory_gb": 16, "arch": "x86"}),
                              HostSpec(name="arm", attributes={"cpus": 8, "memory_gb": 16, "arch": "arm"}),
                              HostSpec(name="ok", attributes={"cpus": 8, "memory_gb": 16, "arch": "x86"})),
                       classes=(ClassSpec(name="W"),))
    s = LocalSystem(spec, clock=FakeClock())
    suite = s.scheduler.make_schedules(SchedulingRequest(request_id="e", identity=Identity(user="u"), objects=(
        ObjectRequest(class_name="W", cpus=4, constraint='$arch != "arm"'),))).suite()
    why = {f.resource: f.code for f in suite.refused}
    assert why == {"arm": "query.no_match", "small": "capacity.total"}
    assert [p.host for p in suite.masters[0].placements] == ["ok"]


def test_a_waiting_request_is_named_for_what_it_waits_on_not_for_hosts_it_could_never_use() -> None:
    hosts_ = tuple(HostSpec(name=f"x{i}", attributes={"cpus": 4, "memory_gb": 16}) for i in range(3)) + (
        HostSpec(name="r1", attributes={"cpus": 4, "memory_gb": 16}),)
    spec = ClusterSpec(hosts=hosts_, classes=(ClassSpec(name="R", host_list=("r*",)),))
    s = LocalSystem(spec, clock=FakeClock())
    ask = (ObjectRequest(class_name="R", cpus=4, memory_gb=1),)
    assert s.scheduler.scheduleObjects(SchedulingRequest(request_id="a", identity=Identity(user="u"), objects=ask)).ok
    s.heartbeat()  # the Collection learns r1 is busy
    r = s.scheduler.scheduleObjects(SchedulingRequest(request_id="b", identity=Identity(user="u"), objects=ask))
    assert r.state == "pending" and r.failures[0].code != "class.host_list"  # 3 never-hosts, 1 busy one
    assert "3 refused by class_host_list" in r.failures[0].reason  # the whole story is still told


def test_the_books_events_are_stamped_whole_and_share_one_fields_set() -> None:
    """What the book tells the triggers is stamped with its seq and otherwise unchanged; the
    stamped events of one kind share one fields-set (one object per event kept, not two)."""
    from legionrm.events.triggers import Triggers
    from legionrm.models import InstanceRef

    triggers = Triggers()
    stamped = []
    book = RequestBook(FakeClock(), listener=lambda ev: stamped.append(triggers.fire(ev)))
    e = book.add(req("a"))
    refs = [InstanceRef(instance_id=f"h{i}/i1", class_name="Worker", host=f"h{i}", token_id=f"h{i}/t", user="u",
                        started_at=1.0) for i in range(3)]
    book.attach(e, refs)
    started = [ev for ev in stamped if ev.status == "started"]
    assert [(ev.object_id, ev.reason, ev.request_id) for ev in started] == [(f"h{i}/i1", f"on h{i}", "a") for i in range(3)]
    assert len({ev.seq for ev in started}) == 3 and all(ev.seq > 0 for ev in started)
    assert all(ev.__pydantic_fields_set__ is started[0].__pydantic_fields_set__ for ev in started)
    assert "seq" in started[0].__pydantic_fields_set__


def _unreachable(s: LocalSystem, clock: FakeClock, how: str) -> None:
    """h1 stops reporting to the Collection, as ``how`` says."""
    if how == "varied-off":
        s.collection.vary_off("h1")
    elif how == "stale":  # silent past its heartbeat window while h0 still reports
        clock.advance(s.collection.stale_window_s + 1)
        s.collection.update("h0")
    else:  # not joined (again) since a restart: the Collection does not hold it at all
        assert s.collection.leave("h1")


def _back(s: LocalSystem, how: str) -> None:
    if how == "varied-off":
        s.collection.vary_on("h1")
    elif how == "stale":
        s.heartbeat()
    else:
        s.host("h1").join()


def pinned(rid: str, where: str) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="W", cpus=1, memory_gb=1, constraint=f'$name == "{where}"'),))


@pytest.mark.parametrize("how", ["varied-off", "stale", "not-joined"])
def test_a_request_only_a_host_not_reporting_may_take_waits_for_it_then_runs(how: str) -> None:
    s, clock = system(hosts=2)
    _unreachable(s, clock, how)
    r = s.scheduler.scheduleObjects(pinned("on-h1", "h1"))
    assert r.state == "pending", r.message  # not failed for good while h1 restarts
    [f] = r.failures
    assert (f.code, f.lasting) == ("host.unreported", False) and "h1" in f.reason
    gone = s.scheduler.scheduleObjects(pinned("on-h9", "h9"))  # no host of the system is h9: that never changes
    assert (gone.state, gone.failures[0].code, gone.failures[0].lasting) == ("failed", "query.no_match", True)
    _back(s, how)
    s.tick()
    assert states(s)["on-h1"] == "running"
    assert books_balance(s) == []


def test_a_host_not_reporting_that_would_refuse_anyway_is_not_waited_for() -> None:
    s, clock = system(hosts=2)
    s.collection.vary_off("h1")
    r = s.scheduler.scheduleObjects(pinned("not-h1", "h1 and $cpus > 99"))  # h1 has 4 cpus: it never matches
    assert (r.state, r.failures[0].code) == ("failed", "query.no_match")
