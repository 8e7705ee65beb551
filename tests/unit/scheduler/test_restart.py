"""A Scheduler that restarts with its state store knows every request it had,
puts back in the queue what it was placing, charges its running work to the
pools again, and stops instances nobody knows."""

from __future__ import annotations

from legionrm.inprocess import LocalSystem
from legionrm.models import InstanceRef, SchedulerSettings
from legionrm.scheduler.audit import audit, views_of
from legionrm.scheduler.scheduler import Scheduler
from legionrm.scheduler.watch import orphans
from legionrm.scheduler.wiring import pool_gate, wire
from legionrm.state import RequestStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_lifecycle import cluster, hosts, req


def restarted(s: LocalSystem, store: RequestStore) -> Scheduler:
    """A new Scheduler over the same resources and ``store``, as a restart makes one (fresh pools and allotments)."""
    wired = wire(SchedulerSettings(cluster=s.spec), s.scheduler_ports(pool_gate(s.spec), store))
    s.scheduler, s.mobility, s.enactor = wired.scheduler, wired.mobility, wired.scheduler.getEnactor()
    return wired.scheduler


def test_a_restarted_scheduler_knows_its_requests_and_charges_them_again(tmp_path) -> None:
    clock = FakeClock()
    spec = cluster()
    store = RequestStore(tmp_path / "requests.db")
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=store)
    s.scheduler.scheduleObjects(req("run", count=1, walltime=100))
    s.scheduler.scheduleObjects(req("big", count=2))
    before = {i.id: (i.state, i.reason, len(i.history)) for i in s.scheduler.list_requests()}
    new = restarted(s, RequestStore(tmp_path / "requests.db"))
    after = {i.id: (i.state, i.reason, len(i.history)) for i in new.list_requests()}
    assert after == before
    assert set(new.accounts.pools.held()) == {"run"}  # the fresh pools charged again
    assert [f for f in audit(new, views_of(hosts(s))) if f.code != "class.count"] == []
    clock.advance(101)
    s.tick()
    assert {i.id: i.state for i in new.list_requests()} == {"run": "completed", "big": "running"}


def test_a_request_caught_placing_goes_back_to_the_queue(tmp_path) -> None:
    clock = FakeClock()
    spec = cluster()
    store = RequestStore(tmp_path / "r.db")
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=store)
    entry = s.scheduler.book.add(req("x"))
    s.scheduler.book.move(entry, "admitted", "admitted to pool /")
    s.scheduler.book.move(entry, "placing", "enacting 1 master schedule(s)")
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    info = new.request_info("x")
    assert info.state == "pending" and "restarted" in info.reason


def test_orphans_are_those_nobody_knows_past_the_grace() -> None:
    def ref(i: str, t: float) -> InstanceRef:
        return InstanceRef(instance_id=i, class_name="W", host="h", token_id="t", user="u", started_at=t)

    running = [ref("known", 0), ref("old", 0), ref("young", 95)]
    assert [r.instance_id for r in orphans(running, {"known"}, now=100, grace_s=10)] == ["old"]


def test_the_sweep_stops_an_instance_no_request_knows(tmp_path) -> None:
    clock = FakeClock()
    spec = cluster()
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec))
    r = s.scheduler.scheduleObjects(req("a"))
    inst = r.instances[0]
    s.scheduler.book.end_instance(inst.instance_id, "ended", "forgotten by a bug")  # the host still runs it
    clock.advance(s.scheduler.orphan_grace_s + 1)
    assert s.scheduler._sweep_orphans() == [inst.instance_id]
    assert not s.host(inst.host).list_instances()


def test_a_reserved_request_survives_a_restart_with_its_tokens_and_starts_at_its_time(tmp_path) -> None:
    from legionrm.models import Identity, ObjectRequest, SchedulingRequest

    clock = FakeClock()
    spec = cluster()
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=RequestStore(tmp_path / "r.db"))
    ahead = SchedulingRequest(request_id="ahead", identity=Identity(user="alice"), start=clock() + 3600,
                              walltime_s=60, objects=(ObjectRequest(class_name="W", cpus=4, memory_gb=1),))
    assert s.scheduler.scheduleObjects(ahead).state == "reserved"
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    assert new.request_info("ahead").state == "reserved" and set(new.accounts.pools.held()) == {"ahead"}
    assert [f for f in audit(new, views_of(hosts(s))) if f.code != "class.count"] == []
    clock.advance(3600)
    s.tick()
    info = new.request_info("ahead")
    assert info.state == "running" and info.instances[0].started_at == clock()
