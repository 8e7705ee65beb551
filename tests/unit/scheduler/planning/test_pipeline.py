"""Rankers of the placement pipeline, each on its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.collection.collection import Collection
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning.pipeline import DEFAULT_RANKERS, HostTable, PlanContext, rank
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


@settings(max_examples=80, deadline=None)
@given(hosts=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 1), st.integers(0, 1)),
                      min_size=1, max_size=12),
       pack=st.booleans(), gpu_work=st.booleans(), shuffled=st.randoms(use_true_random=False))
def test_rank_orders_by_every_ranker_then_name(hosts, pack, gpu_work, shuffled) -> None:
    """rank() (which leaves out keys every host ties on, and the position of
    hosts in name order) gives the order of all the rankers' keys in
    priority order, then the name; few values, so ties and keys the same
    for every host are common."""
    n = len(hosts)
    names = [f"h{i:02d}" for i in range(n)]
    gpus, free, risk, load = (np.array(col, float) for col in zip(*hosts))
    z = np.zeros(n)
    obj = ObjectRequest(class_name="A", cpus=1, gpus=int(gpu_work), placement="pack" if pack else "scatter")
    ctx = PlanContext(obj, None, 0.0)

    def ranked(order: list[int], in_name_order: bool) -> list[str]:
        at = np.array(order)
        table = HostTable(row=np.arange(n), row_names=np.array(names, object)[at], cpus=z + 8, memory_gb=z + 8,
                          gpus=gpus[at], free_cpus=free[at], free_memory_gb=z + 8, free_gpus=gpus[at], load=load[at],
                          instances=z, next_event=z + np.inf, risk=risk[at])
        return rank(ctx, table, DEFAULT_RANKERS, in_name_order=in_name_order).names.tolist()

    def key(i: int) -> tuple:
        scarce = 0.0 if gpu_work else float(gpus[i] > 0)
        return (scarce, free[i] if pack else -free[i], risk[i], load[i], names[i])

    expected = [names[i] for i in sorted(range(n), key=key)]
    assert ranked(list(range(n)), in_name_order=True) == expected
    order = list(range(n))
    shuffled.shuffle(order)
    assert ranked(order, in_name_order=False) == expected
