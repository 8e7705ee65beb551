"""The Scheduler's queue on a 5,000-host cluster, in one process: how many
queued requests it re-plans per second.

    .venv/bin/python benchmarks/bench_queue.py [--hosts 5000] [--queued 500]

The cluster is filled with one long request per host, then ``--queued``
requests arrive that cannot run now (each different: its own cpus, memory
and user, so no cache answers for another) and wait.  Timed: ``replan()``
over the whole queue while nothing has freed (every request planned and
refused again), then the same after one host in ten is released (the
requests that now fit start, the rest are planned and wait).
"""

from __future__ import annotations

import argparse
import time

from _report import check, info

from legionrm.inprocess import LocalSystem
from legionrm.models import ClassSpec, ClusterSpec, HostSpec, Identity, ObjectRequest, SchedulingRequest


def cluster(n: int) -> ClusterSpec:
    pools = ("batch", "big", "gpu", "edge")
    hosts = tuple(HostSpec(name=f"h{i}", nodepool=pools[i % 4], attributes={
        "arch": "x86_64", "cpus": 16, "memory_gb": 64, "site": "uva" if i % 2 else "cmu"}) for i in range(n))
    return ClusterSpec(hosts=hosts, classes=(ClassSpec(name="Worker"),))


def request(rid: str, count: int, cpus: float, mem: float, user: str) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), objects=(ObjectRequest(
        class_name="Worker", count=count, cpus=cpus, memory_gb=mem, placement="scatter"),))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=5000)
    ap.add_argument("--queued", type=int, default=500)
    args = ap.parse_args()
    system = LocalSystem(cluster(args.hosts))
    sched = system.scheduler
    fill = sched.scheduleObjects(request("fill", args.hosts, 16, 8, "owner"))
    assert fill.ok, fill.message
    system.heartbeat()
    for k in range(args.queued):
        r = sched.scheduleObjects(request(f"q{k}", 1 + k % 3, 1 + k % 8, 1 + k % 13, f"u{k % 17}"))
        assert r.state == "pending", r.message
    t = time.perf_counter()
    sched.replan()
    blocked = time.perf_counter() - t
    rate = args.queued / blocked
    print(f"{args.queued} queued requests re-planned over {args.hosts} hosts with nothing free: "
          f"{blocked * 1000:.0f} ms, {rate:,.0f} requests/s")
    # one host in ten frees: stop the instances of the fill request on those hosts
    freed = [ref for ref in sched.book.running_instances() if int(ref.host[1:]) % 10 == 0]
    for ref in freed:
        system.host(ref.host).stop_object(ref.instance_id, "done")
        system.classes["Worker"].instance_stopped(ref.instance_id)
    # ticks as the live system runs them: the hosts report, then the queue is re-planned; a request
    # planned on a host another one took since the last report is vetoed there and waits a tick
    freeing, rounds, started = 0.0, 0, 0
    while True:
        system.heartbeat()
        t = time.perf_counter()
        sched.replan()
        freeing += time.perf_counter() - t
        rounds += 1
        now = sum(1 for i in sched.list_requests() if i.state == "running") - 1
        if now == started or rounds >= 20:
            break
        started = now
    print(f"after {len(freed)} hosts freed: {started} queued requests started in {rounds} ticks, "
          f"{freeing * 1000:.0f} ms of re-planning")
    print()
    check(f"queue re-plan, {args.queued} waiting, {args.hosts} hosts", ">= 200/s", f"{rate:,.0f}/s", rate >= 200)
    info("re-plan after 10% of hosts freed", f"{freeing * 1000:.0f} ms", note=f"{started} started in {rounds} ticks")


if __name__ == "__main__":
    main()
