"""The commands about requests that still talk to the control plane over Ray, as the
service account on the head: ``show --follow`` (a request's status changes as they
come) and moving a request's objects: ``deactivate``, ``activate``, ``migrate``.
The user verbs (``list``, ``show``, ``cancel``, ``explain``...) go through the
gateway (:mod:`legionrm.cli.front`).

Each answers in one line, or JSON under ``--json``; every call has a timeout."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable

from rich.console import Console

from legionrm.cli.front import starts
from legionrm.events.triggers import STATUSES
from legionrm.models import FINAL_STATES, ObjectStatus, Refusal, RequestInfo, StatusEvent
from legionrm.naming import SCHEDULER, require_actor
from legionrm.system import call, init_connect, proof_for

CALL_TIMEOUT_S = 30.0


def _scheduler(args: argparse.Namespace) -> Any:
    init_connect(getattr(args, "address", None) or "auto")
    return require_actor(SCHEDULER)


def request_info(scheduler: Any, request_id: str) -> RequestInfo:
    """``request_info`` on the Scheduler, signed as this driver's user."""
    proof = proof_for(scheduler, "request_info", {"request_id": request_id}, to=SCHEDULER)
    return call(scheduler.request_info.remote(request_id, proof=proof), CALL_TIMEOUT_S)


def cli_show(args: argparse.Namespace) -> int:
    """``legionrm show ID [--json] [--follow [--timeout S]]``: one request's
    history, instances and failures; with ``--follow`` then each status
    change as one line (a JSON object per line under ``--json``) until the
    request ends, ``--timeout`` passes or Ctrl-C."""
    sched = _scheduler(args)
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
                  f"pool {info.pool})" + (f": {info.reason}" if info.reason else ""))
    if info.start is not None:
        console.print(f"  start {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info.start))} "
                      f"({starts(info, time.time())})", highlight=False)
    t0 = info.submitted
    for e in info.history:
        console.print(f"  +{e.at - t0:8.2f}s  {e.state:<10} {e.reason}", highlight=False)
    for i in info.instances:
        console.print(f"  instance {i.id} on {i.host}: {i.state}" + (f" ({i.reason})" if i.reason else ""),
                      highlight=False)
    for f in info.failures[:10]:
        console.print(f"  failure {f.key} on {f.resource or '-'}: {f.code}: {f.reason}", highlight=False)
    return 0


MOVES = {"deactivate": (), "activate": ("constraint",), "migrate": ("constraint",)}


def cli_move(args: argparse.Namespace) -> int:
    """``legionrm deactivate ID`` / ``activate ID [--on MIL]`` / ``migrate ID [--to MIL]``:
    one line (or JSON) saying where the object is now; exit 1 when refused."""
    sched = _scheduler(args)
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
