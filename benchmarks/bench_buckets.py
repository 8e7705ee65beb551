"""Node buckets against the per-node path, from one run.

1. OpenPBS's own benchmark design (pbs_sched_perf.py): 10,010 hosts
   (ncpus=1, mem=8gb, color = colours[i % 7]), a blocker job holding 1,429
   yellow hosts so one yellow host stays free, then 3,000 requests
   ``1429:color=blue+1429:color=yellow`` (walltime 100+i) that cannot run:
   one cycle through the per-node path, one through buckets.  Both paths get
   the same excl requests (the placer is forced), so the difference is the
   algorithm alone.  Target: buckets >= 20x faster.
2. 10,000 single-host excl requests ``1:ncpus=1`` placed (and occupied) in
   one cycle on the same hosts.  Target: < 1 s.
3. One ``1000:ncpus=1`` scatter:excl request on 100,000 hosts.
   Target: <= 5 ms and >= 50x faster than the per-node path.

Earliest-start search is off in the timed cycles (upstream does not compute
one there); its cost is printed separately.
Run: ``.venv/bin/python benchmarks/bench_buckets.py``
"""

from __future__ import annotations

import time

from legionrm.scheduler.placement.base import PlaceConfig
from legionrm.scheduler.placement.buckets import BucketPlacer
from legionrm.scheduler.placement.nodes import NodeSpec, NodeTable
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.pernode import PerNodePlacer
from legionrm.scheduler.placement.select import SelectRequest

COLORS = ["red", "orange", "yellow", "green", "blue", "indigo", "violet"]
RESOURCES = ("ncpus", "mem", "color", "host", "vnode")


def fleet(n: int) -> NodeTable:
    nodes = [NodeSpec(f"vn{i}", resources={"ncpus": 1, "mem": "8gb", "color": COLORS[i % 7]}) for i in range(n)]
    return NodeTable(nodes, resources=RESOURCES)


def placers(table: NodeTable) -> tuple[BucketPlacer, PerNodePlacer, HostState]:
    cfg = PlaceConfig(resources=RESOURCES)
    state = HostState(table)
    return BucketPlacer(table, cfg, state), PerNodePlacer(table, cfg, state), state


def naive_scan(table: NodeTable, state: HostState, count: int, ncpus: float, now: float, wall: float) -> list[int]:
    """Upstream's normal path in its plainest form: visit hosts one by one in
    node order, test each (state, calendar, resources) and stop when enough
    are found.  Only a yardstick for the benchmark, not used by legionrm."""
    view = state.live()
    cpus = table.total("ncpus")
    assigned = view.assigned["ncpus"]
    out: list[int] = []
    for i in range(table.n):
        if view.njobs[i] != 0 or view.next_event[i] < now + wall:
            continue
        if cpus[i] - assigned[i] < ncpus:
            continue
        out.append(i)
        if len(out) == count:
            break
    return out


def line(label: str, target: str, measured: str, ok: bool) -> None:
    print(f"  {label:<58} target {target:<14} measured {measured:<22} {'OK' if ok else 'MISSED'}")


def bench_cannot_run() -> None:
    print("1. 10,010 hosts x 3,000 requests that cannot run (upstream perf test design)")
    table = fleet(10010)
    bp, pn, state = placers(table)
    blocker = SelectRequest.parse("1429:ncpus=1:color=yellow", "scatter:excl")
    r = bp.place(blocker, 0.0, 3600.0)
    assert r.status == "run"
    bp.occupy(r, 0.0, 3600.0)
    reqs = [SelectRequest.parse("1429:color=blue+1429:color=yellow", "scatter:excl") for _ in range(3000)]
    t0 = time.perf_counter()
    for i, q in enumerate(reqs):
        out = bp.place(q, 0.0, 100.0 + i, earliest=False)
        assert out.status == "not_now", out
    t_buckets = time.perf_counter() - t0
    sub = 300
    t0 = time.perf_counter()
    for i, q in enumerate(reqs[:sub]):
        out = pn.place(q, 0.0, 100.0 + i, earliest=False)
        assert out.status == "not_now", out
    t_nodes = (time.perf_counter() - t0) * len(reqs) / sub
    t0 = time.perf_counter()
    for i, q in enumerate(reqs[:sub]):
        out = bp.place(q, 0.0, 100.0 + i, earliest=True)
        assert out.earliest_start == 3600.0, out
    t_early = (time.perf_counter() - t0) / sub
    print(f"  per-node cycle (timed on {sub} requests, scaled x{len(reqs) // sub}): {t_nodes:.3f} s")
    print(f"  bucket cycle (all 3,000 requests): {t_buckets:.3f} s")
    line("bucket speed-up over per-node", ">= 20x", f"{t_nodes / t_buckets:.1f}x", t_nodes / t_buckets >= 20)
    print(f"  (with the earliest-start search on, buckets: {t_early * 1e3:.2f} ms per request, start = 3600)")


def bench_run_many() -> None:
    print("2. 10,000 single-host excl requests placed in one cycle on 10,010 hosts")
    table = fleet(10010)
    bp, _, state = placers(table)
    reqs = [SelectRequest.parse("1:ncpus=1", "excl") for _ in range(10000)]
    t0 = time.perf_counter()
    for i, q in enumerate(reqs):
        r = bp.place(q, 0.0, 10000.0 + i, earliest=False)
        assert r.status == "run"
        bp.occupy(r, 0.0, 10000.0 + i)
    dt = time.perf_counter() - t0
    line("place + occupy 10,000 requests (buckets)", "< 1 s", f"{dt:.3f} s", dt < 1.0)


def bench_scatter() -> None:
    print("3. one 1,000-chunk scatter:excl request on 100,000 hosts")
    table = fleet(100000)
    bp, pn, _ = placers(table)
    q = SelectRequest.parse("1000:ncpus=1", "scatter:excl")
    bp.place(q, 0.0, 100.0, earliest=False)  # warm caches (chunk -> bucket map)
    reps = 50
    t0 = time.perf_counter()
    for _ in range(reps):
        r = bp.place(q, 0.0, 100.0, earliest=False)
    tb = (time.perf_counter() - t0) / reps
    assert r.status == "run" and r.exec_vnode.count("(") == 1000
    t0 = time.perf_counter()
    for _ in range(reps // 5):
        r2 = pn.place(q, 0.0, 100.0, earliest=False)
    tn = (time.perf_counter() - t0) / (reps // 5)
    assert r2.status == "run"
    _, _, state = bp, pn, bp.state
    t0 = time.perf_counter()
    for _ in range(reps // 5):
        got = naive_scan(table, state, 1000, 1.0, 0.0, 100.0)
    tv = (time.perf_counter() - t0) / (reps // 5)
    assert len(got) == 1000
    line("bucket path, one request", "<= 5 ms", f"{tb * 1e3:.2f} ms", tb <= 0.005)
    line("per-node path (numpy filters), same request", "", f"{tn * 1e3:.2f} ms", True)
    line("bucket speed-up over the per-node path", ">= 50x", f"{tn / tb:.1f}x", tn / tb >= 50)
    line("naive per-host scan (upstream's normal path shape)", "", f"{tv * 1e3:.2f} ms", True)
    line("bucket speed-up over the naive scan", ">= 50x", f"{tv / tb:.1f}x", tv / tb >= 50)


if __name__ == "__main__":
    bench_cannot_run()
    bench_run_many()
    bench_scatter()
