"""The whole system on Ray: boot, query, scheduleObjects through a veto and a
delta, and real instances on the reserved Ray nodes; preemption and the
``after`` graph within a request."""

from __future__ import annotations

import time

import pytest

from legionrm.config import load_cluster
from legionrm.models import HostSpec, Identity, ObjectRequest, SchedulingRequest
from tests.clusters import with_classes

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def system(ray_cluster, ray_nodes):
    from legionrm.system import boot

    spec = with_classes(load_cluster(), "Worker", "Echo")
    spec = spec.model_copy(update={"hosts": spec.hosts + (
        HostSpec(name="ray-a", nodepool="ray", attributes={"site": "local"}),
        HostSpec(name="ray-b", nodepool="ray", attributes={"site": "local"})),
        # issue 26: a preemptable QoS and one above it (every other test's requests stay in the default, normal)
        "qos": ({"name": "normal", "default": True}, {"name": "scavenger", "preemptable": True},
                {"name": "urgent", "priority": 10})})
    s = boot(spec, ray_nodes={"ray-a": ray_nodes["node_a"], "ray-b": ray_nodes["node_b"]}, heartbeat_s=0.5)
    yield s
    s.shutdown()


def test_collection_sees_every_resource(system) -> None:
    names = system.query("true").names
    assert len(names) == 12 + 2 + 2 and "ray-a" in names and "vault-uva" in names


def test_elastic_jobs_share_the_batch_pool_fairly(system) -> None:
    from legionrm.models import ElasticJobRequest
    from legionrm.system import call

    for jid, user in (("a1", "alice"), ("b1", "bob")):
        call(system.scheduler.submit_elastic.remote(ElasticJobRequest(
            job_id=jid, user=user, class_name="Worker", memory_gb=8, cpus=0.5, time_per_item_ms=1000)))
    report = call(system.scheduler.cycle_reports.remote(0, 60))[-1]

    def settled(jobs) -> bool:  # both jobs seen by a cycle, each at its target
        return all(j in jobs and jobs[j].processes == jobs[j].target for j in ("a1", "b1"))

    # The first cycle may have run between the two submissions (a1 alone takes
    # the pool, then shrinks); growth and shrinkage settle within a few cycles
    # (refused processes are repaired or retried).
    for _ in range(8):
        if settled(report.jobs):
            break
        report = call(system.scheduler.run_cycle.remote())
    # batch pool: lab1 and batch1-3, 4 x 64 GB = 32 shares of 8 GB, half each
    assert report.jobs["a1"].target == report.jobs["b1"].target == 16
    assert report.jobs["a1"].processes == report.jobs["b1"].processes == 16
    hosts = set(report.jobs["a1"].hosts) | set(report.jobs["b1"].hosts)
    assert hosts <= {"lab1", "batch1", "batch2", "batch3"}
    # a1 completes: its processes stop, b1 grows into the whole pool
    assert call(system.scheduler.complete_elastic.remote("a1")) is True
    after = call(system.scheduler.cycle_reports.remote(report.cycle, 60))[-1]
    assert "a1" not in after.jobs and after.jobs["b1"].target == 32
    assert call(system.scheduler.complete_elastic.remote("b1")) is True
    done = call(system.scheduler.cycle_reports.remote(after.cycle, 60))[-1]
    assert not done.jobs and len(done.shrank) == after.jobs["b1"].processes
    assert call(system.groups["batch"].list_instances.remote()) == []  # every process stopped on its host
    # the next heartbeats tell the Collection (the later tests plan from it)
    deadline = time.time() + 10
    while len(system.query('$instances == 0 and $free_memory_gb == 64 and $site == "uva"').names) < 4:
        assert time.time() < deadline, "the collection never saw the batch pool free again"
        time.sleep(0.2)


def test_veto_then_delta_on_ray(system) -> None:
    r = system.schedule(SchedulingRequest(
        request_id="ray-1", identity=Identity(user="alice"),
        objects=(ObjectRequest(class_name="Worker", count=2, cpus=12, placement="scatter",
                               constraint='$gpus == 0 and $site == "uva"'),),
    ))
    assert r.ok, r.message
    assert r.enact.attempts[0].failures[0].code == "policy.load"
    assert r.enact.thrash == 0 and "lab1" not in {i.host for i in r.instances}


