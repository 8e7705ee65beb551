"""The queue's verbs: ``hold``, ``release``, ``update`` and ``top``, and its views ``share``
(the fair-share tree, as ``sshare``) and ``prio`` (each pending request's factors, as ``sprio``).
They print from the typed Client's models."""

from __future__ import annotations

import argparse
import json

from legionrm.cli.front.connect import typed
from legionrm.cli.front.lines import columns, request_json
from legionrm.errors import ConfigError

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def cli_queue(args: argparse.Namespace) -> int:
    """``legionrm hold|release|top ID...`` and ``legionrm update ID... --priority N|--qos Q``: one
    line per request, its state and reason; exit 1 when any was refused."""
    from legionrm.client.errors import GatewayError

    c = typed(args)
    refused = 0
    for rid in args.ids:
        try:
            if args.command == "update":
                if args.priority is None and args.qos is None:
                    raise ConfigError("give --priority N (or none: back to the formula) and/or --qos NAME", file="update")
                prio = None if args.priority in (None, "none") else int(args.priority)
                info = c.update(rid, priority=prio, qos=args.qos, clear_priority=args.priority == "none")
            else:
                info = getattr(c, args.command)(rid)
        except GatewayError as exc:
            refused += 1
            print(json.dumps({"id": rid, "code": exc.code, "reason": exc.reason}) if args.json
                  else f"{rid}: refused: {exc.code}: {exc.reason}")
            continue
        print(json.dumps(request_json(info.model_dump(mode="json"))) if args.json else f"{info.id}: {info.state}"
              + (f" (held by {info.hold})" if info.hold else "") + (f": {info.reason}" if info.reason else ""))
    return 1 if refused else 0


def share_lines(rows: Iterable[Any]) -> str:
    """The fair-share tree as ``sshare`` prints it: a group, then its users indented."""
    return columns(("group/user", "shares", "norm shares", "raw usage", "decayed usage", "norm usage", "factor"),
                   [(r.group if r.user is None else f"  {r.user}", f"{r.shares:g}", f"{r.norm_shares:.4f}",
                     f"{r.raw_usage:.0f}", f"{r.decayed_usage:.0f}", f"{r.norm_usage:.4f}", f"{r.factor:.4f}")
                    for r in rows],
                   right=("shares", "norm shares", "raw usage", "decayed usage", "norm usage", "factor"))


def cli_share(args: argparse.Namespace) -> int:
    """``legionrm share``: shares, raw and decayed usage (cpu-seconds) and the fair-share factor."""
    report = typed(args).share()
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(f"usage in cpu-seconds; half-life {report.half_life_s / 86_400:g} days"
              if report.half_life_s > 0 else "usage in cpu-seconds; no decay")
        print(share_lines(report.rows) if report.rows else "no users yet")
    return 0


def prio_lines(report: Any) -> str:
    """Each pending request's priority and its weighted factors, as ``sprio`` prints them."""
    w = report.weights
    return columns(("id", "user", "qos", "priority", "age", "fairshare", "qos_f", "size", "note"),
                   [(r.id, r.user, r.qos, f"{r.priority:.0f}" + ("*" if r.fixed else ""), f"{w.get('age', 0) * r.age:.0f}",
                     f"{w.get('fairshare', 0) * r.fairshare:.0f}", f"{w.get('qos', 0) * r.qos_factor:.0f}",
                     f"{w.get('size', 0) * r.size:.0f}", r.blocked or "-") for r in report.rows],
                   right=("priority", "age", "fairshare", "qos_f", "size"))


def cli_prio(args: argparse.Namespace) -> int:
    """``legionrm prio``: the pending requests in queue order, each priority and its weighted factors
    (``*``: an administrator's fixed priority), then the held ones."""
    report = typed(args).prio()
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(prio_lines(report) if report.rows else "no pending requests")
    return 0
