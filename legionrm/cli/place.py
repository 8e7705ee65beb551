"""``legionrm place SCENARIO.toml [--json]``: node-bucket placement over a
scenario file, offline (no Ray); a table in the house style, or JSON."""

from __future__ import annotations

import json
import sys
from argparse import Namespace

from legionrm.cli.output import render, table
from legionrm.scheduler.placement import PlacementResult, load_scenario, run_scenario


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    return str(int(t)) if float(t).is_integer() else str(t)


def render_text(results: dict[str, PlacementResult]) -> str:
    """The placements as a table in the house style (one job per row)."""
    t = table(None, ("JOB", "STATUS", "PATH", "START", "PLACEMENT / COMMENT"), right=("START",))
    for jid, r in results.items():
        text = r.exec_vnode if r.runs else r.comment
        if r.failed_chunk and r.status == "not_now":  # a "never" comment names its chunk already
            text += f"  [chunk {r.failed_chunk}]"
        t.add_row(jid, r.status, r.path, _fmt_time(r.earliest_start), text)
    return render(t)


def cli_main(args: Namespace) -> int:
    """Entry point for ``legionrm place``; errors propagate as LegionError (exit 2)."""
    sc = load_scenario(args.scenario)
    _, results = run_scenario(sc)
    if getattr(args, "json", False):
        print(json.dumps({"jobs": {jid: r.to_json() for jid, r in results.items()}}, indent=2))
    else:
        print(render_text(results))
    sys.stdout.flush()
    return 0
