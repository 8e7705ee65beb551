"""Submit+cancel pairs through the authenticated gateway of a real system, 20 callers at once.

Boots a system on a lean local Ray of its own (the Collection, host groups,
Enactor, pools and the Scheduler actor, with a state dir and a home whose
registry signs every call), starts the gateway process as ``legionrm up`` does
(``python -m legionrm.gateway --home H``), and runs ``--threads`` threads
(default 20), each a Python :class:`~legionrm.client.Client` of a user of its
own on the lean ``http.client`` wire, each making ``--pairs`` submit+cancel
pairs: submit a small request under an id of its own, held (``hold = true``,
as ``sbatch --hold``: it waits in the queue, so what is timed is the door, the
wire, the Scheduler's intake and its durable writes, not a placement), then
cancel it.
Every call is an RFC 9421-signed HTTP call; the gateway verifies it and calls
the Scheduler actor.

Prints pairs a second (target 500), the p99 of one call (target 500 ms), and
checks that every request is accounted for: each submit acknowledged once,
each id in the Scheduler's list exactly once and cancelled, none that was not
submitted, and each acknowledged request in the state store's file on disk
(its live table or its history).  Then the same run again on a new system whose
Scheduler boots on a state store whose history already holds ``--history``
finished requests (100,000 by default; 0: no second run): the rate must be the
same after 100,000 of them as on a fresh system, so that run has the same
three rows, and its rate is shown beside the fresh one's.
With ``--profile DIR`` the callers, the gateway and the Scheduler actor are
sampled with py-spy (``pip install py-spy``) while the pairs run, counting
only samples that hold the GIL (Python on the CPU, not a thread waiting on a
socket or an fsync), and the top frames of each are printed; without py-spy
the gateway runs under cProfile instead.

    python benchmarks/bench_gateway.py [--threads 20] [--pairs 50] [--history 100000] [--profile DIR]

Starts its own Ray and shuts it down; leaves nothing running.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import check, info  # noqa: E402

TARGET_PAIRS = 500.0
TARGET_P99_MS = 500.0
IDLE_S = 4.0
"""How long the processes' CPU is measured with no call before the run."""
REQUEST = {"hold": True, "object": [{"class_name": "Worker", "count": 1, "cpus": 0.5, "memory_gb": 0.5, "walltime_s": 600}]}


