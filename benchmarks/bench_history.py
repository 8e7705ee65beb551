"""Bounded history: the Scheduler's memory and its per-submit time after 100
finished requests and after 10,000 (issue 28's "done when").

    .venv/bin/python benchmarks/bench_history.py [--finished 10000] [--batch 20]

An in-process system as a live one keeps its books: its request book in a
SQLite state store (under a temporary folder), resource pools, 8 hosts of 8
cpus.  Requests of one 1-cpu instance with a 1 s walltime arrive in batches
(20 users); after each batch the clock moves 40 s and the system ticks until
they have ended, been accounted and left the live book.  At 100 finished
requests and again at the end:

* memory: the Python heap traced by ``tracemalloc`` (started before the
  system is built), after a garbage collection: the whole process's
  objects, the Scheduler's book, triggers, results and pools among them;
* per submit: the median CPU time of the process (``time.process_time``)
  in ``scheduleObjects`` over the next 200 submits.  CPU time, not the wall
  clock: the machine is shared, and the wall clock would measure the other
  processes' load (a loaded two-core machine made the mark after 100 look
  three times slower than the one after 1,000); the median, so a stray
  collection does not decide it.  Under tracemalloc too: both marks pay its
  overhead alike.

Before the first mark the process's one fixed-size cache that grows with
the strings it meets is filled: pydantic's JSON string cache (16,384 strings
of at most 64 characters, shared by every ``model_validate_json``; the
Scheduler reads accounting records through it).  It is full in any process
that has read a few thousand records, and it holds about 1 MB: left empty, it
fills between the two marks and reads as 87 bytes per request (a first run
measured +49%), which is not the Scheduler's memory growing.

The target: each figure after 10,000 within 10% of the one after 100.  The
Scheduler runs with the default configuration (``history_keep = 1000``, a
day): with a store, a finished request leaves memory once accounted, whatever
the window.  The hosts' own records are bounded
too, but would fill while this runs and mask the Scheduler's figure: each
closed reservation is kept until its token's expiry plus ``retain_s`` (an
hour by default; 0 here, with batches 40 s apart, longer than a token's
30 s), and the last 1000 stops per host (the last 10 here).
"""

from __future__ import annotations

import argparse
from collections import deque
import gc
import json
import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from _report import check, info
from pydantic import TypeAdapter

from legionrm.inprocess import LocalSystem
from legionrm.models import ClassSpec, ClusterSpec, HostSpec, Identity, ObjectRequest, PoolSpec, SchedulingRequest
from legionrm.models.cluster import PoolResourceSpec
from legionrm.scheduler.wiring import pool_gate
from legionrm.state import RequestStore
from legionrm.testing import FakeClock

HOSTS, CPUS = 8, 8
WINDOW = 200
"""Submits timed at each mark."""


def spec() -> ClusterSpec:
    pool = PoolSpec(path="/batch", default=True, resources=(
        PoolResourceSpec(kind="cpu", reservation=0, limit=HOSTS * CPUS, share=1),
        PoolResourceSpec(kind="memory", reservation=0, limit=HOSTS * 32 * 1024, share=1)))
    return ClusterSpec(hosts=tuple(HostSpec(name=f"h{i}", attributes={"cpus": CPUS, "memory_gb": 32})
                                   for i in range(HOSTS)), classes=(ClassSpec(name="W"),), pools=(pool,))


def request(n: int) -> SchedulingRequest:
    return SchedulingRequest(request_id=f"r{n:06d}", identity=Identity(user=f"u{n % 20}"), objects=(
        ObjectRequest(class_name="W", count=1, cpus=1, memory_gb=1, walltime_s=1.0),))


