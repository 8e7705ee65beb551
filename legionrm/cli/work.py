"""``legionrm history``: the accounting records of finished instances, as
``sacct`` lists them, read on the head as the service.  (A run's output and
its exit code reach users through the gateway: ``legionrm logs`` and
``legionrm wait`` in :mod:`legionrm.cli.front`.)"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time

from legionrm.cli.output import show, table
from legionrm.cli.requests import CALL_TIMEOUT_S, scheduler_for
from legionrm.models import AccountRecord
from legionrm.naming import SCHEDULER
from legionrm.system import call, proof_for

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
