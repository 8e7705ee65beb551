"""The gateway process alone: its CPU a submit+cancel pair over a stand-in Scheduler, no Ray.

The gateway (:func:`~legionrm.gateway.app.make_app`: the door, the routes, the
intake) runs in a process of its own on uvloop, as ``legionrm up`` runs it, over
a stand-in control plane that does what :class:`~legionrm.gateway.control.RayControlPlane`
does on the gateway's side of a batch -- the gateway agent's proof signed over the
items, the items pickled as Ray pickles them -- then answers after ``--answer-ms``
(the Scheduler's round trip and sync) with the replies a real Scheduler gave: one
submit and one cancel made through an in-process system at start, each reply's
request id put in.  ``--threads`` caller threads of :class:`~legionrm.client.Client`
in this process make ``--pairs`` pairs each.  Prints the gateway process's CPU a
pair (user + system, from ``/proc``); ``--profile FILE`` writes a cProfile of
the gateway's loop thread in CPU time (``time.thread_time``), ``--spy FILE``
py-spy's samples of it.  ``--compare A B`` serves a gateway from each of two
source trees and has every caller alternate a pair on one and a pair on the
other, so both see the same load: the way to compare a change on this shared
box (``benchmarks/README.md``, round gw500e).

What it leaves out, on purpose: Ray's own threads and its C++ side of a call (the
full ``bench_gateway.py`` measures those).  A tool, not a benchmark with a target
(``make bench`` does not run it).

    python benchmarks/gateway_alone.py [--threads 20] [--pairs 100] [--rounds 1] [--profile FILE] [--spy FILE]
    python benchmarks/gateway_alone.py --compare /work/main $PWD --rounds 3 --pairs 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REQUEST = {"hold": True, "object": [{"class_name": "Worker", "count": 1, "cpus": 0.5, "memory_gb": 0.5, "walltime_s": 600}]}
TEMPLATE_ID = "template-request-0001"


def _templates(home: Path) -> tuple[Any, Any]:
    """A real Scheduler's reply to one submit and one cancel (through an in-process system's doors)."""
    from legionrm.config import load_cluster
    from legionrm.gateway.local import LocalPlane
    from legionrm.gateway.routes_requests import request_from
    from legionrm.inprocess import LocalSystem
    from legionrm.models.intake import Cancel, Submit

    plane = LocalPlane(LocalSystem(load_cluster(None)), home)
    req = request_from(REQUEST, None, {}, TEMPLATE_ID, "u0")
    [submitted] = asyncio.run(plane.call(None, "scheduler", "intake_batch",  # type: ignore[arg-type]
                                         {"items": [Submit("u0", req.model_dump_json())]}))
    [cancelled] = asyncio.run(plane.call(None, "scheduler", "intake_batch",  # type: ignore[arg-type]
                                         {"items": [Cancel("u0", TEMPLATE_ID, "cancelled by its user")]}))
    return submitted, cancelled


class StandIn:
    """The control plane's gateway side of a batch (its proof, Ray's pickling), then canned answers."""

    def __init__(self, home: Path, answer_s: float) -> None:
        from legionrm.auth.guard import GATEWAY, load_agent
        from legionrm.auth.proof import CallSigner

        self.signer = CallSigner(load_agent(home, GATEWAY), time.time)
        self.answer_s = answer_s
        self.submitted, self.cancelled = _templates(home)
        self._up = home / "up.json"
        self._up.write_text("{}")
        self._roster: tuple[tuple[int, int, int], Any] | None = None

    def roster(self) -> Any:
        """One default scheduler, read again when ``up.json`` changed: one ``stat`` a call, as the Ray plane's."""
        from legionrm.scheduler.several import Roster

        st = os.stat(self._up)
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._roster is None or self._roster[0] != stamp:
            self._roster = (stamp, Roster())
        return self._roster[1]

    async def call(self, user: str | None, target: str, method: str, args: dict[str, Any]) -> Any:
        return await self.start(user, target, method, args)

    def start(self, user: str | None, target: str, method: str, args: dict[str, Any]) -> Any:
        """The batch signed and serialized now (a tree since round gw500f starts its batches as they go)."""
        assert method == "intake_batch", method
        proof = self.signer.acting(user).sign(method, args, to=target)
        pickle.loads(pickle.dumps((args, proof)))  # Ray's serialization of the call, both ways
        return self._answer(args)

    async def _answer(self, args: dict[str, Any]) -> Any:
        from legionrm.models.intake import Cancelled, Submit, Submitted

        await asyncio.sleep(self.answer_s)
        items = args["items"]
        if isinstance(items, str):  # packed, as a tree since round gw500f sends them
            from legionrm.models.intake import unpack_items
            items = unpack_items(items)
        out: list[Any] = []
        for item in items:
            if isinstance(item, Submit):
                rid = item.request.partition('"request_id":"')[2].partition('"')[0]  # (cheaper than the Scheduler's parse)
                s = self.submitted
                out.append(Submitted(rid, s.ok, s.state, s.response.replace(TEMPLATE_ID, rid)))
            else:
                out.append(Cancelled(self.cancelled.info.replace(TEMPLATE_ID, item.request_id)))
        if isinstance(args["items"], str):
            from legionrm.models.intake import pack_replies
            return pack_replies(out)
        return pickle.loads(pickle.dumps(out))

    async def close(self) -> None:
        return None


