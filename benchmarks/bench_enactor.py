"""Enactor speed on local Ray: negotiated placements per second, and the
parallel enactor against the same schedule enacted one reservation at a time.

    RAY_AUTH_MODE=disabled .venv/bin/python benchmarks/bench_enactor.py [--hosts 5000 --groups 4]

1. 5,000 simulated hosts in 4 host group actors (real HostObject cores:
   calendars, owner policies, HMAC-signed tokens).  The EnactorActor enacts
   schedules of 1,000 placements each; 5% of the hosts deny the user, so some
   placements are vetoed and repaired by delta schedules.  Target: at least
   1,000 negotiated placements per second (kube-scheduler's CI floor is 680 to
   810 pods/s; Ray placement groups about 19/s).
2. The same 100-placement schedule enacted by the core with the parallel
   Ray gateway (one batched call per group, all groups at once) and with a
   gateway that makes one reservation call at a time and waits for it.
   Target: parallel at least 10 times faster.

Starts its own lean local Ray and shuts it down; leaves nothing running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import ray  # noqa: E402

from legionrm.enactor.actor import EnactorActor, RayGateway  # noqa: E402
from legionrm.enactor.enactor import Enactor  # noqa: E402
from legionrm.models import (  # noqa: E402
    DeltaSchedule,
    EnactRequest,
    Holder,
    MasterSchedule,
    Placement,
    Refusal,
    ReservationToken,
    Resources,
)

USER = Holder(user="bench", class_name="Sim")
DENY_EVERY = 20  # host i with i % 20 == 7 denies the user: 5% vetoes
N_HOSTS = [5000]


def host_name(i: int) -> str:
    return f"sim{i:05d}"


def group_of(i: int, groups: int) -> str:
    return f"bench-group-{i % groups}"


def start_groups(n_hosts: int, n_groups: int) -> dict[str, object]:
    """Host group actors, each building its own host cores in its process."""
    from legionrm.hostobj.actor import HostGroupActor

    handles = {}
    for g in range(n_groups):
        names = [host_name(i) for i in range(n_hosts) if i % n_groups == g]
        deny = {host_name(i) for i in range(n_hosts) if i % n_groups == g and i % DENY_EVERY == 7}
        handles[f"bench-group-{g}"] = HostGroupActor.options(num_cpus=0).remote(f"bench-group-{g}", _host_specs(names, deny))
    ray.get([h.__ray_ready__.remote() for h in handles.values()])
    return handles


def _host_specs(names: list[str], deny: set[str]) -> list:
    from legionrm.models import HostSpec

    return [
        HostSpec(
            name=n,
            attributes={"cpus": 4, "memory_gb": 16},
            policy="DenyUsers" if n in deny else None,
            policy_args={"names": [USER.user]} if n in deny else {},
        )
        for n in names
    ]


def schedule(rid: str, keys: range, n_hosts: int, n_groups: int, spread: int) -> EnactRequest:
    """One master over ``keys``; every placement whose host denies the user
    gets a one-key delta to the next host."""
    placements, deltas = [], []
    for k in keys:
        i = (k * spread) % n_hosts
        placements.append(
            Placement(key=f"Sim#{k}", class_name="Sim", host=host_name(i), resources=Resources(cpus=1, memory_gb=1), group=group_of(i, n_groups))
        )
        if i % DENY_EVERY == 7:
            j = (i + 1) % n_hosts
            deltas.append(
                DeltaSchedule(
                    placements=(
                        Placement(key=f"Sim#{k}", class_name="Sim", host=host_name(j), resources=Resources(cpus=1, memory_gb=1), group=group_of(j, n_groups)),
                    )
                )
            )
    return EnactRequest(
        request_id=rid, holder=USER, masters=(MasterSchedule(placements=tuple(placements), deltas=tuple(deltas)),), create=False
    )


class SerialRayGateway(RayGateway):
    """The same routes, but one reservation per call, each awaited before the next."""

    def reserve(self, requests, groups=None):
        out: list[ReservationToken | Refusal] = []
        for i, rq in enumerate(requests):
            h = self.groups[groups[i]]
            out.append(ray.get(h.make_reservations.remote([rq]))[0])
        return out


def release(handles, res) -> None:
    """Give a result's reservations back (outside the timed part)."""
    n_groups = len(handles)
    members = {host_name(i): group_of(i, n_groups) for i in range(N_HOSTS[0])}
    RayGateway(groups=handles, members=members).cancel([*res.host_tokens.values(), *res.vault_tokens.values()])


