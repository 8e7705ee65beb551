"""The batched first round of delta schedules against the host-by-host one.

The planner batches the first round of deltas when every host of a master
carries one placement (planning/deltas.py); host by host
(``Planner.batched_deltas = False``) is the reference.  Under hypothesis,
over varied fleets (busy hosts, full hosts, hosts running work that an
exclusive instance cannot share, vaults, storage) and requests
(every placement mode, exclusive, several object requests, few spares, any
``max_deltas``), both give the same suite: masters, deltas, failures.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.collection.collection import Collection
from legionrm.models import ClassSpec, Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host, vault

host_st = st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from([0, 0, 1, 2, 4, 8]), st.sampled_from([0, 0, 2]),
                    st.booleans(), st.sampled_from([0, 0, 1]))
obj_st = st.tuples(st.sampled_from("AB"), st.integers(1, 12), st.sampled_from([1, 2, 4]), st.sampled_from([0, 0, 1]),
                   st.sampled_from([0.0, 0.0, 1.0]), st.booleans(),
                   st.sampled_from(["pack", "scatter", "vscatter", "free"]))


@settings(max_examples=150, deadline=None)
@given(hosts=st.lists(host_st, min_size=1, max_size=30), objs=st.lists(obj_st, min_size=1, max_size=3),
       vaults=st.integers(0, 2), max_deltas=st.integers(0, 10), max_masters=st.integers(1, 3))
def test_batched_first_round_gives_the_host_by_host_deltas(hosts: list, objs: list, vaults: int, max_deltas: int,
                                                          max_masters: int) -> None:
    c = Collection(clock=FakeClock())
    for i, (cpus, free, gpus, x86, running) in enumerate(hosts):
        c.join(host(f"h{i:02d}", cpus=cpus, free_cpus=min(free, cpus), gpus=gpus, memory_gb=16.0,
                    arch="x86_64" if x86 else "aarch64", host_group=f"g{i % 3}", instances=running))
    for v in range(vaults):
        c.join(vault(f"v{v}", storage_gb=2.0 + 3 * v, serves=f"h{v}*"))
    snap = c.snapshot()
    request = SchedulingRequest(request_id="r", identity=Identity(user="u"), objects=tuple(
        ObjectRequest(class_name=cls, count=n, cpus=cpus, gpus=gpus, storage_gb=storage, exclusive=excl,
                      placement=mode, memory_gb=1.0)
        for cls, n, cpus, gpus, storage, excl, mode in objs))
    classes = {"A": ClassSpec(name="A"), "B": ClassSpec(name="B")}
    fast = Planner(classes, max_deltas=max_deltas, max_masters=max_masters)
    slow = Planner(classes, max_deltas=max_deltas, max_masters=max_masters)
    slow.batched_deltas = False
    a, b = fast.make_schedules(request, snap), slow.make_schedules(request, snap)
    assert a.suite().model_dump_json() == b.suite().model_dump_json()
