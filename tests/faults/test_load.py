"""Load: 20 concurrent callers x 10 requests each (small, ``wait=False``,
each cancelled once answered) on a live system with a state dir.  Every
request is answered, the books balance afterwards, and the throughput is
printed.  ``LEGIONRM_LOAD`` ("callers x requests", e.g. ``20x50``) sets the
size; the throughput targets live in benchmarks/, so the suite's run is kept
small (concurrency is what it proves: 20 callers at once)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.clusters import lean_cluster
from tests.faults import durable_system
from legionrm.models import Identity, ObjectRequest, SchedulingRequest

pytestmark = pytest.mark.ray

CALLERS, REQUESTS = (int(x) for x in os.environ.get("LEGIONRM_LOAD", "20x10").split("x"))


@pytest.fixture(scope="module")
def system(ray_cluster):
    with durable_system(lean_cluster(), "lrml") as s:  # Workers on two host groups
        yield s


def test_every_request_of_many_concurrent_callers_is_answered(system, capsys) -> None:

    from legionrm.system import call

    def caller(k: int) -> list[str]:
        states = []
        for n in range(REQUESTS):
            rid = f"load-{k}-{n}"
            r = system.schedule(SchedulingRequest(request_id=rid, identity=Identity(user=f"u{k}"), wait=False,
                                                  objects=(ObjectRequest(class_name="Worker", cpus=0.5,
                                                                         memory_gb=0.5, walltime_s=600),)))
            states.append(r.state)
            if r.ok:  # a cancel racing the watch's own view of the end must still answer cancelled
                assert call(system.scheduler.cancel.remote(rid)).state == "cancelled"
        return states

    t0 = time.monotonic()
    with ThreadPoolExecutor(CALLERS) as pool:
        answers = [s for states in pool.map(caller, range(CALLERS)) for s in states]
    took = time.monotonic() - t0
    placed = answers.count("running")
    with capsys.disabled():
        print(f"\n  load: {CALLERS} callers x {REQUESTS} requests answered in {took:.1f} s "
              f"({len(answers) / took:.1f} requests/s; {placed} placed, {len(answers) - placed} refused)")
    assert len(answers) == CALLERS * REQUESTS
    assert set(answers) <= {"running", "failed"} and placed >= len(answers) // 2
    infos = call(system.scheduler.list_requests.remote())
    assert all(i.state in ("cancelled", "failed") for i in infos if i.id.startswith("load-"))
    assert call(system.scheduler.audit.remote(), 60) == []
    assert call(system.pools.held.remote()) == {}