class Load:
    """The system under load and its count of finished requests."""

    def __init__(self, home: Path) -> None:
        self.clock = FakeClock()
        cluster = spec()
        self.system = LocalSystem(cluster, clock=self.clock, pools=pool_gate(cluster),
                                  store=RequestStore(home / "scheduler.db"))
        for group in self.system.groups.values():  # see the module: the hosts' own records, kept short
            for name in group.names():
                group.get(name).retain_s = 0.0
                group.get(name).stopped = deque(maxlen=10)
        self.n = 0
        self.submit_s: list[float] = []

    def batch(self, size: int, timed: bool) -> None:
        """``size`` submits, then ticks until every one ended and left the live book."""
        sched = self.system.scheduler
        for _ in range(size):
            t = time.process_time()
            response = sched.scheduleObjects(request(self.n))
            if timed:
                self.submit_s.append(time.process_time() - t)
            assert response.ok, response.message
            self.n += 1
        self.clock.advance(40.0)
        for _ in range(4):  # the walltime ends; the results sweep accounts; the book settles
            self.system.tick()
        assert not sched.book.entries(), [e.id for e in sched.book.entries()]

    def run_to(self, finished: int, batch: int) -> None:
        while self.n < finished:
            self.batch(min(batch, finished - self.n), timed=False)

    def per_submit_ms(self, batch: int) -> float:
        """Median CPU ms of ``scheduleObjects`` over the next :data:`WINDOW` submits."""
        self.submit_s = []
        while len(self.submit_s) < WINDOW:
            self.batch(batch, timed=True)
        return statistics.median(self.submit_s) * 1000


def fill_string_cache() -> None:
    """Fill pydantic's JSON string cache (see the module doc) as a long-running process has."""
    TypeAdapter(list[str]).validate_json(json.dumps([f"warm-{i:06d}" for i in range(200_000)]))


def heap_kb() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 1024


def rss_kb() -> float:
    """The process's resident memory (Linux; 0 elsewhere): SQLite's own caches and the allocator's slack too."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024
    except (OSError, ValueError, IndexError):
        return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--finished", type=int, default=10_000, help="finished requests at the second mark")
    ap.add_argument("--batch", type=int, default=20, help="requests submitted between ticks")
    args = ap.parse_args()
    print(f"bounded history: {HOSTS} hosts x {CPUS} cpus, a SQLite request book, batches of {args.batch}")

    with tempfile.TemporaryDirectory() as tmp:
        tracemalloc.start()
        fill_string_cache()
        t = time.perf_counter()
        load = Load(Path(tmp))
        load.run_to(100, args.batch)
        mem_100, rss_100 = heap_kb(), rss_kb()
        ms_100 = load.per_submit_ms(args.batch)
        load.run_to(args.finished, args.batch)
        mem_n, rss_n = heap_kb(), rss_kb()
        ms_n = load.per_submit_ms(args.batch)
        tracemalloc.stop()
        print(f"  ({load.n:,} requests in {time.perf_counter() - t:.0f} s, under tracemalloc)")
        store = load.system.scheduler.book.store
        assert store is not None
        info("finished requests in the durable history", f"{sum(store.finished_counts().values()):,}")
        info("requests in the live book at the end", f"{len(load.system.scheduler.book.entries())}")

    info("heap after 100 finished requests", f"{mem_100:,.0f} KB")
    info(f"heap after {args.finished:,} finished requests", f"{mem_n:,.0f} KB",
         note=f"{(mem_n - mem_100) * 1024 / max(args.finished - 100, 1):,.0f} bytes per request more")
    check(f"memory after {args.finished:,} vs after 100 finished", "<= +10%", f"{(mem_n / mem_100 - 1) * 100:+.1f}%",
          mem_n <= mem_100 * 1.10, before="+22 KB/req")
    info("resident memory after 100 / after the last", f"{rss_100:,.0f} / {rss_n:,.0f} KB",
         note="the whole process, SQLite's page cache and the allocator's slack too")
    info("per submit after 100 finished requests", f"{ms_100:.2f} ms", note="median CPU time")
    info(f"per submit after {args.finished:,} finished requests", f"{ms_n:.2f} ms", note="median CPU time")
    check(f"per-submit time after {args.finished:,} vs after 100", "<= +10%", f"{(ms_n / ms_100 - 1) * 100:+.1f}%",
          ms_n <= ms_100 * 1.10, before="-16% tput@3k")


if __name__ == "__main__":
    main()