def py_spy() -> str | None:
    """The py-spy program beside this Python (or on the PATH), if installed."""
    return shutil.which("py-spy", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")


def start_gateway(home: Path, profile: Path | None) -> tuple[subprocess.Popen[str], str]:
    """The gateway process as ``up`` starts it (under cProfile with ``profile`` when there is no py-spy); its URL."""
    pre = [sys.executable] + (["-m", "cProfile", "-o", str(profile / "gateway.prof")] if profile and not py_spy() else [])
    log = open(home / "gateway.log", "w")
    proc = subprocess.Popen([*pre, "-m", "legionrm.gateway", "--home", str(home), "--port", "0", "--admin", "ops",
                             "--no-dashboard"], stdout=subprocess.PIPE, stderr=log, text=True,
                            start_new_session=True, env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        raise SystemExit(f"the gateway did not start: {(home / 'gateway.log').read_text()[-2000:]}")
    return proc, json.loads(line)["url"]


def run_pairs(clients: list[Any], pairs: int, tag: str) -> tuple[float, list[float], dict[str, int], list[str]]:
    """Each client makes ``pairs`` submit+cancel pairs in a thread of its own; the wall time, every
    call's latency, how many times each id was acknowledged, and the failures."""
    lat: list[float] = []
    acked: dict[str, int] = {}
    errors: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(len(clients) + 1)

    def caller(k: int) -> None:
        c, mine, seen, bad = clients[k], [], {}, []
        go.wait()
        for n in range(pairs):
            rid = f"{tag}-{k}-{n}"
            try:
                t0 = time.perf_counter()
                got = c.submit(REQUEST, id=rid)
                t1 = time.perf_counter()
                seen[got.id] = seen.get(got.id, 0) + 1
                done = c.cancel(rid)
                t2 = time.perf_counter()
                mine += [t1 - t0, t2 - t1]
                if done.state != "cancelled":
                    bad.append(f"{rid}: cancel answered {done.state}")
            except Exception as exc:  # noqa: BLE001 -- counted and shown, never lost
                bad.append(f"{rid}: {type(exc).__name__}: {exc}")
        with lock:
            lat.extend(mine)
            errors.extend(bad)
            for rid, n in seen.items():
                acked[rid] = acked.get(rid, 0) + n

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(len(clients))]
    for t in threads:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, lat, acked, errors


def seed_history(state_dir: Path, n: int) -> float:
    """``n`` finished (cancelled) requests in the Scheduler's durable history before it boots, as if
    that many had come and gone; the seconds it took.  Written through the store itself."""
    from legionrm.models import Identity, ObjectRequest, RequestEvent, SchedulingRequest
    from legionrm.state import RequestStore

    t0 = time.perf_counter()
    store = RequestStore(state_dir / "scheduler.db")
    obj = (ObjectRequest(class_name="Worker", count=1, cpus=0.5, memory_gb=0.5, walltime_s=600),)
    now = time.time() - 86_400.0 * 2  # ended two days ago: history, not among the recent ones `list` shows
    for start in range(0, n, 5000):
        items = []
        for k in range(start, min(n, start + 5000)):
            request = SchedulingRequest(request_id=f"old-{k}", identity=Identity(user=f"u{k % 20}"), objects=obj)
            items.append(dict(request=request, submitted=now, state="cancelled", reason="seeded", history=[
                RequestEvent(at=now, state="pending", reason="submitted"),
                RequestEvent(at=now, state="cancelled", reason="seeded")], instances={}, refs={}, failures=(),
                earliest_start=None, attempts=0, held=None))
        store.put_many(items)
        store.settle({i["request"].request_id: now for i in items})
    store.close()
    return time.perf_counter() - t0


def cpu_s(pid: int | None = None, *, system: bool = False) -> float:
    """CPU seconds (user + system; ``system``: the kernel's share alone) process ``pid`` (None: this
    one, all its threads) has used."""
    if pid is None:
        import resource

        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_stime if system else r.ru_utime + r.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[12]) + (0 if system else int(fields[11]))) / os.sysconf("SC_CLK_TCK")


