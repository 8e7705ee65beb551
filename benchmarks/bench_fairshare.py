"""Time one DUCC scheduling cycle on DUCC's own benchmark load.

Load (as measured with DUCC's Java scheduler, 250-600 ms per cycle there):
1,000 machines of 64 qshares, 300 jobs of 50 users in 3 weighted classes,
6 job orders, expand-by-doubling on.  Also 10,000 machines with 5,000 jobs.
Prints the first cycle (everything new) and the mean of the next cycles
(expansion by doubling, evictions confirmed in between), side by side with
the DUCC figure and the targets.  Seeded: the same numbers every run.

The DUCC column is *cited* from DUCC's documentation of its Java scheduler
(not measured here: there is no JVM DUCC on this machine).  Every cycle's
result is checked (:func:`problems`) before its time counts: no machine
holds more than its quantum shares, each job's process count matches the
shares it holds, every allocation lands on a machine the job holds, and the
first cycle places work at all.

Times are CPU seconds of this process (time.process_time): the machine is shared, and a
wall clock under load counts the other processes' time.
"""

from __future__ import annotations

import random
import statistics
import time

from _report import check

from legionrm.scheduler.fairshare.classes import ResourceClassSpec, RmSettings
from legionrm.scheduler.fairshare.core import CycleResult, DuccCore

MACHINE_QSHARES = 64


def build(machines: int, jobs: int, users: int, seed: int = 7) -> DuccCore:
    rng = random.Random(seed)
    s = RmSettings(quantum_gb=1, expand_by_doubling=True, prediction=True, initialization_cap=2)
    classes = [
        ResourceClassSpec("low", policy="FAIR_SHARE", weight=50),
        ResourceClassSpec("normal", policy="FAIR_SHARE", weight=100, default=True),
        ResourceClassSpec("high", policy="FAIR_SHARE", weight=200),
    ]
    core = DuccCore(s, [], classes)
    for i in range(machines):
        core.add_machine(f"n{i:05d}", MACHINE_QSHARES)
    orders = [1, 2, 4, 8, 15, 30]
    for i in range(jobs):
        core.submit(
            f"j{i:05d}", f"user{rng.randrange(users):03d}", rng.choice(orders),
            cls=rng.choice(["low", "normal", "high"]), work_items=rng.randint(50, 5000),
            time_per_item_ms=rng.choice([0, 500, 2000, 10000]), init_time_ms=30000,
        )
    return core


def problems(result: CycleResult) -> list[str]:
    """What is wrong with one cycle's decisions (empty when it is sound)."""
    found: list[str] = []
    held: dict[str, int] = {}
    for jid, job in result.jobs.items():
        if job.processes != sum(job.machines.values()):
            found.append(f"{jid}: {job.processes} processes but {sum(job.machines.values())} shares held")
        for machine, n in job.machines.items():
            held[machine] = held.get(machine, 0) + n * job.order
    for name, m in result.machines.items():
        if held.get(name, 0) + m.free > m.order:
            found.append(f"{name}: {held.get(name, 0)} qshares held + {m.free} free > {m.order}")
    for ev in result.allocations:
        job = result.jobs.get(ev.job)
        if job is None or ev.machine not in job.machines:
            found.append(f"allocation {ev.share} of {ev.job} on {ev.machine} is not held")
    return found


def cycles(core: DuccCore, n: int) -> tuple[list[float], list[str]]:
    """Time ``n`` cycles; the problems found in any of their results."""
    out: list[float] = []
    found: list[str] = []
    for i in range(n):
        core.confirm_evictions()
        t0 = time.process_time()
        result = core.run_cycle()
        out.append((time.process_time() - t0) * 1000)
        found += problems(result)
        if i == 0 and not result.allocations:
            found.append("the first cycle placed nothing")
    return out, found


def main() -> None:
    print(f"{'load':<34}{'first ms':>10}{'next ms (mean)':>16}{'DUCC ms, cited':>16}{'target ms':>11}")
    before = {1000: ("41.8", "43.4"), 10000: ("548.4", "534.3")}
    rows = []
    for label, m, j, u, ducc, target in (
        ("1,000 x 64q, 300 jobs, 50 users", 1000, 300, 50, "250-600", 100),
        ("10,000 x 64q, 5,000 jobs, 500 users", 10000, 5000, 500, "-", 1000),
    ):
        core = build(m, j, u)
        times, found = cycles(core, 6)
        nxt = statistics.mean(times[1:])
        print(f"{label:<34}{times[0]:>10.1f}{nxt:>16.1f}{ducc:>16}{target:>11}")
        rows.append((label, m, target, times[0], nxt, found))
    for label, m, target, first, nxt, found in rows:
        check(f"DUCC cycle {label.split(' x ')[0]} machines, results sound", "0 problems",
              f"{len(found)} problems", not found, note="; ".join(found[:3]))
        check(f"DUCC cycle {label.split(' x ')[0]} machines, first", f"<= {target} ms", f"{first:.1f} ms",
              first <= target, before=f"{before[m][0]} ms")
        check(f"DUCC cycle {label.split(' x ')[0]} machines, next", f"<= {target} ms", f"{nxt:.1f} ms",
              nxt <= target, before=f"{before[m][1]} ms")


if __name__ == "__main__":
    main()