def test_instances_run_on_the_reserved_ray_nodes(system, ray_nodes) -> None:
    from legionrm.system import call, instance_actor

    r = system.schedule(SchedulingRequest(
        request_id="ray-2", identity=Identity(user="bob"),
        objects=(ObjectRequest(class_name="Echo", count=2, cpus=0.5, memory_gb=0.1, placement="scatter"),),
    ))
    assert r.ok, r.message
    expected = {"ray-a": ray_nodes["node_a"], "ray-b": ray_nodes["node_b"]}
    assert sorted(i.host for i in r.instances) == ["ray-a", "ray-b"]
    for inst in r.instances:
        assert call(instance_actor(inst.instance_id).where.remote(), 30)["node_id"] == expected[inst.host]



def test_a_pool_refuses_what_is_over_its_limit(system) -> None:
    r = system.schedule(SchedulingRequest(
        request_id="ray-pool", identity=Identity(user="carol"), pool="/teaching",
        objects=(ObjectRequest(class_name="Worker", count=9, cpus=16, placement="scatter"),),
    ))
    assert not r.ok and r.failures[0].stage == "plan" and r.failures[0].resource == "respool:/teaching"


def test_status_counts_instances_and_pool_allocation(system) -> None:
    from legionrm.system import call

    st = call(system.scheduler.status.remote())
    assert st.instances == sum(st.hosts.values()) >= 4  # the Workers and the Echos of the tests above
    assert st.pools["/shared"]["allocation"]["cpu"] >= 24  # alice's two 12-cpu Workers, in the default pool
    assert st.pools["/teaching"]["allocation"]["cpu"] == 0  # the refused request left nothing charged


def test_a_killed_instance_actor_gives_its_cpus_back_and_its_request_completes(system) -> None:
    import ray

    from legionrm.system import call, instance_actor

    r = system.schedule(SchedulingRequest(
        request_id="ray-kill", identity=Identity(user="dave"),
        objects=(ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1, constraint='$name == "ray-a"'),),
    ))
    assert r.ok, r.message
    inst = r.instances[0]
    host = system.nodes["ray-a"]
    assert inst.instance_id in {i.instance_id for i in call(host.list_instances.remote())}
    ray.kill(instance_actor(inst.instance_id), no_restart=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        info = call(system.scheduler.request_info.remote("ray-kill"))
        if info.state != "running":
            break
        time.sleep(0.2)
    assert info.state == "completed" and info.instances[0].state == "ended"
    assert inst.instance_id not in {i.instance_id for i in call(host.list_instances.remote())}
    assert not any(t.holder.user == "dave" for t in call(host.reservations.remote()))  # the cpus are back


def test_a_cancelled_request_stops_its_instances_on_ray(system) -> None:
    from legionrm.system import call

    r = system.schedule(SchedulingRequest(
        request_id="ray-cancel", identity=Identity(user="erin"),
        objects=(ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1, constraint='$name == "ray-b"'),),
    ))
    assert r.ok, r.message
    info = call(system.scheduler.cancel.remote("ray-cancel"))
    assert info.state == "cancelled"
    assert not call(system.nodes["ray-b"].list_instances.remote("ray-b")) or all(
        i.user != "erin" for i in call(system.nodes["ray-b"].list_instances.remote("ray-b")))


def test_many_concurrent_callers_never_deadlock_on_approval(system) -> None:
    """More callers than the Scheduler has threads: each scheduleObjects thread
    waits on the Enactor, whose confirmation runs on the Scheduler's own
    control threads, so every request is answered."""
    from legionrm.system import call

    refs = [system.scheduler.scheduleObjects.remote(SchedulingRequest(
        request_id=f"load-{k}", identity=Identity(user=f"u{k % 5}"), wait=False,
        objects=(ObjectRequest(class_name="Worker", cpus=0.5, memory_gb=0.5),))) for k in range(24)]
    answers = call(refs, 120)
    assert len(answers) == 24 and sum(a.ok for a in answers) >= 12
    for a in answers:
        if a.ok:
            call(system.scheduler.cancel.remote(a.request_id))


