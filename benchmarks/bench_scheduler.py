"""The Scheduler core end to end, in one process: planning and negotiated
placement over many hosts (no Ray; bench_enactor.py measures the actors).

    .venv/bin/python benchmarks/bench_scheduler.py [--hosts 5000]

1. ``make_schedules`` (one Collection snapshot -> filters -> rankers -> ranked
   masters with deltas) for requests of 1, 100 and 1,000 instances over N
   simulated hosts in 4 nodepools, median of several runs.
2. ``scheduleObjects`` for 100-instance requests, back to back until N
   placements, each planned on the snapshot the last heartbeat left:
   planning, reservations with signed tokens at the hosts, class objects
   starting instances; negotiated placements per second, with the share of
   time spent planning.  ``--passes`` passes (3), each on a fresh cluster:
   the row is their median (one pass is about 0.6 s of CPU, and this VM's
   speed moves by a fifth from minute to minute).
3. ``make_schedules`` for 1,000 instances on 100,000 hosts in 32 host groups
   (a Collection of host records, no host objects: planning reads only the
   Collection); before each timed run one host sends a heartbeat, so every
   run plans on a new snapshot, as a live cycle would (``--big 0`` skips it).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from legionrm.collection.collection import Collection
from legionrm.scheduler.planner import Planner
from legionrm.testing import host

from _report import check, info

from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    SchedulingRequest,
)


def cluster(n: int) -> ClusterSpec:
    pools = ("batch", "big", "gpu", "edge")
    hosts = tuple(
        HostSpec(name=f"h{i}", nodepool=pools[i % 4], attributes={
            "arch": "x86_64" if i % 5 else "aarch64", "cpus": 16 if i % 4 else 64, "memory_gb": 64 if i % 4 else 512,
            "gpus": 4 if i % 4 == 2 else 0, "site": "uva" if i % 2 else "cmu"})
        for i in range(n)
    )
    return ClusterSpec(hosts=hosts, classes=(ClassSpec(name="Worker"),))


def request(rid: str, count: int) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="bench"), objects=(ObjectRequest(
        class_name="Worker", count=count, cpus=4, memory_gb=8, placement="scatter", constraint='$arch == "x86_64"'),))


def big_planning(n: int, groups: int = 32, runs: int = 7) -> float:
    """Median ms of make_schedules (1,000 instances) on ``n`` hosts in ``groups`` host groups."""
    t0 = time.perf_counter()
    c = Collection()
    pools = ("batch", "big", "gpu", "edge")
    for i in range(n):
        c.join(host(f"h{i}", nodepool=pools[i % 4], arch="x86_64" if i % 5 else "aarch64", cpus=16 if i % 4 else 64,
                    memory_gb=64 if i % 4 else 512, gpus=4 if i % 4 == 2 else 0, site="uva" if i % 2 else "cmu",
                    host_group=f"g{i % groups}"))
    print(f"\nmake_schedules on {n:,} hosts in {groups} host groups (Collection built in "
          f"{time.perf_counter() - t0:.1f} s), 1,000 instances, a heartbeat before each run")
    planner = Planner({"Worker": ClassSpec(name="Worker")})
    times, plan = [], None
    for k in range(runs):
        c.update(f"h{k}", {"load": 0.1 * (k + 1)})  # a new snapshot per run
        t = time.perf_counter()
        plan = planner.make_schedules(request(f"big-{k}", 1000), c.snapshot())
        times.append((time.perf_counter() - t) * 1000)
    assert plan is not None and plan.ok
    used = {p.group for p in plan.masters[0].placements}
    print(f"  median {statistics.median(times):.1f} ms (runs: {', '.join(f'{x:.0f}' for x in times)}); "
          f"{len(plan.masters)} masters, master 1 spans {len(used)} host groups")
    return statistics.median(times)


def negotiate(system: LocalSystem, hosts: int) -> tuple[int, float, float, float, int]:
    """One pass of scheduleObjects (100 instances a request) until ``hosts`` placements; each
    request is planned inside it on the snapshot the last heartbeat left, as in a deployment
    (nothing planned beforehand: a plan before it would build that snapshot's tables untimed).
    Checks, untimed, that every placement started on its host with a token of its own.  Returns
    (placements, CPU s in scheduleObjects, CPU s of it in the planner, wall s, requests)."""
    # CPU seconds of this process (the machine is shared: under load a wall clock counts others' time);
    # the planning share timed around the planner's own call
    planner, planning = system.scheduler.planner, [0.0]
    plan = planner.make_schedules

    def timed_plan(*a: object, **kw: object) -> object:
        t = time.process_time()
        try:
            return plan(*a, **kw)
        finally:
            planning[0] += time.process_time() - t

    planner.make_schedules = timed_plan  # (an instance attribute: only this system's planner, only here)
    placed, sched_s, wall_s, k = 0, 0.0, 0.0, 0
    for k in range(hosts // 100):
        s0, w0 = time.process_time(), time.perf_counter()
        r = system.scheduler.scheduleObjects(request(f"s{k}", 100))
        sched_s += time.process_time() - s0
        wall_s += time.perf_counter() - w0
        if not r.ok:
            break
        placed += len(r.instances)
        system.heartbeat()  # the hosts report what they now hold (not timed: heartbeats are the hosts' work)
    del planner.make_schedules
    running = [ref for g in system.groups.values() for ref in g.list_instances()]
    used = {ref.token_id for ref in running}
    check("every placement started on its host, one token each", f"{placed} running",
          f"{len(running)} running, {len(used)} tokens", len(running) == placed == len(used))
    return placed, sched_s, planning[0], wall_s, k + 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=5000)
    ap.add_argument("--big", type=int, default=100_000, help="hosts for the large planning run (0: skip)")
    ap.add_argument("--runs", type=int, default=9, help="timed runs per make_schedules size")
    ap.add_argument("--passes", type=int, default=3,
                    help="scheduleObjects passes, each on a fresh cluster (the row: their median)")
    ap.add_argument("--no-freeze", action="store_true", help="leave the built system in the collector's generations")
    args = ap.parse_args()
    t0 = time.perf_counter()
    system = LocalSystem(cluster(args.hosts))
    print(f"{args.hosts} hosts built in {time.perf_counter() - t0:.2f} s")
    # What the Scheduler actor and the gateway do after boot, done here openly (LocalSystem.freeze is
    # opt-in: it is process-wide): the built hosts leave the collector's generations, so its full
    # collections no longer walk them.  --no-freeze measures without it.
    frozen = "gc not frozen (--no-freeze)" if args.no_freeze else "gc frozen after the build"
    if args.no_freeze:
        print(f"  {frozen}")
    else:
        print(f"  {frozen} ({system.freeze():,} objects), as the Scheduler actor does after boot")
        # (a frozen LocalSystem's heartbeat then collects the Collection records it replaced: in a
        # deployment they are the Collection actor's, in its own process, not the Scheduler's)
        print("  the untimed heartbeats collect what they leave (the Collection actor's garbage in a deployment)")

    # CPU time of this process (the machine is shared: under load a wall clock counts others' time).
    # A plan keeps its masters as columns until they are read (planning/drafts.py): "+ models" is the
    # plan with every master's Placement models made, as the Enactor's request reads them.
    print(f"\nmake_schedules (plan only), median of {args.runs}, CPU ms")
    print(f"{'instances':>10} {'median ms':>10} {'+ models':>9} {'masters':>8} {'deltas':>7}")
    medians: dict[int, float] = {}
    fastest: dict[int, float] = {}
    with_models: dict[int, float] = {}
    for count in (1, 100, 1000):
        times, made, plan = [], [], None
        for k in range(args.runs):
            t = time.process_time()
            plan = system.scheduler.make_schedules(request(f"p{count}-{k}", count))
            t1 = time.process_time()
            masters = list(plan.masters)
            made.append((time.process_time() - t) * 1000)
            times.append((t1 - t) * 1000)
            # checked untimed: every instance placed once per master, each host at most once (scatter)
            for m in masters:
                hosts = [p.host for p in m.placements]
                assert len(hosts) == count == len(set(hosts)), (count, len(hosts), len(set(hosts)))
        print(f"{count:>10} {statistics.median(times):>10.1f} {statistics.median(made):>9.1f} {len(plan.masters):>8} "
              f"{sum(len(m.deltas) for m in plan.masters):>7}")
        medians[count] = statistics.median(times)
        fastest[count] = min(times)
        with_models[count] = statistics.median(made)

    print("\nthe placement engine fed by the planner (EngineFeed), 1,000 instances scatter:excl")
    feed = system.scheduler.planner.engine if hasattr(system.scheduler, "planner") else None
    if feed is not None:
        snap = system.collection.snapshot()
        obj = ObjectRequest(class_name="Worker", count=1000, cpus=4, memory_gb=8, placement="scatter", exclusive=True)
        t = time.perf_counter()
        feed.place(obj, snap)
        first = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        feed.place(obj, snap)
        again = (time.perf_counter() - t) * 1000
        snap2 = system.collection.snapshot()
        t = time.perf_counter()
        ans = feed.place(obj, snap2)
        fresh = (time.perf_counter() - t) * 1000
        print(f"  {ans.status} on the {ans.path} path")
        info("EngineFeed: node table + host state + place (first)", f"{first:.1f} ms")
        info("EngineFeed: place again, same snapshot", f"{again:.2f} ms")
        info("EngineFeed: new snapshot, same hosts (state + place)", f"{fresh:.1f} ms")

    print(f"\nscheduleObjects, 100 instances per request, until {args.hosts:,} placements, {args.passes} passes")
    print("  (each placement is reserved with a signed token and its instance created: the token is checked at start)")
    passes = []
    for n in range(args.passes):
        if n:  # a fresh cluster each pass (the last one is full): built and frozen as the first
            gc.unfreeze()
            system = None
            system = LocalSystem(cluster(args.hosts))
            if not args.no_freeze:
                system.freeze()
        passes.append(negotiate(system, args.hosts))
        placed, sched_s, plan_s, wall_s, requests = passes[-1]
        print(f"  pass {n + 1}: {placed} placements in {sched_s:.2f} s of CPU ({wall_s:.2f} s wall): "
              f"{placed / sched_s:,.0f}/s (planning {plan_s / sched_s:.0%} of it, "
              f"{plan_s / max(1, requests) * 1000:.1f} ms per request)")
    rates = [p[0] / p[1] for p in passes]
    placed, sched_s, plan_s, wall_s, _ = sorted(passes, key=lambda p: p[0] / p[1])[len(passes) // 2]
    print()
    if args.hosts == 5000:
        check("make_schedules, 1,000 instances, 5,000 hosts", "<= 10 ms", f"{medians[1000]:.1f} ms",
              medians[1000] <= 10, before="23.7 ms", note=f"CPU time; fastest run {fastest[1000]:.1f} ms")
        info("  + its 3,000 Placement models made (read by the Enactor)", f"{with_models[1000]:.1f} ms")
        rate = placed / sched_s
        each = ", ".join(f"{r:,.0f}" for r in rates)
        check("scheduleObjects in-process, 5,000 hosts", ">= 10,000/s", f"{rate:,.0f}/s", rate >= 10_000,
              before="4,560/s", note=f"CPU time; median of {len(rates)} passes ({each}); {frozen}; wall {placed / wall_s:,.0f}/s; planning {plan_s / sched_s:.0%}; the rest, {(sched_s - plan_s) / placed * 1e6:.0f} "
              "us a placement, is reserving with signed tokens, checking them at start, starting and bookkeeping")
    if args.big:
        big = big_planning(args.big)
        check(f"make_schedules, 1,000 instances, {args.big:,} hosts / 32 groups", "<= 50 ms", f"{big:.1f} ms",
              big <= 50, before="not measured")

if __name__ == "__main__":
    main()
