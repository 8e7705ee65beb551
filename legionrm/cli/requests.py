"""The commands about requests on a running system: ``list``, ``show``
(``--follow``: its status changes as they come), ``cancel``, ``explain``,
and moving a request's objects: ``deactivate``, ``activate``, ``migrate``
(``wait``, ``logs`` and ``history``: :mod:`legionrm.cli.work`).

Each answers in a table or one line, or JSON under ``--json``; every call to
the system has a timeout."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from legionrm.cli.output import show, table
from legionrm.events.triggers import STATUSES
from legionrm.models import FINAL_STATES, ObjectStatus, Refusal, RequestInfo, ScheduleSuite, StatusEvent
from legionrm.naming import SCHEDULER, require_actor
from legionrm.request_file import load_request
from legionrm.system import call, init_connect, proof_for

CALL_TIMEOUT_S = 30.0


def scheduler_for(args: argparse.Namespace) -> Any:
    init_connect(getattr(args, "address", None) or "auto")
    return require_actor(SCHEDULER)


def request_info(scheduler: Any, request_id: str) -> RequestInfo:
    """``request_info`` on the Scheduler, signed as this driver's user."""
    proof = proof_for(scheduler, "request_info", {"request_id": request_id}, to=SCHEDULER)
    return call(scheduler.request_info.remote(request_id, proof=proof), CALL_TIMEOUT_S)


def _age(t: float, now: float) -> str:
    s = max(0.0, now - t)
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def request_json(info: RequestInfo) -> dict[str, Any]:
    """One request as ``legionrm list --json`` prints it (times in seconds since the epoch)."""
    return {
        "id": info.id, "user": info.user, "state": info.state, "reason": info.reason,
        "classes": list(info.classes), "count": info.count, "pool": info.pool,
        "instances": [{"id": i.id, "host": i.host, "state": i.state,
                       "exit_code": i.result.exit_code if i.result else None} for i in info.instances],
        "submitted": info.submitted, "earliest_start": info.earliest_start, "start": info.start,
        "exit_code": info.exit_code,
    }


def _starts(info: RequestInfo, now: float) -> str:
    """When a request asked to start: ``in 59m`` ahead, ``2m ago`` after, ``-`` for as soon as possible."""
    if info.start is None:
        return "-"
    return f"in {_age(now, info.start)}" if info.start > now else f"{_age(info.start, now)} ago"


def request_table(infos: list[RequestInfo], now: float) -> Table:
    """The requests in the house table style (fits the terminal, never cuts a header)."""
    t = table(None, ("id", "state", "exit", "user", "class", "count", "where", "age", "start", "reason"),
              right=("exit", "count", "age"))
    for i in infos:
        where = ",".join(sorted({x.host for x in i.instances if x.state == "running"})) or "-"
        t.add_row(i.id, i.state, "-" if i.exit_code is None else str(i.exit_code), i.user, ",".join(i.classes),
                  str(i.count), where, _age(i.submitted, now), _starts(i, now), i.reason or "-")
    return t


def cli_list(args: argparse.Namespace) -> int:
    """``legionrm list [--user U] [--state S] [--json]``."""
    sched = scheduler_for(args)
    proof = proof_for(sched, "list_requests", {"user": args.user, "state": args.state}, to=SCHEDULER)
    infos: list[RequestInfo] = call(sched.list_requests.remote(args.user, args.state, proof=proof), CALL_TIMEOUT_S)
    if args.json:
        print(json.dumps({"requests": [request_json(i) for i in infos]}, indent=2))
    elif not infos:
        print("no requests" + (f" in state {args.state}" if args.state else ""))
    else:
        show(request_table(infos, time.time()))
    return 0


def cli_show(args: argparse.Namespace) -> int:
    """``legionrm show ID [--json] [--follow [--timeout S]]``: one request's
    history, instances and failures; with ``--follow`` then each status
    change as one line (a JSON object per line under ``--json``) until the
    request ends, ``--timeout`` passes or Ctrl-C."""
    sched = scheduler_for(args)
    info = request_info(sched, args.id)
    if getattr(args, "follow", False):
        def fetch(cursor: int) -> list[StatusEvent]:
            proof = proof_for(sched, "events_since", {"request_id": args.id, "cursor": cursor}, to=SCHEDULER)
            return call(sched.events_since.remote(args.id, cursor, proof=proof), CALL_TIMEOUT_S)
        return follow_events(fetch, args.timeout, as_json=args.json,
                             ended=lambda: request_info(sched, args.id).state in FINAL_STATES)
    if args.json:
        print(info.model_dump_json(indent=2))
        return 0
    console = Console()
    console.print(f"[bold]{info.id}[/] {info.state} ({info.user}, {info.count} x {','.join(info.classes)}, "
                  f"pool {info.pool})" + (f": {info.reason}" if info.reason else "")
                  + (f"; exit code {info.exit_code}" if info.exit_code is not None else ""))
    if info.start is not None:
        console.print(f"  start {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info.start))} "
                      f"({_starts(info, time.time())})", highlight=False)
    t0 = info.submitted
    for e in info.history:
        console.print(f"  +{e.at - t0:8.2f}s  {e.state:<10} {e.reason}", highlight=False)
    for i in info.instances:
        r = i.result
        ran = (f"; {r.state}, exit code {r.exit_code}, {r.cpu_s:.2f} cpu s, max rss {r.max_rss_kb / 1024:.1f} MB"
               if r is not None else "")
        console.print(f"  instance {i.id} on {i.host}: {i.state}" + (f" ({i.reason})" if i.reason else "") + ran,
                      highlight=False)
    for f in info.failures[:10]:
        console.print(f"  failure {f.key} on {f.resource or '-'}: {f.code}: {f.reason}", highlight=False)
    return 0


