"""``legionrm pools FILE [--json]``: validate a pool file, compute entitlement,
admit once, print (no Ray)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from legionrm.scheduler.pools import KINDS, run_file


def _n(v: float) -> str:
    return f"{v:.3f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def _v(d: dict[str, float]) -> str:
    return " ".join(f"{k}={_n(d[k])}" for k in KINDS)


def render(result: dict[str, Any]) -> str:
    """The human table: one block per pool, then the admitted gangs."""
    lines: list[str] = []
    for path, p in result["pools"].items():
        lines.append(path)
        for label, key in (
            ("entitlement", "entitlement"),
            ("non-slack", "non_slack_entitlement"),
            ("slack", "slack_entitlement"),
            ("allocation", "allocation"),
        ):
            lines.append(f"  {label:<12} {_v(p[key])}")
        queued = [f"{q}: {', '.join(ids)}" for q, ids in p["queues"].items() if ids]
        if queued:
            lines.append(f"  {'queued':<12} " + "; ".join(queued))
    lines.append("admitted: " + (", ".join(result["admitted"]) or "(none)"))
    return "\n".join(lines)


def cli_main(args: argparse.Namespace) -> int:
    """Entry point for ``legionrm pools``; LegionErrors propagate to cli.py (exit 2)."""
    result = run_file(args.file)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(render(result))
    return 0
