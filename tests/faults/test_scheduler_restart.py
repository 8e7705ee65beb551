"""Kill the Scheduler actor: Ray restarts it, it reloads its requests from the
state store (and the site policy a reload gave it), and the books still
balance (nothing lost, leaked or doubled).  Prints the time to recover."""

from __future__ import annotations

import time

import pytest

from legionrm.config import load_cluster
from tests.clusters import with_classes
from tests.faults import back, durable_system, pid_of
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.models.requests import FINAL_STATES
from legionrm.scheduler.priority import site_spec

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def system(ray_cluster):
    with durable_system(with_classes(load_cluster(), "Worker"), "lrmst") as s:
        yield s


def test_a_killed_scheduler_comes_back_knowing_every_request(system, capsys) -> None:
    import ray

    from legionrm.system import call

    run = system.schedule(SchedulingRequest(request_id="f-run", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Worker", count=2, cpus=4, memory_gb=4, walltime_s=600),)))
    assert run.ok, run.message
    busy = run.instances[0].host  # all of it, on the host f-run uses: waits until f-run ends
    cpus = next(r.attributes["cpus"] for r in system.query(f'$name == "{busy}"').records)
    wait = system.schedule(SchedulingRequest(request_id="f-wait", identity=Identity(user="bob"), objects=(
        ObjectRequest(class_name="Worker", count=1, cpus=cpus, memory_gb=1, constraint=f'$name == "{busy}"'),)))
    assert wait.state == "pending", wait.message
    # a waiting request is re-planned every tick: caught mid-attempt it shows admitted or placing
    settled = {"admitted": "pending", "placing": "pending"}
    before = {i.id: settled.get(i.state, i.state) for i in call(system.scheduler.list_requests.remote())}
    first_pid = pid_of(system.scheduler)

    def _site_settings(actor) -> tuple[list[str], float]:  # (nested: Ray ships it by value)
        """The QoS names and the half-life the Scheduler actor orders its queue by."""
        settings = actor.core.queue.site.settings
        return sorted(settings.qos), settings.half_life_s

    # a reload's site policy (a QoS added, the half-life changed), written before it is taken
    spec = load_cluster()
    site = site_spec(spec.model_copy(update={"qos": (*spec.qos, {"name": "gold", "priority": 900}),
                                             "fairshare": {**spec.fairshare, "half_life_s": 3600.0}}))
    assert call(system.scheduler.reconfigure_site.remote(site)) is None
    reloaded = call(system.scheduler.__ray_call__.remote(_site_settings))
    assert "gold" in reloaded[0] and reloaded[1] == 3600.0

    t0 = time.monotonic()
    ray.kill(system.scheduler, no_restart=False)
    back(system.scheduler, first_pid)  # a fresh process answers (calls fail while it restarts)
    after = {i.id: settled.get(i.state, i.state) for i in call(system.scheduler.list_requests.remote(), 5)}
    recovered = time.monotonic() - t0
    with capsys.disabled():
        print(f"\n  scheduler killed and back with its {len(after)} requests in {recovered:.2f} s")
    assert after == before
    assert call(system.scheduler.__ray_call__.remote(_site_settings)) == reloaded  # not the file's of `boot`
    assert "f-run" in call(system.pools.held.remote())  # still charged, once
    instances = {i.instance_id for i in call(system.scheduler.instances.remote())}
    assert instances == {i.instance_id for i in run.instances}  # the running instances re-attached
    assert call(system.scheduler.cancel.remote("f-run")).state == "cancelled"
    # f-run's end re-plans f-wait: a cancel caught mid-attempt (or mid-check) is carried out when
    # the attempt ends, or by the next tick
    info = call(system.scheduler.cancel.remote("f-wait"))
    deadline = time.monotonic() + 30
    while info.state not in FINAL_STATES:
        assert time.monotonic() < deadline, "the cancelled attempt never ended"
        time.sleep(0.1)
        info = call(system.scheduler.request_info.remote("f-wait"))
    assert info.state == "cancelled", info.state
    assert call(system.pools.held.remote()) == {}


def test_the_auditor_over_ray_finds_the_books_balanced(system) -> None:
    from legionrm.system import call

    assert call(system.scheduler.audit.remote(), 60) == []


def test_a_killed_scheduler_takes_its_elastic_job_back(system, capsys) -> None:
    """An elastic job at its size; the Scheduler is killed and restarted by
    Ray; the restarted one knows the job, runs the same processes (none
    stopped, none started twice), charges the pools once, and the auditor
    finds the books balanced (elastic allocations included)."""
    import ray

    from legionrm.models import ElasticJobRequest
    from legionrm.system import call

    call(system.scheduler.submit_elastic.remote(ElasticJobRequest(
        job_id="e1", user="alice", class_name="Worker", memory_gb=8, cpus=0.5, max_processes=4,
        time_per_item_ms=1000)))
    report = call(system.scheduler.run_cycle.remote(), 60)
    for _ in range(8):
        if report.jobs["e1"].processes == 4:
            break
        report = call(system.scheduler.run_cycle.remote(), 60)
    before = {i.instance_id for i in report.jobs["e1"].instances}
    assert len(before) == 4
    on_hosts = {i.instance_id for i in call(system.groups["batch"].list_instances.remote())}
    assert before <= on_hosts
    assert call(system.pools.held.remote()).keys() == {"elastic:e1"}
    first = pid_of(system.scheduler)

    t0 = time.monotonic()
    ray.kill(system.scheduler, no_restart=False)
    back(system.scheduler, first)
    report = call(system.scheduler.run_cycle.remote(), 60)
    recovered = time.monotonic() - t0
    assert report.jobs["e1"].processes == 4, report.jobs
    assert {i.instance_id for i in report.jobs["e1"].instances} == before  # the same processes, adopted
    assert not report.grew and not report.shrank  # none stopped, none started twice
    assert {i.instance_id for i in call(system.groups["batch"].list_instances.remote())} == on_hosts
    assert call(system.pools.held.remote()).keys() == {"elastic:e1"}
    findings = call(system.scheduler.audit.remote(), 60)
    with capsys.disabled():
        print(f"\n  scheduler killed with an elastic job of {len(before)} processes, back and re-adopted in "
              f"{recovered:.2f} s; auditor: {[f.code for f in findings] or 'books balance'}")
    assert findings == []
    assert call(system.scheduler.complete_elastic.remote("e1")) is True
    reports = call(system.scheduler.cycle_reports.remote(report.cycle, 60))  # the runner's cycle, kicked at once
    assert {c.instance_id for r in reports for c in r.shrank} == before
    assert call(system.pools.held.remote()) == {} and call(system.groups["batch"].list_instances.remote()) == []
    assert call(system.scheduler.audit.remote(), 60) == []
