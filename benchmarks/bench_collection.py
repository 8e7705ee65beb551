"""The Collection under load, and memory at 100,000 hosts.

    .venv/bin/python benchmarks/bench_collection.py [--hosts 100000]

1. Ingest: 100,000 hosts send heartbeats in batches of 2,000 (one host
   group's ``update_many``), each heartbeat 4 attributes (load, free cpus,
   free memory, instances) with fresh values; after every batch the
   Collection answers a query (a snapshot and a MIL query over every host),
   as it does for the Scheduler while hosts report.  Heartbeats per second
   over the whole run, queries included.  Target: >= 50,000/s.  Every
   query's answer is checked (untimed) against the hosts the benchmark
   knows match: the very set, not just "some hits".
2. Memory (tracemalloc): what the Collection holds per host at 100,000
   hosts, and what one pending request holds in the Scheduler's request
   book (10,000 pending requests of 10 instances).  Figures, no target.

Times are CPU seconds of this process (time.process_time): the machine is shared, and a
wall clock under load counts the other processes' time.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
from _report import check, info

from legionrm.collection.collection import Collection
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.requests import RequestBook
from legionrm.testing import host

BATCH = 2000


class SimClock:
    """The hosts' time: one heartbeat interval a round, whatever the CPU takes.  On the wall
    clock a loaded box took longer than the stale window (3 x 5 s) to join 100,000 hosts, and
    hosts went stale before their first heartbeat, which the known set does not model."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def fleet(n: int, clock: SimClock | None = None) -> Collection:
    c = Collection(heartbeat_interval_s=5.0, clock=clock or SimClock())
    for i in range(n):
        c.join(host(f"h{i:06d}", cpus=16 if i % 4 else 64, memory_gb=64.0 if i % 4 else 512.0,
                    arch="x86_64" if i % 5 else "aarch64", host_group=f"g{i % 32}", load=0.0,
                    free_cpus=16, free_memory_gb=64.0, instances=0))
    return c


def ingest(c: Collection, clock: SimClock, n: int, rounds: int) -> tuple[float, int, int, int]:
    """Seconds, heartbeats, queries and wrong answers for ``rounds``
    heartbeats of every host, one round a heartbeat interval of ``clock``."""
    names = [f"h{i:06d}" for i in range(n)]
    rng = np.random.default_rng(7)
    beats = queries = wrong = 0
    dt = 0.0
    # the slow path's view: what each host last reported, and which are x86_64 (as fleet() made them)
    free_now = np.full(n, 16, dtype=np.int64)
    x86 = np.arange(n) % 5 != 0
    row_host = np.array([int(name[1:]) for name in c.snapshot().table.names.tolist()], dtype=np.int64)
    for r in range(rounds):
        clock.now += c.heartbeat_interval_s
        load = rng.random(n).round(3).tolist()
        free = rng.integers(0, 17, n).tolist()
        # the hosts' side (not timed): each host group's batch of heartbeats, fresh values
        batches = [[(names[k], {"load": load[k], "free_cpus": free[k], "free_memory_gb": 4.0 * free[k],
                                "instances": (16 - free[k]) // 4})
                    for k in range(start, min(n, start + BATCH))] for start in range(0, n, BATCH)]
        for b, batch in enumerate(batches):
            t0 = time.process_time()
            c.update_many(batch)
            hits = c.snapshot().rows('$kind == "host" and $free_cpus >= 8 and $arch == "x86_64"')
            dt += time.process_time() - t0
            beats += len(batch)
            queries += 1
            lo = b * BATCH
            free_now[lo:lo + len(batch)] = free[lo:lo + len(batch)]
            expected = np.flatnonzero((free_now >= 8) & x86)
            wrong += not np.array_equal(np.sort(row_host[hits]), expected)
    return dt, beats, queries, wrong


def memory_per_host(n: int) -> float:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    c = fleet(n)
    c.snapshot()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del c
    return used / n


def memory_per_pending(k: int) -> float:
    who = Identity(user="bench")
    reqs = [SchedulingRequest(request_id=f"q{i}", identity=who, wait=True, objects=(ObjectRequest(
        class_name="Worker", count=10, cpus=4, memory_gb=8, constraint=f'$arch == "x86_64" and $load < {i % 7}'),))
        for i in range(k)]
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    book = RequestBook(clock=time.time)
    for q in reqs:
        book.add(q)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(book.entries()) == k
    return used / k


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    n = args.hosts
    t0 = time.process_time()
    clock = SimClock()
    c = fleet(n, clock)
    print(f"{n:,} hosts joined in {time.process_time() - t0:.1f} s")
    print(f"\n1. heartbeats in batches of {BATCH:,}, 4 attributes each, a query after every batch")
    dt, beats, queries, wrong = ingest(c, clock, n, args.rounds)
    rate = beats / dt
    print(f"  {beats:,} heartbeats ({4 * beats:,} attribute values) and {queries} queries in {dt:.2f} s")
    check("Collection query answers, each checked against the known set", "0 wrong", f"{wrong} wrong",
          wrong == 0, note=f"{queries} queries")
    check(f"Collection ingest, {n:,} hosts, while answering queries", ">= 50,000/s", f"{rate:,.0f}/s",
          rate >= 50_000, before="not measured", note=f"{4 * rate:,.0f} attribute values/s")
    del c
    print("\n2. memory (tracemalloc)")
    per_host = memory_per_host(n)
    info(f"Collection memory per host at {n:,} hosts", f"{per_host / 1024:.2f} KiB", before="not measured")
    per_req = memory_per_pending(10_000)
    info("request book memory per pending request (10 instances)", f"{per_req / 1024:.2f} KiB",
         before="not measured")


if __name__ == "__main__":
    main()