def ray_threads_s(pid: int) -> float:
    """CPU seconds the threads of process ``pid`` named otherwise than its main thread have used: in the
    gateway, Ray's own (its core worker's io, gRPC's pollers, named by Ray; Python's threads keep the
    process's name).  Threads that ended are not counted."""
    main = Path(f"/proc/{pid}/comm").read_text().strip()
    total = 0.0
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            name, stat = (t / "comm").read_text().strip(), (t / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        if name != main:
            fields = stat.rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def ray_own(cluster: Any) -> list[int]:
    """The pids of the head node's raylet and GCS server (empty when Ray's layout is not the one known)."""
    try:
        procs = cluster.head_node.all_processes
        return [info.process.pid for kind in ("raylet", "gcs_server") for info in procs.get(kind, ())]
    except AttributeError:
        return []


def on_disk(state_dir: Path) -> dict[str, int]:
    """How many rows each request id has in the state store's file (live table + history)."""
    counts: dict[str, int] = {}
    for db in state_dir.rglob("*.db"):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            for table in ("requests", "requests_finished"):
                if table in names:
                    for (rid,) in con.execute(f"SELECT id FROM {table}"):
                        counts[rid] = counts.get(rid, 0) + 1
        finally:
            con.close()
    return counts


def account(admin: Any, state_dir: Path, acked: dict[str, int], expected: set[str]) -> list[str]:
    """What is wrong with the books after a run (empty: every request accounted for)."""
    problems = [f"{rid} acknowledged {n} times" for rid, n in acked.items() if n != 1]
    problems += [f"{rid} never acknowledged" for rid in sorted(expected - set(acked))[:5]]
    listed: dict[str, int] = {}
    states: dict[str, str] = {}
    cursor = None
    while True:
        page = admin.list_page(all=True, limit=1000, cursor=cursor)
        for r in page.requests:
            listed[r.id] = listed.get(r.id, 0) + 1
            states[r.id] = r.state
        if page.next is None:
            break
        cursor = page.next
    mine = {rid: n for rid, n in listed.items() if rid in expected}
    problems += [f"{rid} listed {n} times" for rid, n in mine.items() if n != 1]
    problems += [f"{rid} is not listed" for rid in sorted(expected - set(listed))[:5]]
    problems += [f"{rid} is {states[rid]}, not cancelled" for rid in sorted(mine) if states[rid] != "cancelled"][:5]
    rows = on_disk(state_dir)
    problems += [f"{rid} is not in the state store on disk" for rid in sorted(set(acked) - set(rows))[:5]]
    problems += [f"{rid} has {rows[rid]} rows on disk" for rid in sorted(set(acked) & set(rows)) if rows[rid] != 1][:5]
    return problems


@dataclasses.dataclass
class Run:
    """What one run of the pairs measured (CPU seconds by process: the callers, the gateway, the Scheduler)."""

    wall: float
    lat: list[float]
    errors: list[str]
    problems: list[str]
    used: dict[str, float]
    kernel: dict[str, float]
    idle: dict[str, float]
    ray_used: float
    ray_procs: int
    in_ray: float
    batches: list[str]

    @property
    def pairs(self) -> float:
        return len(self.lat) / 2

    @property
    def rate(self) -> float:
        return self.pairs / self.wall

    @property
    def p99_ms(self) -> float:
        return self.lat[min(len(self.lat) - 1, int(0.99 * len(self.lat)))] * 1e3 if self.lat else float("inf")


def measure(threads: int, pairs: int, history: int, profile: Path | None) -> Run:
    """Boot a system (its Scheduler's history holding ``history`` finished requests), start the
    gateway, run ``threads`` x ``pairs`` submit+cancel pairs, check the books; leaves nothing running."""
    import ray

    from legionrm.auth.guard import ensure_home, signer_for
    from legionrm.client.client import Client
    from legionrm.config import load_cluster
    from legionrm.gateway.routes_users import write_credentials
    from legionrm.homefs import private_dir, write_private
    from legionrm.system import boot, local_cluster

    base = Path(tempfile.mkdtemp(prefix="lrmgw", dir="/tmp"))
    home, state = base / "home", base / "home" / "state"
    private_dir(home)
    registry = ensure_home(home, operator="ops")
    users = [f"u{k}" for k in range(threads)]
    for u in users:
        registry.add_user(u)
    proc = None
    batches: list[str] = []
    if history:
        private_dir(state)
        took = seed_history(state, history)
        info("history before the run", f"{history:,} finished", note=f"seeded into the state store in {took:.1f} s")
    try:
        with local_cluster(workers=()) as cluster:
            system = boot(load_cluster(), heartbeat_s=0.5, auth_home=home, state_dir=state)
            try:
                write_private(home / "up.json", json.dumps({"address": cluster.address}))
                proc, url = start_gateway(home, profile)
                clients = [Client.from_credentials(write_credentials(home, u, url)) for u in users]
                admin = Client.from_credentials(write_credentials(home, "ops", url))
                run_pairs(clients[:4], 5, "warm")  # connections open, code paths warm
                pid = ray.get(system.scheduler.__ray_call__.remote(lambda self: os.getpid()))  # the default scheduler's actor
                pids = {"callers": os.getpid(), "gateway": proc.pid, "scheduler": pid}
                ray_pids = ray_own(cluster)
                quiet = {k: cpu_s(p if k != "callers" else None) for k, p in pids.items()}
                time.sleep(IDLE_S)  # what each process burns with no call at all (ticks, the gauges' poll)
                idle = {k: (cpu_s(p if k != "callers" else None) - quiet[k]) / IDLE_S for k, p in pids.items()}
                before = {"callers": cpu_s(), "gateway": cpu_s(proc.pid), "scheduler": cpu_s(pid)}
                ray_before = sum(cpu_s(p) for p in ray_pids)
                kernel = {k: cpu_s(p if k != "callers" else None, system=True) for k, p in pids.items()}
                spies = [subprocess.Popen([spy_bin, "record", "-p", str(p), "-o", str(profile / f"{name}.txt"), "-f",
                                           "raw", "-r", "200", "--nonblocking"] + (["--gil"] if os.environ.get("SPY_GIL", "1") == "1" else []),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                         for name, p in pids.items()] if profile and (spy_bin := py_spy()) else []
                in_ray = ray_threads_s(proc.pid)
                wall, lat, acked, errors = run_pairs(clients, pairs, "gw")
                in_ray = ray_threads_s(proc.pid) - in_ray
                used = {"callers": cpu_s() - before["callers"], "gateway": cpu_s(proc.pid) - before["gateway"],
                        "scheduler": cpu_s(pid) - before["scheduler"]}
                ray_used = sum(cpu_s(p) for p in ray_pids) - ray_before
                kernel = {k: cpu_s(p if k != "callers" else None, system=True) - kernel[k] for k, p in pids.items()}
                for spy in spies:
                    spy.send_signal(signal.SIGINT)
                for spy in spies:
                    spy.wait(60)
                expected = {f"gw-{k}-{n}" for k in range(len(clients)) for n in range(pairs)}
                problems = errors[:5] + account(admin, state, acked, expected)
            finally:
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(60)
                    batches = [ln for ln in (home / "gateway.log").read_text().splitlines() if "its intake sent" in ln]
                dataclasses.replace(system, signer=signer_for(home, "ops")).shutdown()
    finally:  # the home and state dir go whatever happened
        shutil.rmtree(base, ignore_errors=True)
    lat.sort()
    return Run(wall=wall, lat=lat, errors=errors, problems=problems, used=used, kernel=kernel, idle=idle,
               ray_used=ray_used, ray_procs=len(ray_pids), in_ray=in_ray, batches=batches)


def report(run: Run, threads: int) -> None:
    """The rows of a run on a fresh system: the three checks and where the CPU went."""
    if os.environ.get("BENCH_TAIL"):
        lat = run.lat
        print("slowest calls (ms):", [round(x * 1e3) for x in lat[-30:]], "p50/p90/p95:",
              [round(lat[int(q * len(lat))] * 1e3) for q in (0.5, 0.9, 0.95)])
    pairs, used = run.pairs, run.used
    check(f"gateway: submit+cancel pairs a second, {threads} callers", f">= {TARGET_PAIRS:.0f}/s", f"{run.rate:.0f}/s",
          run.rate >= TARGET_PAIRS, before="20/s", note=f"{int(pairs)} pairs in {run.wall:.1f} s, {len(run.errors)} failed")
    check("gateway: p99 of one call", f"<= {TARGET_P99_MS:.0f} ms", f"{run.p99_ms:.0f} ms", run.p99_ms <= TARGET_P99_MS,
          before="1300 ms", note=f"median {run.lat[len(run.lat) // 2] * 1e3:.1f} ms" if run.lat else "")
    check("gateway: every request accounted for", "0 wrong", f"{len(run.problems)} wrong", not run.problems,
          note="; ".join(run.problems[:3]))
    info("gateway: CPU per pair, by process", " / ".join(f"{used[k] / max(pairs, 1) * 1e3:.2f}" for k in used) + " ms",
         note="the callers / the gateway / the Scheduler actor (user + system), "
              f"total {sum(used.values()) / max(pairs, 1) * 1e3:.2f} ms")
    info("gateway: CPU per pair, Ray's own processes", f"{run.ray_used / max(pairs, 1) * 1e3:.2f} ms",
         note=f"the raylet and the GCS ({run.ray_procs} processes): the Ray calls' other end")
    info("gateway: of which the kernel's (system), by process",
         " / ".join(f"{run.kernel[k] / max(pairs, 1) * 1e3:.2f}" for k in run.kernel) + " ms",
         note="the sockets, the fsyncs, the wake-ups: CPU a pair no Python change removes")
    info("gateway: of the gateway's, Ray's threads", f"{run.in_ray / max(pairs, 1) * 1e3:.2f} ms",
         note="its core worker's io and gRPC threads; the rest is the event loop's thread (aiohttp, the door, "
              "the routes, Ray's Python side)")
    info("gateway: CPU a second with no call, by process", " / ".join(f"{run.idle[k] * 1e3:.0f}" for k in run.idle) + " ms",
         note=f"over {IDLE_S:g} s before the run; less that, a pair costs "
              + " / ".join(f"{max(used[k] - run.idle[k] * run.wall, 0.0) / max(pairs, 1) * 1e3:.2f}" for k in used) + " ms")
    if run.batches:  # "... sent N items in M batches": the warm-up's and the run's
        items, _, count = run.batches[-1].rpartition("sent ")[2].partition(" items in ")
        info("gateway: items a batch to the Scheduler", f"{int(items) / max(int(count.split()[0]), 1):.1f}",
             note=f"{items} calls in {count} (warm-up included): each batch is one Ray call, one proof, one sync")


def report_history(run: Run, fresh: Run, history: int) -> None:
    """The rows of the run on a system whose history holds ``history`` finished requests, beside the fresh one."""
    after = f"after {history:,} finished requests"
    check(f"gateway: pairs a second {after}", f">= {TARGET_PAIRS:.0f}/s", f"{run.rate:.0f}/s", run.rate >= TARGET_PAIRS,
          note=f"{run.rate / fresh.rate:.2f}x the fresh system's {fresh.rate:.0f}/s; {len(run.errors)} failed")
    check(f"gateway: p99 of one call {after}", f"<= {TARGET_P99_MS:.0f} ms", f"{run.p99_ms:.0f} ms",
          run.p99_ms <= TARGET_P99_MS, note=f"fresh: {fresh.p99_ms:.0f} ms")
    check(f"gateway: every request accounted for {after}", "0 wrong", f"{len(run.problems)} wrong", not run.problems,
          note="; ".join(run.problems[:3]))
    per = {k: run.used[k] / max(run.pairs, 1) * 1e3 for k in run.used}
    was = {k: fresh.used[k] / max(fresh.pairs, 1) * 1e3 for k in fresh.used}
    info(f"gateway: CPU per pair {after}", " / ".join(f"{per[k]:.2f}" for k in per) + " ms",
         note="the callers / the gateway / the Scheduler; fresh: " + " / ".join(f"{was[k]:.2f}" for k in was) + " ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=20)
    p.add_argument("--pairs", type=int, default=50, help="submit+cancel pairs per thread")
    p.add_argument("--history", type=int, default=100_000,
                   help="then again on a system whose history holds this many finished requests (0: not)")
    p.add_argument("--profile", help="a folder: sample the callers, the gateway and the Scheduler with py-spy")
    args = p.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    profile = Path(args.profile).resolve() if args.profile else None
    if profile:
        profile.mkdir(parents=True, exist_ok=True)
    print(f"gateway: {args.threads} threads x {args.pairs} submit+cancel pairs through the gateway of a real system "
          f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    fresh = measure(args.threads, args.pairs, 0, profile)
    report(fresh, args.threads)
    if profile:
        show_profile(profile)
    if args.history:
        print(f"gateway: the same on a fresh system whose history holds {args.history:,} finished requests "
              f"(load average {os.getloadavg()[0]:.1f})")
        report_history(measure(args.threads, args.pairs, args.history, None), fresh, args.history)
    return 0


def show_profile(profile: Path) -> None:
    """Each process's hottest frames (py-spy: share of its samples with the frame on the stack, and
    share with it on top), else the gateway's top cProfile lines."""
    import pstats

    prof = profile / "gateway.prof"
    if prof.exists():
        for key in ("cumulative", "tottime"):
            print(f"\n--- gateway, by {key} ---")
            pstats.Stats(str(prof)).strip_dirs().sort_stats(key).print_stats(25)
    for name in ("callers", "gateway", "scheduler"):
        raw = profile / f"{name}.txt"
        if not raw.exists():
            continue
        on: dict[str, int] = {}
        top: dict[str, int] = {}
        total = 0
        for line in raw.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            if not n.isdigit():
                continue
            total += int(n)
            frames = stack.split(";")
            for frame in set(frames):
                on[frame] = on.get(frame, 0) + int(n)
            top[frames[-1]] = top.get(frames[-1], 0) + int(n)
        print(f"\n--- {name} (py-spy, {total} samples holding the GIL): frames on the stack ---")
        for frame, n in sorted(on.items(), key=lambda x: -x[1])[:40]:
            print(f"  {100 * n / max(total, 1):5.1f}%  {frame}")
        print(f"--- {name}: frames on top ---")
        for frame, n in sorted(top.items(), key=lambda x: -x[1])[:20]:
            print(f"  {100 * n / max(total, 1):5.1f}%  {frame}")


if __name__ == "__main__":
    sys.exit(main())
