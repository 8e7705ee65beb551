"""The Scheduler's side of the gateway's batches alone: its CPU a submit+cancel pair in ``intake_batch``, no Ray.

A Scheduler core in process (:class:`~legionrm.inprocess.LocalSystem` of the default
cluster, its request book on a durable SQLite store in a temporary folder: one
group write and one sync a batch, as the actor's) behind its door
(:class:`~legionrm.scheduler.door.SchedulerDoor` with the guard of a home whose
registry holds ``--users`` users and the gateway agent, as ``legionrm up`` makes it).
Each batch is what the gateway sends under ``bench_gateway.py``: ``--batch`` items
packed (:func:`~legionrm.models.intake.pack_items`), alternating a submit of a new
held request (the bench's ``REQUEST``, its JSON as the gateway makes it) and a
cancel of one the batch before submitted, each of its user, signed once by the
gateway agent.  Only the door's call is timed (``time.process_time``: the batch's
proof is signed and its items packed before); every reply is checked (submits
pending, cancels cancelled).  Prints the CPU a pair (a submit and a cancel: two
items); ``--profile FILE`` writes a cProfile of the timed calls.

``--compare A B`` runs it from each of two source trees in turn (A B A B ...,
``--rounds`` each) and prints both sides' figures and medians: the way to compare a
change on this shared box.  ``--digest`` prints instead a digest of every reply and
every row the store holds after a fixed sequence of batches (a fake clock; refusals of
every kind among the items): two trees with the same digest answered and wrote the same.

A tool, not a benchmark with a target (``make bench`` does not run it).

    python benchmarks/intake_alone.py [--batches 400] [--batch 18] [--profile FILE]
    python benchmarks/intake_alone.py --compare /work/main $PWD --rounds 5
    python benchmarks/intake_alone.py --digest
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TICK_EVERY = 50
"""Batches between two ticks of the Scheduler (the actor ticks each second; the bench sends ~50 batches a second)."""
REQUEST = {"hold": True, "object": [{"class_name": "Worker", "count": 1, "cpus": 0.5, "memory_gb": 0.5, "walltime_s": 600}]}


class Bench:
    """A Scheduler behind its door, a registry of users and the gateway agent's signer."""

    def __init__(self, base: Path, users: int, clock: Any = None) -> None:
        from legionrm.auth.guard import GATEWAY, Guard, ensure_home, load_agent
        from legionrm.auth.proof import CallSigner
        from legionrm.config import load_cluster
        from legionrm.homefs import private_dir
        from legionrm.inprocess import LocalSystem
        from legionrm.scheduler.door import SchedulerDoor
        from legionrm.state import RequestStore

        home = base / "home"
        private_dir(home)
        registry = ensure_home(home, operator="ops")
        self.users = [f"u{k}" for k in range(users)]
        for u in self.users:
            registry.add_user(u)
        self.store_path = base / "scheduler.db"
        kw = {} if clock is None else {"clock": clock}
        self.system = LocalSystem(load_cluster(None), store=RequestStore(self.store_path), **kw)
        self.door = SchedulerDoor(self.system.scheduler, Guard.for_home(home, by="scheduler"),
                                  mobility=self.system.mobility)
        self.signer = CallSigner(load_agent(home, GATEWAY), time.time).acting(None)
        self.dry = False
        """Build and sign the batches but answer them without the door (what the harness costs alone)."""

    def request(self, rid: str, user: str, **extra: Any) -> str:
        """The JSON the gateway sends for ``user``'s submit of the bench's request under ``rid``."""
        from legionrm.gateway.routes_requests import request_from

        return request_from({**REQUEST, **extra}, None, {}, rid, user).model_dump_json()

    def call(self, items: list[Any]) -> tuple[list[Any], float]:
        """``items`` packed and signed as the gateway sends them; the replies and the door's CPU seconds."""
        from legionrm.models.intake import pack_items, unpack_replies

        text = pack_items(items)
        proof = self.signer.sign("intake_batch", {"items": text}, to="scheduler")
        t0 = time.process_time()
        packed = self.door.intake_batch(text, proof) if not self.dry else _stand_in(items)
        used = time.process_time() - t0
        return unpack_replies(packed), used