def serve(home: Path, answer_s: float, profile: str | None) -> None:
    """The child: the gateway over :class:`StandIn` until SIGTERM; its URL on the first line of stdout."""
    import cProfile
    import gc

    from legionrm.gateway.app import make_app
    from legionrm.gateway.process import run_loop
    from legionrm.gateway.serve import start

    plane = StandIn(home, answer_s)

    async def main() -> None:
        app = make_app(plane, home)
        runner, url = await start(app)
        print(json.dumps({"url": url}), flush=True)
        gc.freeze()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGUSR1, lambda: prof.enable() if prof else None)
        await stop.wait()
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile)
        await runner.cleanup()

    prof = cProfile.Profile(time.thread_time) if profile else None
    run_loop(main())


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compare(cmd: list[str], home: Path, users: list[str], args: argparse.Namespace) -> int:
    """Two gateways (the trees of ``--compare``), each caller alternating between them; each one's CPU a pair."""
    from legionrm.client.client import Client
    from legionrm.gateway.routes_users import write_credentials

    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": tree})
             for tree in args.compare]
    try:
        urls = [json.loads(p.stdout.readline())["url"] for p in procs if p.stdout is not None]
        sides = [[Client.from_credentials(write_credentials(home, u, url)) for u in users]
                 for i, url in enumerate(urls)]
        for r in range(args.rounds + 1):  # the first round warms both
            pairs = args.pairs if r else 5
            load, before = os.getloadavg()[0], [cpu_s(p.pid) for p in procs]
            lat: list[list[float]] = [[], []]
            errors: list[str] = []

            def caller(k: int) -> None:
                for n in range(pairs):
                    for side in (0, 1) if (n + k) % 2 == 0 else (1, 0):
                        c, rid = sides[side][k], f"r{r}-{side}-{k}-{n}"
                        t0 = time.perf_counter()
                        try:
                            c.submit(REQUEST, id=rid)
                            c.cancel(rid)
                        except Exception as exc:  # noqa: BLE001 -- counted
                            errors.append(f"{rid}: {exc}")
                        lat[side].append(time.perf_counter() - t0)

            threads = [threading.Thread(target=caller, args=(k,)) for k in range(len(users))]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            used = [(cpu_s(p.pid) - b) / (len(users) * pairs) * 1e3 for p, b in zip(procs, before)]
            if r:
                print(f"round {r}: {2 * len(users) * pairs / wall:.0f} pairs/s in all, {len(errors)} failed; gateway CPU "
                      f"a pair: A {used[0]:.3f} ms, B {used[1]:.3f} ms (B/A {used[1] / used[0]:.3f}; load {load:.1f})",
                      flush=True)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(60)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=20)
    p.add_argument("--pairs", type=int, default=100, help="submit+cancel pairs per thread, a round")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--answer-ms", type=float, default=4.0)
    p.add_argument("--profile", help="a file: the gateway loop thread's cProfile (CPU time)")
    p.add_argument("--spy", help="a file: py-spy's raw samples of the gateway (on the CPU only), folded")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="two source trees (PYTHONPATH): a gateway of each, every caller alternating a pair on one and "
                        "a pair on the other, so both see the same load; each one's CPU a pair")
    p.add_argument("--serve", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        serve(Path(args.serve), args.answer_ms / 1e3, args.profile)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_gateway import run_pairs

    from legionrm.auth.guard import ensure_home
    from legionrm.client.client import Client
    from legionrm.gateway.routes_users import write_credentials
    from legionrm.homefs import private_dir

    base = Path(tempfile.mkdtemp(prefix="lrmgwa", dir="/tmp"))
    home = base / "home"
    private_dir(home)
    registry = ensure_home(home, operator="ops")
    users = [f"u{k}" for k in range(args.threads)]
    for u in users:
        registry.add_user(u)
    cmd = [sys.executable, __file__, "--serve", str(home), "--answer-ms", str(args.answer_ms)]
    if args.compare:
        return compare(cmd, home, users, args)
    proc = subprocess.Popen(cmd + (["--profile", args.profile] if args.profile else []), stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        clients = [Client.from_credentials(write_credentials(home, u, url)) for u in users]
        run_pairs(clients[:4], 5, "warm")
        if args.profile:
            proc.send_signal(signal.SIGUSR1)
        spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(proc.pid), "-o",
                                args.spy, "-f", "raw", "-r", "400", "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if args.spy else None
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            before, mine = cpu_s(proc.pid), time.process_time()
            wall, lat, acked, errors = run_pairs(clients, args.pairs, f"r{r}")
            used, mine = cpu_s(proc.pid) - before, time.process_time() - mine
            pairs = len(lat) / 2
            lat.sort()
            print(f"round {r}: {pairs:.0f} pairs in {wall:.2f} s ({pairs / wall:.0f}/s), {len(errors)} failed, "
                  f"p99 {lat[int(0.99 * len(lat))] * 1e3:.0f} ms; CPU a pair: gateway {used / pairs * 1e3:.3f} ms, "
                  f"callers {mine / pairs * 1e3:.3f} ms (load {load:.1f})", flush=True)
            if errors:
                print("  ", errors[:3])
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
