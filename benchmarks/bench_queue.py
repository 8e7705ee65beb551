"""One queue pass over 100,000 waiting requests on 10,000 hosts, with the
site's priority order and EASY backfill's reservation for the top job.

    .venv/bin/python benchmarks/bench_queue.py [--hosts 10000] [--queued 100000] [--ends 2000]

The queue is :mod:`legionrm.scheduler.backfill.synthetic`'s: hosts of 8, 16
or 32 cpus about 90% busy with work ending at ``--ends`` different times,
and ``--queued`` requests of 60 shapes (one or two kinds of instance, 1 to
16 of them, half a cpu to 16 each) and 41 walltimes from 500 users.  An
attempt places a request first fit on the cpus the pass's holds leave it
(the planner's rule, on cpus alone: the planner and the enactor are not
timed here; ``bench_enactor`` times them).

First it checks the fast pass (:class:`Backfill`) against the reference
pass (:class:`ReferenceBackfill`, every request asked afresh, shadow times
over the dense table of every host at every time) on smaller varied queues,
pass after pass: the same starts on the same cpus and the same reserved
starts, or the benchmark fails.  Then it times, at full size:

- the first pass over the queue (cold: every request's shape read, and the
  free cpus of a 90%-busy cluster filled);
- the next pass, after the work on 1% of the hosts ended (the pass a busy
  scheduler runs on each event): the target, one pass in at most 1 s.

Each timed figure is the site's order of the waiting requests
(:meth:`SitePolicy.order`, the multifactor priority) plus the pass, in CPU
seconds of this process (the machine is shared; the wall time is printed
beside it).
"""

from __future__ import annotations

import argparse
import os
import time

from _report import check, info

from legionrm.models import ClusterSpec
from legionrm.scheduler.backfill import Backfill
from legionrm.scheduler.backfill.reference import ReferenceBackfill
from legionrm.scheduler.backfill.synthetic import CpuQueue, Outcome, generate
from legionrm.scheduler.priority import SitePolicy, site_settings


def same(q: CpuQueue, fast: Backfill, mode: str, depth: int) -> tuple[bool, Outcome]:
    a, b = q.run(fast), q.run(ReferenceBackfill, mode, depth)  # type: ignore[arg-type]
    return (a.started, a.reserved) == (b.started, b.reserved), a


def checked(seeds: int) -> tuple[int, int]:
    """Fast and reference passes on ``seeds`` varied queues, three passes each: (passes, starts) compared."""
    passes = starts = 0
    for seed in range(seeds):
        for mode, depth in (("easy", 1), ("easy", 2), ("greedy", 0)):
            q = generate(100 + seed, hosts=300, requests=3000, ends=60)
            fast = q.rules(Backfill, mode, depth)  # type: ignore[arg-type]
            for k in range(3):
                ok, out = same(q, fast, mode, depth)
                assert ok, f"seed {seed}, {mode} depth {depth}, pass {k + 1}: the fast pass decided otherwise"
                passes, starts = passes + 1, starts + len(out.started)
                q.settle(out, 0.05, seed=k)
    return passes, starts


def timed(q: CpuQueue, rules: Backfill, site: SitePolicy) -> tuple[float, float, Outcome]:
    """The site's order and one pass: (CPU seconds of this process, wall seconds, what it did)."""
    t, w = time.process_time(), time.perf_counter()
    q.order = site.order(q.order, now=0.0)  # the queue keeps what waits (what runs is in q.running)
    out = q.run(rules)
    return time.process_time() - t, time.perf_counter() - w, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--ends", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    passes, starts = checked(a.seeds)
    print(f"fast pass = reference pass on {passes} passes ({starts} starts) of varied queues on 300 hosts")
    q = generate(1, a.hosts, a.queued, ends=a.ends)
    spec = ClusterSpec()
    site = SitePolicy(site_settings(spec), None, lambda: 0.0, float(q.total.sum()))
    rules = q.rules(Backfill, "easy", 1)
    cold, cold_wall, first = timed(q, rules, site)
    print(f"first pass: {a.queued:,} waiting, {len(q.running):,} running on {a.hosts:,} hosts: "
          f"{cold:.2f} s CPU ({cold_wall:.2f} s wall), {len(first.started)} started, reserved {first.reserved}")
    q.settle(first, 0.01)
    warm, warm_wall, out = timed(q, rules, site)
    waiting = sum(e.state == "pending" for e in q.order)
    print(f"next pass after 1% of the hosts' work ended: {waiting:,} waiting: {warm:.2f} s CPU "
          f"({warm_wall:.2f} s wall), {len(out.started)} started, reserved {out.reserved}")
    load = os.getloadavg()[0]
    print()
    check(f"one pass, {waiting // 1000}k waiting, {a.hosts // 1000}k hosts (site order + EASY)", "<= 1 s CPU",
          f"{warm:.2f} s CPU", warm <= 1.0, note=f"{len(out.started)} started; {warm_wall:.2f} s wall; load {load:.1f}")
    info("the first pass over the queue (cold, fills the cluster)", f"{cold:.2f} s CPU",
         note=f"{len(first.started)} started; {cold_wall:.2f} s wall")
    info("fast pass = reference pass", f"{passes} passes", note=f"{starts} starts compared")


if __name__ == "__main__":
    main()