def _stand_in(items: list[Any]) -> bytes:
    """Replies that pass the checks, without the door (``--dry``: what the harness costs alone)."""
    from legionrm.models.intake import Cancelled, Submit, Submitted, pack_replies

    return pack_replies([Submitted(it.request[16:40], False, "pending", it.request) if isinstance(it, Submit) else
                         Cancelled('{"state":"cancelled"}' + it.request_id * 30) for it in items])


def pairs(bench: Bench, batches: int, size: int, tag: str, profile: str | None = None) -> tuple[float, float]:
    """``batches`` batches of ``size`` items (submits of new held requests, cancels of the batch before's);
    the door's CPU seconds a pair: over all of them, and in the median batch (the first batch, submits
    only, not counted)."""
    from legionrm.models.intake import Cancel, Cancelled, Submit, Submitted

    half = size // 2
    prev: list[tuple[str, str]] = []
    used: list[float] = []
    counted = 0
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile(time.process_time)
    for b in range(batches + 1):
        mine = [(f"{tag}-{b}-{j}", bench.users[(b * half + j) % len(bench.users)]) for j in range(half)]
        items: list[Any] = []
        for j, (rid, user) in enumerate(mine):
            items.append(Submit(user, bench.request(rid, user)))
            if j < len(prev):
                items.append(Cancel(prev[j][1], prev[j][0], "cancelled by its user"))
        if prof is not None and b:
            prof.enable()
        replies, cpu = bench.call(items)
        if prof is not None and b:
            prof.disable()
        for item, reply in zip(items, replies):
            ok = (isinstance(reply, Submitted) and reply.state == "pending" if isinstance(item, Submit) else
                  isinstance(reply, Cancelled) and '"state":"cancelled"' in reply.info)
            if not ok:
                raise SystemExit(f"batch {b}: {item[:2]} answered {reply!r}")
        if b:
            used.append(cpu)
            counted += len(prev)
        prev = mine
        if b % TICK_EVERY == 0:  # (untimed) the Scheduler's tick, about once a second under the bench's load:
            bench.system.scheduler.tick()  # the cancelled requests leave the live book for the history
    if prof is not None:
        prof.dump_stats(profile)
    return sum(used) / counted, statistics.median(used) / (size // 2)


def digest(base: Path) -> str:
    """The replies and the stored rows after a fixed sequence of batches with every refusal, one a line."""
    from legionrm.models.intake import Cancel, Submit
    from legionrm.testing import FakeClock

    clock = FakeClock()
    bench = Bench(base, 6, clock)
    u = bench.users
    batches: list[list[Any]] = [
        [Submit(u[0], bench.request("a1", u[0])), Submit(u[1], bench.request("b1", u[1])),
         Submit(u[1], bench.request("b2", u[1], priority=5)),  # a user's own priority: refused
         Submit("nobody", bench.request("n1", "nobody")),  # no such user
         Submit("ops", bench.request("o1", "ops", priority=5)),  # an admin's priority: taken
         Submit(u[2], bench.request("a1", u[2])),  # an id already in the group
         Submit(u[2], '{"not json'),
         Submit(u[3], bench.request("p1", u[3], hold=False)),  # not held: tried now
         Submit(u[3], bench.request("w1", u[3], hold=False, wait=False)),  # the one-at-a-time path
         Submit(u[4], bench.request("big", u[4], hold=False, object=[{"class_name": "Worker", "cpus": 10_000}])),
         Cancel(u[0], "zz", "x")],  # unknown
        [Cancel(u[1], "a1", "not mine"), Cancel(u[0], "a1", "mine"), Cancel("ops", "b1", "admin"),
         Cancel("nobody", "o1", "x"), Cancel(u[0], "a1", "again"), Submit(u[0], bench.request("a1", u[0])),
         Submit(u[5], bench.request("c1", u[5])), Cancel(u[5], "c1", "same group"), Cancel(u[3], "p1", "placed?"),
         Cancel(u[4], "big", "x")],
        [Submit(u[k % 6], bench.request(f"r{k}", u[k % 6])) for k in range(9)]
        + [Cancel(u[k % 6], f"r{k}", "bye") for k in range(0, 9, 2)],
    ]
    lines: list[str] = []
    for items in batches:
        clock.advance(1.5)
        replies, _ = bench.call(items)
        for r in replies:
            lines.append(repr(r) if not isinstance(r, BaseException) else f"{type(r).__name__}:{r}:"
                         f"{getattr(r, 'code', '')}")
    triggers = bench.system.scheduler.triggers
    for rid in sorted({"a1", "b1", "b2", "n1", "o1", "p1", "w1", "big", "c1"} | {f"r{k}" for k in range(9)}):
        lines.append(f"{rid}: {[(e, sorted(e.model_fields_set)) for e in triggers.events_since(rid)]!r}"
                     if triggers.has_stream(rid) else f"{rid}: no stream")
    bench.system.scheduler.book.store.close()
    con = sqlite3.connect(bench.store_path)
    for table in ("requests", "requests_finished"):
        for row in con.execute(f"SELECT * FROM {table} ORDER BY id"):
            lines.append(repr(row))
    con.close()
    return re.sub(r'((?:token_id|signature)\\?":\\?")[^"\\]*', r"\1-", "\n".join(lines))  # random per placement


def compare(trees: list[str], args: argparse.Namespace) -> int:
    """Each tree in turn, ``args.rounds`` times; both sides' figures and medians."""
    got: dict[str, list[float]] = {t: [] for t in trees}
    mid: dict[str, list[float]] = {t: [] for t in trees}
    for r in range(args.rounds):
        for tree in trees:
            env = {**os.environ, "PYTHONPATH": tree, "RAY_AUTH_MODE": "disabled"}
            out = subprocess.run([sys.executable, __file__, "--batches", str(args.batches), "--batch", str(args.batch),
                                  "--users", str(args.users), "--raw"], env=env, check=True, capture_output=True,
                                 text=True, cwd=tree).stdout
            mean, median = map(float, out.split()[-2:])
            got[tree].append(mean)
            mid[tree].append(median)
            print(f"round {r}: {tree}: {mean:.1f} µs a pair, {median:.1f} in the median batch "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    for tree, xs in got.items():
        print(f"{tree}: median {statistics.median(xs):.1f} µs a pair ({', '.join(f'{x:.0f}' for x in xs)}); "
              f"median batch {statistics.median(mid[tree]):.1f} ({', '.join(f'{x:.0f}' for x in mid[tree])})")
    a, b = trees
    ratios = [y / x for x, y in zip(got[a], got[b])]
    print(f"second / first: {statistics.median(got[b]) / statistics.median(got[a]):.3f} (medians), "
          f"{statistics.median(ratios):.3f} (median of the rounds' ratios), "
          f"{statistics.median(mid[b]) / statistics.median(mid[a]):.3f} (median batches)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--batch", type=int, default=18, help="items a batch (half submits, half cancels)")
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--profile", help="write a cProfile (CPU time) of the timed calls to this file")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two source trees, alternating")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--digest", action="store_true", help="print a digest of the replies and rows of a fixed sequence")
    p.add_argument("--show", action="store_true", help="with --digest: the replies and rows themselves")
    p.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dry", action="store_true", help="the harness alone: batches built and signed, not sent")
    args = p.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    if args.compare:
        return compare(args.compare, args)
    with tempfile.TemporaryDirectory(prefix="lrmintake") as tmp:
        if args.digest:
            text = digest(Path(tmp))
            print(text if args.show else hashlib.sha256(text.encode()).hexdigest())
            return 0
        bench = Bench(Path(tmp), args.users)
        bench.dry = args.dry
        pairs(bench, 20, args.batch, "warm")
        gc.collect()
        gc.freeze()  # as the Scheduler actor does after its boot
        per, median = pairs(bench, args.batches, args.batch, "b", args.profile)
        bench.system.scheduler.book.store.close()
    if args.raw:
        print(f"{per * 1e6:.2f} {median * 1e6:.2f}")
    else:
        print(f"the door's CPU a submit+cancel pair: {per * 1e6:.1f} µs, {median * 1e6:.1f} in the median batch "
              f"({args.batch}-item batches, {args.batches} timed; load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
