"""``legionrm submit``'s flags for what a request waits for, as request-file keys.

``--after-ok ID`` / ``--after-any ID`` / ``--after-not-ok ID`` (each repeatable),
``--begin-at T`` (ISO 8601 with its zone, or seconds since the epoch),
``--array SPEC`` (``0-99%10``), ``--requeue``, and, as ``sbatch``'s, ``--qos NAME``
and ``--hold`` become ``--set`` overrides of the request file's ``after_ok``,
``after_any``, ``after_not_ok``, ``begin_at``, ``array``, ``requeue``, ``qos``
and ``hold`` keys, so the gateway checks them as it checks the
file (a bad value is refused in one line naming the key).  Imports no
pydantic model (see :mod:`legionrm.cli.front`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    from typing import Any

KINDS = (("after_ok", "completed (ended well)"), ("after_any", "ended, however"),
         ("after_not_ok", "ended other than completed"))


def request_text(path: str) -> str:
    """A request file's text, or stdin's for ``-`` (``open``, not pathlib: a CLI call does not import it)."""
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def add_submit_flags(sp: argparse.ArgumentParser) -> None:
    """The flags, on the ``submit`` parser."""
    for key, what in KINDS:
        sp.add_argument("--" + key.replace("_", "-"), dest=key, action="append", metavar="ID",
                        help=f"start only once request ID {what} (repeatable); one that can never be: cancelled")
    sp.add_argument("--begin-at", metavar="T", help="do not start before T: ISO 8601 with its zone "
                                                    "(2026-11-24T09:00:00Z) or seconds since the epoch")
    sp.add_argument("--array", metavar="SPEC", help="a job array: 0-99%%10 runs tasks ID_0 .. ID_99, at most 10 at "
                                                    "once, each seeing LEGIONRM_ARRAY_INDEX")
    sp.add_argument("--requeue", action="store_true",
                    help="back to the queue if its host is lost (else it ends node_lost)")
    sp.add_argument("--qos", metavar="NAME", help="the site's QoS to run under (default: the file's, else its class's)")
    sp.add_argument("--hold", action="store_true", help="submit it held: it waits until you `legionrm release` it")


def submit_overrides(args: argparse.Namespace) -> dict[str, str]:
    """The ``--set`` overrides the flags given stand for (TOML values)."""
    out: dict[str, str] = {}
    for key, _ in KINDS:
        ids = getattr(args, key, None)
        if ids:
            out[key] = json.dumps(ids)  # a JSON list of strings is a TOML inline array
    begin = getattr(args, "begin_at", None)
    if begin is not None:
        out["begin_at"] = begin if _number(begin) else json.dumps(begin)
    if getattr(args, "array", None) is not None:
        out["array"] = json.dumps(args.array)
    if getattr(args, "requeue", None):
        out["requeue"] = "true"
    if getattr(args, "qos", None) is not None:
        out["qos"] = json.dumps(args.qos)
    if getattr(args, "hold", None):
        out["hold"] = "true"
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def depend_lines(info: dict[str, Any]) -> list[str]:
    """What ``show`` prints of what a request waits for, and of an array's tasks."""
    out = []
    for key, _ in KINDS:
        if info.get(key):
            out.append(f"  {key} {', '.join(info[key])}")
    if info.get("begin_at") is not None:
        out.append(f"  begin_at {time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(info['begin_at']))}")
    if info.get("array"):
        counts = info.get("array_counts") or {}
        task = (f"task {info['array_index']} of array {info['id'].rsplit('_', 1)[0]} ({info['array']})"
                if info.get("array_index") is not None else f"array {info['array']}: tasks {info['id']}_INDEX")
        out.append(f"  {task}" + (": " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) if counts else ""))
    if info.get("requeue"):
        out.append("  requeue: back to the queue if its host is lost")
    return out
