"""Digests of what the planner and the placement paths answer, to compare two
trees after a change meant to leave every answer as it was (a faster path).

    PYTHONPATH=TREE .venv/bin/python benchmarks/planner_answers.py

Prints three SHA-256 digests; run it on main and on the branch and compare:

1. plans: the suites of 300 varied plans (1-3 object requests each: counts,
   cpus, memory, gpus, storage, exclusive, every placement mode, a
   constraint) over 400 varied hosts and 4 vaults;
2. mixed: 3,000 requests (excl, scatter, free) through the bucket placer with
   earliest starts, occupies and releases, then the live state and the set
   sums;
3. buckets: 3,000 requests of six shapes (each its own mem: many compiled
   values), excl, scatter:excl and vscatter:excl, through both paths with
   earliest starts on every fourth, comments included, occupies and
   releases, then the live state and the set sums.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np

from bench_buckets import fleet, placers

from legionrm.collection.collection import Collection
from legionrm.models import ClassSpec, Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.base import PathPlacer
from legionrm.scheduler.placement.select import SelectRequest
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host, vault


def plans() -> str:
    rnd = random.Random(7)
    c = Collection(clock=FakeClock())
    for i in range(400):
        c.join(host(f"h{i:03d}", cpus=rnd.choice([4, 8, 16]), memory_gb=rnd.choice([16.0, 64.0]),
                    gpus=rnd.choice([0, 0, 2]), arch="x86_64" if i % 5 else "aarch64", load=rnd.random() * 4,
                    host_group=f"g{i % 7}", free_cpus=rnd.choice([0, 2, 4, 8])))
    for v in range(4):
        c.join(vault(f"v{v}", storage_gb=50.0 + 20 * v, serves=f"h{v}*"))
    snap = c.snapshot()
    p = Planner({"A": ClassSpec(name="A"), "B": ClassSpec(name="B")})
    h = hashlib.sha256()
    for k in range(300):
        objs = [ObjectRequest(class_name=rnd.choice("AB"), count=rnd.choice([1, 2, 5, 20, 60]),
                              cpus=rnd.choice([1, 2, 4]), memory_gb=rnd.choice([1.0, 8.0]), gpus=rnd.choice([0, 0, 1]),
                              storage_gb=rnd.choice([0.0, 0.0, 1.0]), exclusive=rnd.random() < 0.15,
                              placement=rnd.choice(["pack", "scatter", "vscatter", "free"]),
                              constraint=rnd.choice(["true", '$arch == "x86_64"']))
                for _ in range(rnd.choice([1, 1, 2, 3]))]
        plan = p.make_schedules(SchedulingRequest(request_id=f"r{k}", identity=Identity(user="u"),
                                                  objects=tuple(objs)), snap)
        h.update(plan.suite().model_dump_json().encode())
    return h.hexdigest()


def _state(h: "hashlib._Hash", state: HostState, placer: PathPlacer) -> None:
    v = state.live()
    for arr in (v.njobs, v.excl, v.next_event, v.pool, *[v.assigned[k] for k in sorted(v.assigned)]):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(repr(placer.sums.free_and_avail(placer.table.universe(None), v)).encode())


def mixed() -> str:
    h = hashlib.sha256()
    table = fleet(10010)
    bp, _, state = placers(table)
    toks = []
    for i in range(3000):
        q = SelectRequest.parse(["1:ncpus=1", "2:ncpus=1:mem=2gb", "3:ncpus=1+1:mem=1gb:color=red"][i % 3],
                                ["excl", "scatter", "free"][i % 3])
        r = bp.place(q, 0.0, 10000.0 + i, earliest=True)
        h.update(repr((r.status, r.earliest_start, r.allocation)).encode())
        if r.status == "run":
            toks.append(bp.occupy(r, float(i % 5), 10000.0 + i))
        if i % 7 == 0 and toks:
            bp.release(toks.pop(0))
    _state(h, state, bp)
    return h.hexdigest()


def buckets() -> str:
    h = hashlib.sha256()
    table = fleet(10010)
    bp, pn, state = placers(table)
    r = bp.place(SelectRequest.parse("1429:ncpus=1:color=yellow", "scatter:excl"), 0.0, 3600.0)
    bp.occupy(r, 0.0, 3600.0)
    shapes = ["{n}:color=blue:mem={m}mb+{n}:color=yellow:mem={k}mb", "{n}:ncpus=1:mem={m}mb",
              "{n}:mem={m}mb:color=red+2:ncpus=1", "1:ncpus=1:mem={m}kb", "{n}:ncpus=2", "{n}:mem={k}mb"]
    toks = []
    for i in range(3000):
        q = SelectRequest.parse(shapes[i % 6].format(n=1 + i % 40, m=1 + i, k=8191 - i),
                                ["scatter:excl", "excl", "vscatter:excl"][i % 3])
        for p in (bp, pn):
            r = p.place(q, float(i % 3), 100.0 + i, earliest=(i % 4 == 0))
            h.update(repr((r.status, r.earliest_start, r.failed_chunk, r.comment, r.allocation)).encode())
        if r.status == "run" and i % 2:
            toks.append(bp.occupy(r, float(i % 3), 500.0 + i))
        if i % 5 == 0 and toks:
            bp.release(toks.pop(0))
    _state(h, state, bp)
    return h.hexdigest()


if __name__ == "__main__":
    for name, fn in (("plans", plans), ("mixed", mixed), ("buckets", buckets)):
        print(f"{name:8} {fn()}")
