"""Kill the Scheduler actor: Ray restarts it, it reloads its requests from the
state store, and the books still balance (nothing lost, leaked or doubled).
Prints the time to recover."""

from __future__ import annotations

import shutil
import tempfile
import time

import pytest

from legionrm.config import load_cluster
from legionrm.models import Identity, ObjectRequest, SchedulingRequest

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def system(ray_cluster):
    from legionrm.system import boot

    state = tempfile.mkdtemp(prefix="lrmst", dir="/tmp")
    s = boot(load_cluster(), heartbeat_s=0.5, state_dir=state)
    yield s
    s.shutdown()
    shutil.rmtree(state, ignore_errors=True)


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
    first_pid = call(system.scheduler.__ray_call__.remote(lambda self: __import__("os").getpid()))

    t0 = time.monotonic()
    ray.kill(system.scheduler, no_restart=False)
    pid = None
    deadline = time.monotonic() + 60
    while True:  # back when a fresh process answers (calls fail while it restarts)
        try:
            pid = call(system.scheduler.__ray_call__.remote(lambda self: __import__("os").getpid()), 5)
            after = {i.id: settled.get(i.state, i.state) for i in call(system.scheduler.list_requests.remote(), 5)}
            if pid != first_pid:
                break
        except ray.exceptions.RayError:
            pass
        assert time.monotonic() < deadline, "the scheduler did not come back"
        time.sleep(0.2)
    recovered = time.monotonic() - t0
    with capsys.disabled():
        print(f"\n  scheduler killed and back with its {len(after)} requests in {recovered:.2f} s")
    assert after == before
    assert "f-run" in call(system.pools.held.remote())  # still charged, once
    instances = {i.instance_id for i in call(system.scheduler.instances.remote())}
    assert instances == {i.instance_id for i in run.instances}  # the running instances re-attached
    assert call(system.scheduler.cancel.remote("f-run")).state == "cancelled"
    assert call(system.scheduler.cancel.remote("f-wait")).state == "cancelled"
    assert call(system.pools.held.remote()) == {}


def test_the_auditor_over_ray_finds_the_books_balanced(system) -> None:
    from legionrm.system import call

    assert call(system.scheduler.audit.remote(), 60) == []
