"""Rankers of the placement pipeline, each on its own."""

from __future__ import annotations

import pytest

from legionrm.collection.collection import Collection
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host


def gpu_cluster() -> Collection:
    c = Collection(clock=FakeClock())
    c.join(host("gpu1", cpus=48, memory_gb=256.0, gpus=4))
    c.join(host("cpu1", cpus=16, memory_gb=64.0, gpus=0))
    c.join(host("cpu2", cpus=16, memory_gb=64.0, gpus=0))
    return c


@pytest.mark.parametrize(
    "obj, expected",
    [
        pytest.param(ObjectRequest(class_name="A", cpus=8), ["cpu1"], id="cpu-work-avoids-the-gpu-host"),
        pytest.param(ObjectRequest(class_name="A", count=3, cpus=8, placement="scatter"), ["cpu1", "cpu2", "gpu1"],
                     id="gpu-host-only-when-the-others-are-used"),
        pytest.param(ObjectRequest(class_name="A", cpus=20), ["gpu1"], id="gpu-host-when-nothing-else-fits"),
        pytest.param(ObjectRequest(class_name="A", cpus=8, gpus=1), ["gpu1"], id="gpu-work-on-the-gpu-host"),
    ],
)
def test_scarce_ranker_keeps_gpu_hosts_for_gpu_work(obj, expected) -> None:
    plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=Identity(user="u"), objects=(obj,)),
                                    gpu_cluster().snapshot())
    assert sorted(p.host for p in plan.masters[0].placements) == sorted(expected)
