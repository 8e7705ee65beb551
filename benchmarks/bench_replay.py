"""The queue's policies on the generated trace, replayed through the real
Scheduler in simulated time (``legionrm simulate --swf``), and how fast a
replay runs.

    .venv/bin/python benchmarks/bench_replay.py [--jobs 2000] [--timed 10000] [--hosts 256] [--cpus-per-host 4]
        [--policies fcfs,easy,site]

Prints the README's table (fcfs, easy and site on the first ``--jobs`` jobs
of ``benchmarks/traces/lublin_1024.swf``), checks that ``site`` beats
``fcfs`` on utilization and p95 wait with its longest wait no longer than
fcfs's, then times a replay of ``--timed`` jobs under each of ``--policies``
(default fcfs, easy and site; one row each; target: 10,000 jobs on 256
hosts in under a minute; ``--jobs 0`` times them only).  Times are CPU seconds of this
process (the machine is shared).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _report import check

from legionrm.replay import read, replay, summary

TRACE = Path(__file__).parent / "traces" / "lublin_1024.swf"
KEYS = ("utilization", "wait_mean_s", "wait_median_s", "wait_p95_s", "wait_max_s", "bounded_slowdown_mean",
        "makespan_s", "jain_index")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--timed", type=int, default=10_000)
    ap.add_argument("--hosts", type=int, default=256)
    ap.add_argument("--cpus-per-host", type=int, default=4)
    ap.add_argument("--policies", default="fcfs,easy,site", help="the timed replays, one row each")
    a = ap.parse_args()
    cpus = a.hosts * a.cpus_per_host
    if a.jobs > 0:  # (0: the timed rows only)
        jobs = read(TRACE, limit=a.jobs).jobs
        rows = {p: summary(p, replay(jobs, a.hosts, a.cpus_per_host, p).outcomes, cpus) for p in ("fcfs", "easy", "site")}
        print(f"| policy | {' | '.join(KEYS)} |")
        print(f"|---|{'---|' * len(KEYS)}")
        for p, r in rows.items():
            print(f"| {p} | {' | '.join(str(r[k]) for k in KEYS)} |")
        print()
        site, fcfs = rows["site"], rows["fcfs"]
        check("site beats fcfs on utilization", f"> {fcfs['utilization']}", str(site["utilization"]),
              site["utilization"] > fcfs["utilization"])
        check("site beats fcfs on p95 wait", f"< {fcfs['wait_p95_s']:.0f} s", f"{site['wait_p95_s']:.0f} s",
              site["wait_p95_s"] < fcfs["wait_p95_s"])
        check("site's longest wait bounded by fcfs's", f"<= {fcfs['wait_max_s']:.0f} s", f"{site['wait_max_s']:.0f} s",
              site["wait_max_s"] <= fcfs["wait_max_s"])
    timed = read(TRACE, limit=a.timed).jobs
    instances = sum(-(-j.procs // a.cpus_per_host) for j in timed)
    for policy in a.policies.split(","):
        t = time.process_time()
        done = replay(timed, a.hosts, a.cpus_per_host, policy)
        cpu = time.process_time() - t
        check(f"replay of {len(timed):,} jobs on {a.hosts} hosts ({policy})", "< 60 s", f"{cpu:.0f} s CPU", cpu < 60,
              note=f"{len(done.outcomes)} jobs, {instances:,} instances, {cpu / max(len(timed), 1) * 1e3:.1f} ms a job, "
                   f"{cpu / max(instances, 1) * 1e3:.2f} ms an instance")


if __name__ == "__main__":
    main()
