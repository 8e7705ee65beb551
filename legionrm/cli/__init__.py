"""The ``legionrm`` command.

Each subcommand's work lives in the module that owns the concept; this file
only parses arguments and turns a :class:`LegionError` into a message on
stderr and exit status 2.  Offline commands (simulate, place, pools,
``query --cluster``) never start Ray.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Callable, Sequence

from legionrm.errors import LegionError

# subcommand -> "module:function"; the function takes the parsed args and
# returns an exit status.  Imported lazily so `legionrm place` never pays for Ray.
COMMANDS: dict[str, str] = {
    "demo": "legionrm.cli.demo:cli_main",
    "up": "legionrm.cli.ops:cli_up",
    "down": "legionrm.cli.ops:cli_down",
    "status": "legionrm.cli.ops:cli_status",
    "query": "legionrm.cli.shell:cli_query",
    "shell": "legionrm.cli.shell:cli_shell",
    "submit": "legionrm.cli.ops:cli_submit",
    "list": "legionrm.cli.requests:cli_list",
    "show": "legionrm.cli.requests:cli_show",
    "cancel": "legionrm.cli.requests:cli_cancel",
    "explain": "legionrm.cli.requests:cli_explain",
    "simulate": "legionrm.cli.simulate:cli_main",
    "place": "legionrm.cli.place:cli_main",
    "pools": "legionrm.cli.pools:cli_main",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="legionrm", description="A Legion-style negotiated resource manager on Ray.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("demo", help="boot the default cluster on local Ray and run a guided tour")

    up = sub.add_parser("up", help="start a system on Ray from a cluster file")
    up.add_argument("--cluster", help="cluster TOML file (default: the bundled example)")
    up.add_argument("--address", help="join an existing Ray cluster instead of starting one")

    sub.add_parser("down", help="stop what `legionrm up` started")
    st = sub.add_parser("status", help="show the running system")
    st.add_argument("--json", action="store_true")

    q = sub.add_parser("query", help="run one MIL query")
    q.add_argument("expr", help="a MIL expression, e.g. '$cpus >= 8 and $arch == \"x86_64\"'")
    q.add_argument("--cluster", help="answer offline from this cluster file instead of a running system")
    q.add_argument("--as", dest="user", help="the calling user (only resources that accept them)")
    q.add_argument("--class", dest="class_name", help="the calling class")
    q.add_argument("--all", action="store_true", help="include resources marked unavailable")
    q.add_argument("--json", action="store_true")

    sh = sub.add_parser("shell", help="interactive MIL shell on the Collection")
    sh.add_argument("--cluster", help="work offline on this cluster file")

    sm = sub.add_parser("submit", help="submit a scheduling request file to a running system")
    sm.add_argument("request", help="request TOML file")
    sm.add_argument("--json", action="store_true", help="the response as JSON")
    sm.add_argument("--wait", action="store_true", help="follow a queued request until it runs or ends")
    sm.add_argument("--wait-timeout", type=float, default=600.0, metavar="S", help="give up following after S seconds")

    ls = sub.add_parser("list", help="requests on the running system, oldest first")
    ls.add_argument("--user", help="only this user's requests")
    ls.add_argument("--state", choices=["pending", "admitted", "placing", "running", "completed", "failed", "cancelled"],
                    help="only requests in this state")
    ls.add_argument("--json", action="store_true", help='{"requests": [...]} as JSON')
    sw = sub.add_parser("show", help="one request's history, instances and failures")
    sw.add_argument("id", help="the request id")
    sw.add_argument("--json", action="store_true", help="the request as JSON")
    ca = sub.add_parser("cancel", help="cancel a request: stop its instances, book everything back")
    ca.add_argument("id", help="the request id")
    ca.add_argument("--json", action="store_true", help="the request after the cancel, as JSON")
    ex = sub.add_parser("explain", help="plan a request file without enacting it: masters, deltas, refusals")
    ex.add_argument("request", help="request TOML file")
    ex.add_argument("--json", action="store_true", help="the schedules as JSON")

    si = sub.add_parser("simulate", help="run the fair-share core over a scenario file (no Ray)")
    si.add_argument("scenario")
    si.add_argument("--cycles", type=int, default=1)
    si.add_argument("--json", action="store_true")

    pl = sub.add_parser("place", help="place jobs with node buckets over a scenario file (no Ray)")
    pl.add_argument("scenario")
    pl.add_argument("--json", action="store_true")

    po = sub.add_parser("pools", help="validate a resource-pool file, compute entitlement and admit (no Ray)")
    po.add_argument("file")
    po.add_argument("--json", action="store_true")
    return p


def _resolve(spec: str) -> Callable[[argparse.Namespace], int]:
    module, func = spec.split(":")
    return getattr(importlib.import_module(module), func)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(_resolve(COMMANDS[args.command])(args) or 0)
    except LegionError as exc:
        print(f"legionrm {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `legionrm query ... | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush stays quiet
        return 141


if __name__ == "__main__":
    sys.exit(main())
