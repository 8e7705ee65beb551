"""``legionrm simulate SCENARIO [--cycles N] [--json]``: the fair-share core
over a scenario file, offline (no Ray); tables with rich, or JSON."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from legionrm.errors import ConfigError, SchedulingError
from legionrm.scheduler.fairshare import CycleResult, DuccCore, load_scenario, run


def render(results: list[CycleResult], core: DuccCore) -> None:
    console = Console()
    for r in results:
        jt = Table(title=f"cycle {r.cycle}: jobs", title_justify="left")
        for col in ("job", "user", "class", "order", "counted", "processes", "evicting", "cap", "pure", "deferred", "reason", "machines"):
            jt.add_column(col, justify="right" if col in ("order", "counted", "processes", "evicting", "cap", "pure") else "left")
        for jid, j in r.jobs.items():
            job = core.jobs.get(jid)
            jt.add_row(
                jid, job.user if job else "", job.cls if job else "", str(j.order), str(j.counted), str(j.processes),
                str(j.evicting), str(j.cap), str(j.pure_fair_share), "yes" if j.deferred else "", j.reason,
                " ".join(f"{m}:{n}" for m, n in j.machines.items()),
            )
        mt = Table(title=f"cycle {r.cycle}: machines", title_justify="left")
        for col in ("machine", "nodepool", "order", "free", "state"):
            mt.add_column(col, justify="right" if col in ("order", "free") else "left")
        for name, m in r.machines.items():
            mt.add_row(name, m.nodepool, str(m.order), str(m.free), m.state)
        console.print(jt)
        console.print(mt)


def cli_main(args) -> int:
    """Entry point of ``legionrm simulate SCENARIO [--cycles N] [--json]``."""
    cycles = getattr(args, "cycles", 1) or 1
    if cycles < 1:
        raise ConfigError(f"--cycles must be >= 1, not {cycles}")
    sc = load_scenario(args.scenario)
    try:
        results = run(sc, cycles)
    except SchedulingError as exc:
        raise ConfigError(str(exc), file=str(args.scenario)) from None
    if getattr(args, "json", False):
        json.dump({"cycles": [r.as_dict() for r in results]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(results, sc.core)
    return 0
