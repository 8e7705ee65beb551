"""The commands about what work left: ``logs`` (a run's stdout or stderr),
``wait`` (block until a request ends; exit with its work's exit code) and
``history`` (the accounting records, as ``sacct`` lists them).

``wait`` and ``submit --wait`` exit with the work's exit code (``128 +
signal`` for a run a signal ended); a request that ended without one (it
ran no command) exits 0 when completed, 1 otherwise."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from typing import Any

from legionrm.cli.output import show, table
from legionrm.cli.requests import CALL_TIMEOUT_S, request_info, scheduler_for
from legionrm.models import FINAL_STATES, AccountRecord, RequestInfo
from legionrm.naming import SCHEDULER
from legionrm.system import call, proof_for

POLL_S = 0.5
RESULT_GRACE_S = 10.0
"""How long ``wait`` waits, after a request ended, for its runs' exit codes (a stopped run's comes late)."""


def exit_status(info: RequestInfo) -> int:
    """What ``wait`` exits with (see the module)."""
    if info.exit_code is not None:
        return max(0, min(255, info.exit_code))
    return 0 if info.state == "completed" else 1


def wait_for_end(scheduler: Any, request_id: str, timeout_s: float | None) -> RequestInfo | None:
    """Poll until the request ends (and its exit code is known, or
    :data:`RESULT_GRACE_S` passed); None when ``timeout_s`` passes first."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    ended_at = None
    while True:
        info = request_info(scheduler, request_id)
        if info.state in FINAL_STATES:
            ended_at = ended_at or time.monotonic()
            if info.exit_code is not None or time.monotonic() - ended_at > RESULT_GRACE_S or not info.instances:
                return info
        if deadline is not None and time.monotonic() > deadline:
            return None
        time.sleep(POLL_S)


def final_line(info: RequestInfo) -> str:
    code = f", exit code {info.exit_code}" if info.exit_code is not None else ""
    return f"{info.id}: {info.state}{code}" + (f" ({info.reason})" if info.reason else "")


def cli_wait(args: argparse.Namespace) -> int:
    """``legionrm wait ID [--timeout S]``: block until it ends, print its final state."""
    info = wait_for_end(scheduler_for(args), args.id, args.timeout)
    if info is None:
        print(f"{args.id}: still not ended after {args.timeout:g} s", file=sys.stderr)
        return 124
    print(info.model_dump_json(indent=2) if args.json else final_line(info))
    return exit_status(info)


def cli_logs(args: argparse.Namespace) -> int:
    """``legionrm logs ID [--follow] [--stderr] [--instance N]``: a run's output (the kept tail)."""
    sched = scheduler_for(args)
    stream = "stderr" if args.stderr else "stdout"
    offset = 0
    out = sys.stdout.buffer
    try:
        while True:
            ask = {"request_id": args.id, "instance": args.instance, "stream": stream, "offset": offset,
                   "limit": 1 << 20}
            data, offset, running = call(sched.logs.remote(**ask, proof=proof_for(sched, "logs", ask, to=SCHEDULER)),
                                         CALL_TIMEOUT_S)
            out.write(data)
            out.flush()
            if not args.follow or (not running and not data):
                return 0
            if not data:
                time.sleep(POLL_S)
    except KeyboardInterrupt:
        return 130


FIELDS = ("instance_id", "request_id", "user", "group", "pool", "class_name", "scheduler", "host", "cpus",
          "memory_gb", "start", "end", "state", "exit_code", "cpu_s", "max_rss_kb")


def cli_history(args: argparse.Namespace) -> int:
    """``legionrm history [--user U] [--since T] [--until T] [--state S] [--json|--csv]``."""
    sched = scheduler_for(args)
    ask = {"user": args.user, "since": args.since, "until": args.until, "state": args.state}
    records: list[AccountRecord] = call(sched.history.remote(**ask, proof=proof_for(sched, "history", ask, to=SCHEDULER)),
                                        CALL_TIMEOUT_S)
    if args.json:
        print(json.dumps({"records": [r.model_dump(mode="json") for r in records]}, indent=2))
    elif args.csv:
        w = csv.writer(sys.stdout)
        w.writerow(FIELDS)
        for r in records:
            w.writerow(["" if (v := getattr(r, f)) is None else v for f in FIELDS])
    elif not records:
        print("no finished instances" + (f" in state {args.state}" if args.state else ""))
    else:
        t = table(None, ("instance", "request", "user", "class", "host", "cpus", "start", "elapsed", "state", "exit",
                         "cpu s", "max rss MB"), right=("cpus", "elapsed", "exit", "cpu s", "max rss MB"))
        for r in records:
            t.add_row(r.instance_id, r.request_id, r.user, r.class_name, r.host, f"{r.cpus:g}",
                      time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.start)), f"{r.end - r.start:.1f}s", r.state,
                      "-" if r.exit_code is None else str(r.exit_code), f"{r.cpu_s:.2f}", f"{r.max_rss_kb / 1024:.1f}")
        show(t)
    return 0