def cli_cancel(args: argparse.Namespace) -> int:
    """``legionrm cancel ID``: stop its instances, release its reservations, book everything back."""
    sched, reason = scheduler_for(args), "cancelled by its user"
    proof = proof_for(sched, "cancel", {"request_id": args.id, "reason": reason}, to=SCHEDULER)
    info: RequestInfo = call(sched.cancel.remote(args.id, reason, proof=proof), CALL_TIMEOUT_S)
    if args.json:
        print(json.dumps(request_json(info)))
    else:
        print(f"{info.id}: {info.state}" + (f" ({info.reason})" if info.reason else ""))
    return 0


MOVES = {"deactivate": (), "activate": ("constraint",), "migrate": ("constraint",)}


def cli_move(args: argparse.Namespace) -> int:
    """``legionrm deactivate ID`` / ``activate ID [--on MIL]`` / ``migrate ID [--to MIL]``:
    one line (or JSON) saying where the object is now; exit 1 when refused."""
    sched = scheduler_for(args)
    kw: dict[str, Any] = {"object_id": args.id}
    if MOVES[args.command]:
        kw["constraint"] = args.where
    else:
        kw["reason"] = "deactivated by its user"
    proof = proof_for(sched, args.command, kw, to=SCHEDULER)
    got: ObjectStatus | Refusal = call(getattr(sched, args.command).remote(**kw, proof=proof), 120.0)
    if args.json:
        print(got.model_dump_json())
    elif isinstance(got, Refusal):
        print(f"{args.id}: refused by {got.by}: {got.code}: {got.reason}")
    else:
        print(f"{got.object_id}: {got.state}, {got.message}")
    return 1 if isinstance(got, Refusal) else 0


def cli_explain(args: argparse.Namespace) -> int:
    """``legionrm explain REQUEST.toml``: the plan without enacting it."""
    request = load_request(args.request)
    scheduler = scheduler_for(args)
    proof = proof_for(scheduler, "make_schedules", {"request": request}, to=SCHEDULER)
    suite: ScheduleSuite = call(scheduler.make_schedules.remote(request, proof=proof), CALL_TIMEOUT_S)
    whys = {h: call(scheduler.explain.remote(request, h, proof=proof_for(
        scheduler, "explain", {"request": request, "host": h}, to=SCHEDULER)),
                    CALL_TIMEOUT_S) for h in (args.host or ())}
    if args.json:
        if whys:
            print(json.dumps({"schedules": json.loads(suite.model_dump_json()), "hosts": whys}, indent=2))
            return 0
        print(suite.model_dump_json(indent=2))
        return 0
    print(f"{request.request_id}: {len(suite.masters)} master schedule(s)")
    for m, master in enumerate(suite.masters, 1):
        print(f"  master {m}: " + ", ".join(f"{p.key}@{p.host}" for p in master.placements))
        for d in master.deltas:
            print("    delta: " + ", ".join(f"{p.key}@{p.host}" for p in d.placements))
    for f in suite.failures:
        print(f"  {f.key} on {f.resource or '-'}: {f.code}: {f.reason}")
    if suite.refused:
        print("  refused hosts:")
        for f in suite.refused:
            print(f"    {f.key:<14} {f.resource:<14} {f.code}: {f.reason}")
    for host, why in whys.items():
        print(f"  why {host}: {why}")
    return 0 if suite.masters else 1


STATUS_WIDTH = max(map(len, STATUSES))
"""The status column's width: the longest status a trigger may fire (``deactivated``)."""
ENDING = frozenset({"ended", "failed", "cancelled"})
"""The request-level statuses after which there is nothing more to follow."""


def event_line(e: StatusEvent) -> str:
    """One status change as ``show --follow`` prints it."""
    when = time.strftime("%H:%M:%S", time.localtime(e.at))
    what = f"{e.request_id}" + (f" {e.object_id}" if e.object_id else "")
    return f"{when}  {e.status:<{STATUS_WIDTH}} {what}" + (f": {e.reason}" if e.reason else "")


def follow_events(fetch: Callable[[int], list[StatusEvent]], timeout_s: float | None, *, as_json: bool = False,
                  ended: Callable[[], bool] = lambda: False, out: Any = None, poll_s: float = 0.5,
                  sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """Print each event ``fetch(cursor)`` gives (every one after ``cursor``)
    as one line, until the request's own event says it ended (0), or a poll
    brings nothing and ``ended()`` says it has ended anyway (0: its events
    were not kept, e.g. the Scheduler restarted), or ``timeout_s`` passes (0,
    with a note on stderr), or Ctrl-C (130, no traceback)."""
    out = out or sys.stdout
    deadline = None if timeout_s is None else clock() + timeout_s
    cursor = 0
    try:
        while True:
            events = fetch(cursor)
            for e in events:
                cursor = max(cursor, e.seq)
                print(e.model_dump_json() if as_json else event_line(e), file=out, flush=True)
                if e.object_id is None and e.status in ENDING:
                    return 0
            if not events and ended():
                return 0
            if deadline is not None and clock() >= deadline:
                print(f"stopped following after {timeout_s:g} s", file=sys.stderr)
                return 0
            sleep(poll_s)
    except KeyboardInterrupt:
        print("stopped following", file=sys.stderr)
        return 130