def bench_throughput(enactor, handles, n_hosts, n_groups, per_schedule, rounds):
    rates, made, deltas = [], 0, 0
    for r in range(rounds):
        req = schedule(f"tp{r}", range(r * per_schedule, (r + 1) * per_schedule), n_hosts, n_groups, spread=1)
        t0 = time.perf_counter()
        res = ray.get(enactor.enact_schedule.remote(req))
        dt = time.perf_counter() - t0
        assert res.ok, res.attempts
        assert res.thrash == 0
        rates.append(per_schedule / dt)
        made += res.reservations_made
        deltas += res.attempts[-1].deltas_tried
        release(handles, res)
    return rates, made, deltas


def bench_parallel_vs_serial(handles, n_hosts, n_groups, n=100, repeats=5):
    par = Enactor(RayGateway(groups=handles))
    ser = Enactor(SerialRayGateway(groups=handles))
    tp, ts = [], []
    for r in range(repeats):
        for core, times, tag in ((par, tp, "p"), (ser, ts, "s")):
            # the same placements each time, spread over every group; released after
            req = schedule(f"cmp{tag}{r}", range(n), n_hosts, n_groups, spread=37)
            t0 = time.perf_counter()
            res = core.enact_schedule(req)
            times.append(time.perf_counter() - t0)
            assert res.ok
            release(handles, res)
    return statistics.median(tp), statistics.median(ts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=5000)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--per-schedule", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    N_HOSTS[0] = args.hosts

    tmp = tempfile.mkdtemp(prefix="lrmb", dir="/tmp")
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, _temp_dir=tmp, log_to_driver=False, logging_level="ERROR")
    try:
        handles = start_groups(args.hosts, args.groups)
        enactor = EnactorActor.remote(groups=handles)
        ray.get(enactor.ping.remote())
        print(f"setup: {args.hosts} hosts in {args.groups} host group actors, {time.perf_counter() - t0:.1f}s")
        # warm up (imports, first pickles)
        release(handles, ray.get(enactor.enact_schedule.remote(schedule("warm", range(50), args.hosts, args.groups, 1))))

        rates, made, deltas = bench_throughput(enactor, handles, args.hosts, args.groups, args.per_schedule, args.rounds)
        med = statistics.median(rates)
        print()
        print("negotiated placements per second (EnactorActor, real signed tokens, 5% vetoes repaired by deltas)")
        print(f"  {'measured (median of %d x %d)' % (args.rounds, args.per_schedule):<40} {med:>10,.0f} /s   (min {min(rates):,.0f}, max {max(rates):,.0f})")
        print(f"  {'target':<40} {1000:>10,} /s   {'PASS' if med >= 1000 else 'FAIL'}")
        print(f"  {'kube-scheduler CI floor':<40} {'680-810':>10} /s")
        print(f"  {'Ray placement groups':<40} {19:>10} /s")
        print(f"  reservations made {made}, deltas used {deltas}, thrash 0")

        tp, ts = bench_parallel_vs_serial(handles, args.hosts, args.groups)
        ratio = ts / tp
        print()
        print("100 placements: parallel batched enactor vs one reservation at a time (median of 5)")
        print(f"  {'parallel (1 call per group, all at once)':<40} {tp * 1000:>10.1f} ms")
        print(f"  {'serial (1 call per reservation)':<40} {ts * 1000:>10.1f} ms")
        print(f"  {'speed-up':<40} {ratio:>10.1f} x   target >= 10x {'PASS' if ratio >= 10 else 'FAIL'}")
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
