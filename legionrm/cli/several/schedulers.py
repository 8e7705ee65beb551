"""``legionrm schedulers`` (each scheduler, what it serves, its queue) and an
administrator's ``drain HOST --reason TEXT`` / ``resume HOST``."""

from __future__ import annotations

import argparse
import json

from legionrm.cli.front.connect import client
from legionrm.cli.front.lines import columns
from legionrm.client.wire import Doc


def serves(row: Doc) -> str:
    """What a ``SchedulerRow`` document serves, in words."""
    where = ", ".join(row.get("nodepools") or ()) or "every nodepool"
    constraint = row.get("constraint") or "true"
    return where if constraint == "true" else f"{where} where {constraint}"


def scheduler_table(rows: list[Doc]) -> str:
    """``SchedulerRow`` documents as one table (``schedulers`` prints it, and ``status``)."""
    return columns(("name", "serves", "pending", "running", "instances", "note"), [(
        r["name"] + (" (default)" if r.get("default") else ""), serves(r), (r.get("requests") or {}).get("pending", 0),
        (r.get("requests") or {}).get("running", 0), r.get("instances", 0), r.get("error") or "") for r in rows],
        right=("pending", "running", "instances"))


def cli_schedulers(args: argparse.Namespace) -> int:
    """``legionrm schedulers``: each scheduler, what it serves, its queue."""
    rows = client(args).schedulers()["schedulers"]
    print(json.dumps({"schedulers": rows}, indent=2) if args.json else scheduler_table(rows))
    return 0


def cli_drain(args: argparse.Namespace) -> int:
    """``legionrm drain HOST --reason TEXT`` / ``legionrm resume HOST``."""
    c = client(args)
    done = c.drain(args.host, args.reason) if args.command == "drain" else c.resume(args.host)
    print(json.dumps(done) if args.json else
          f"{done['host']} drained: {done['drained']}" if done.get("drained") else f"{done['host']} takes new work again")
    return 0