def test_a_reserved_request_starts_at_its_time_and_a_callback_actor_hears_it(system) -> None:
    """Issue 18 on Ray: a request five seconds ahead is reserved now, the
    Scheduler's timer starts it then, and a subscriber actor hears reserved,
    started and ended (its walltime) as they happen; ``events_since`` gives
    the same story to a poller."""
    import ray

    from legionrm.system import call

    @ray.remote(num_cpus=0)
    class Inbox:
        def __init__(self) -> None:
            self.events: list = []

        def on_event(self, event) -> None:
            self.events.append((event.status, event.object_id is None))

        def got(self) -> list:
            return self.events

    inbox = Inbox.remote()
    try:
        start = time.time() + 5
        r = system.schedule(SchedulingRequest(
            request_id="ray-ahead", identity=Identity(user="fay"), start=start, walltime_s=2,
            objects=(ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1, constraint='$name == "ray-a"'),)))
        assert (r.ok, r.state) == (True, "reserved"), r.message
        tid = system.subscribe("ray-ahead", ["started", "ended"], inbox)
        assert any(t.start == start for t in call(system.nodes["ray-a"].reservations.remote()))  # the hold
        deadline = time.time() + 30
        while time.time() < deadline and ("ended", True) not in call(inbox.got.remote()):
            time.sleep(0.3)
        assert call(inbox.got.remote()) == [("started", False), ("started", True), ("ended", False), ("ended", True)]
        info = call(system.scheduler.request_info.remote("ray-ahead"))
        assert info.state == "completed" and info.instances[0].started_at >= start
        assert [e.status for e in system.events_since("ray-ahead")][-3:] == [
            "started", "ended", "ended"]
        assert system.unsubscribe(tid) is True
    finally:
        ray.kill(inbox)


def _until(system, rid: str, states: tuple[str, ...], timeout: float = 30.0):
    from legionrm.system import call

    deadline = time.time() + timeout
    while True:
        info = call(system.scheduler.request_info.remote(rid))
        if info.state in states or time.time() > deadline:
            return info
        time.sleep(0.2)


def test_urgent_work_preempts_scavenger_work_on_a_ray_node(system) -> None:
    from legionrm.system import call

    # the tests before it end their work on ray-a; its heartbeat (0.5 s) tells the collection the room is back
    deadline = time.time() + 15
    while (free := float(system.query('$name == "ray-a"').records[0].attributes["free_cpus"])) <= 0 \
            and time.time() < deadline:
        time.sleep(0.2)
    assert free > 0
    on_a = '$name == "ray-a"'
    victim = system.schedule(SchedulingRequest(
        request_id="ray-scav", identity=Identity(user="fay"), qos="scavenger", on_preempt="cancel",
        objects=(ObjectRequest(class_name="Echo", cpus=free, memory_gb=0.1, constraint=on_a),)))
    assert victim.ok, victim.message
    urgent = system.schedule(SchedulingRequest(
        request_id="ray-urgent", identity=Identity(user="gus"), qos="urgent",
        objects=(ObjectRequest(class_name="Echo", cpus=free, memory_gb=0.1, constraint=on_a),)))
    assert not urgent.ok and urgent.state == "pending"  # ray-a is full: it waits, then preempts on a tick
    info = _until(system, "ray-urgent", ("running",))
    assert info.state == "running" and info.instances[0].host == "ray-a", info
    scav = call(system.scheduler.request_info.remote("ray-scav"))
    assert scav.state == "preempted" and "preempted by ray-urgent" in scav.reason
    assert all(i.state == "stopped" for i in scav.instances)
    assert not any(i.user == "fay" for i in call(system.nodes["ray-a"].list_instances.remote("ray-a")))
    call(system.scheduler.cancel.remote("ray-urgent"))


def test_an_object_starts_after_the_one_it_follows_on_ray(system) -> None:
    on_b = '$name == "ray-b"'
    r = system.schedule(SchedulingRequest(
        request_id="ray-after", identity=Identity(user="hal"), objects=(
            ObjectRequest(class_name="Echo", name="second", after=("first",), cpus=0.1, memory_gb=0.1,
                          constraint=on_b),
            ObjectRequest(class_name="Echo", name="first", cpus=0.1, memory_gb=0.1, constraint=on_b))))
    assert r.ok, r.message
    first, second = r.instances[0], r.instances[1]  # created in rounds: the one followed first
    assert first.started_at <= second.started_at
    cycle = system.schedule(SchedulingRequest(
        request_id="ray-cycle", identity=Identity(user="hal"), objects=(
            ObjectRequest(class_name="Echo", name="a", after=("b",), cpus=0.1, memory_gb=0.1),
            ObjectRequest(class_name="Echo", name="b", after=("a",), cpus=0.1, memory_gb=0.1))))
    assert (cycle.state, cycle.failures[0].code) == ("refused", "request.after") and "a -> b -> a" in cycle.message
    from legionrm.system import call

    call(system.scheduler.cancel.remote("ray-after"))
