"""``legionrm simulate SCENARIO [--cycles N] [--summary] [--plot FILE.png] [--json]``:
the fair-share core over a scenario file, offline (no Ray).

``legionrm simulate --swf FILE [--jobs N] [--hosts N] [--cpus-per-host C]
[--policy fcfs|easy|site] [--starts OUT.csv] [--json]``: a workload trace
replayed through the real Scheduler in simulated time
(:mod:`legionrm.replay`; docs/backfill.md).

The number of cycles is the scenario's own when not given: a ``--cycles N``
its comments name ("Run with --cycles 8"), else the last cycle an arrival or
event happens in (at least 8 when there are none past the first), else 8.
``--summary`` prints one line per cycle; ``--plot`` draws processes per job
and per user over the cycles (matplotlib, no display needed)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rich.table import Table

from legionrm.cli.output import show, table
from legionrm.errors import ConfigError, SchedulingError
from legionrm.replay import read, replay, summary
from legionrm.scheduler.fairshare import CycleResult, DuccCore, load_scenario, run

DEFAULT_CYCLES = 8
_NAMED = re.compile(r"^\s*#.*--cycles[ =](\d+)", re.MULTILINE)


def scenario_cycles(path: str, arrivals: dict[int, object], events: dict[int, object]) -> int:
    """The cycles a scenario asks for (see the module docstring)."""
    try:
        m = _NAMED.search(Path(path).read_text(encoding="utf-8"))
    except OSError:
        m = None
    if m and int(m.group(1)[:18]) >= 1:  # 18 digits: past any bound (the core refuses), never a 5,000-digit int()
        return int(m.group(1)[:18]) if len(m.group(1)) <= 18 else 10**18
    return max([DEFAULT_CYCLES, *arrivals, *events])


def job_tables(r: CycleResult, core: DuccCore) -> tuple[Table, Table]:
    num = ("order", "counted", "processes", "evicting", "cap", "pure")
    jt = table(f"cycle {r.cycle}: jobs", ("job", "user", "class", *num, "deferred", "reason", "machines"), right=num)
    for jid, j in r.jobs.items():
        job = core.jobs.get(jid)
        jt.add_row(jid, job.user if job else "", job.cls if job else "", str(j.order), str(j.counted), str(j.processes),
                   str(j.evicting), str(j.cap), str(j.pure_fair_share), "yes" if j.deferred else "", j.reason,
                   " ".join(f"{m}:{n}" for m, n in j.machines.items()))
    mt = table(f"cycle {r.cycle}: machines", ("machine", "nodepool", "order", "free", "state"), right=("order", "free"))
    for name, m in r.machines.items():
        mt.add_row(name, m.nodepool, str(m.order), str(m.free), m.state)
    return jt, mt


def render(results: list[CycleResult], core: DuccCore) -> None:
    for r in results:
        show(*job_tables(r, core))


def summary_lines(results: list[CycleResult]) -> list[str]:
    """One line per cycle: each job's processes (and evictions in flight)."""
    out = []
    for r in results:
        jobs = " ".join(f"{jid}={j.processes}" + (f"(-{j.evicting})" if j.evicting else "") for jid, j in r.jobs.items())
        total = sum(j.processes for j in r.jobs.values())
        out.append(f"cycle {r.cycle:>3}: {total:>4} processes  {jobs}")
    return out


def series(results: list[CycleResult], core: DuccCore) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Processes per job and per user, one value per cycle (0 before a job arrives)."""
    jobs: dict[str, list[int]] = {}
    users: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        for jid, j in r.jobs.items():
            jobs.setdefault(jid, [0] * len(results))[i] = j.processes
            job = core.jobs.get(jid)
            u = users.setdefault(job.user if job else "?", [0] * len(results))
            u[i] += j.processes
    return jobs, users


def plot(results: list[CycleResult], core: DuccCore, path: str, title: str) -> None:
    """Processes per job (left) and per user (right) over the cycles, to ``path``."""
    # lazily, on purpose: matplotlib (~0.5 s, optional) only when a plot is asked for
    import matplotlib

    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    jobs, users = series(results, core)
    cycles = [r.cycle for r in results]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, data, what in ((axes[0], jobs, "job"), (axes[1], users, "user")):
        for name, values in sorted(data.items()):
            ax.step(cycles, values, where="post", label=name, linewidth=1.8)
        ax.set_title(f"processes per {what}")
        ax.set_xlabel("cycle")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="best")
    axes[0].set_ylabel("processes")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cli_swf(args: argparse.Namespace) -> int:
    """``simulate --swf``: replay the trace, print the summary (``--json``: one
    object), write each job's start and end (``--starts``)."""
    trace = read(args.swf, limit=args.jobs)
    if not trace.jobs:
        raise ConfigError("the trace has no job to replay", file=args.swf)
    cpus = args.cpus_per_host
    hosts = args.hosts or -(-max(j.procs for j in trace.jobs) // cpus)
    result = replay(trace.jobs, hosts, cpus, args.policy)
    doc = summary(args.policy, result.outcomes, hosts * cpus)
    if args.starts:
        lines = ["job,submit,start,end,procs"] + [
            f"{o.job},{o.submit:g},{o.start:g},{o.end:g},{o.procs}" for o in sorted(result.outcomes, key=lambda o: o.job)]
        try:
            Path(args.starts).write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write: {exc.strerror}", file=args.starts) from None
    left = [f"{n} without processors or run time"] if (n := trace.skipped) else []
    if big := result.too_big:
        left.append(f"{len(big)} with more processors than the {hosts * cpus} cpus of {hosts} hosts (job"
                    f"{'s' if len(big) > 1 else ''} {', '.join(map(str, big[:5]))}{', ...' if len(big) > 5 else ''})")
    if left:  # (stderr: --json's stdout is the one object)
        print(f"legionrm simulate: jobs left out: {' and '.join(left)}", file=sys.stderr)
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"{Path(args.swf).name}: {len(result.outcomes)} jobs on {hosts} hosts x {cpus} cpus, "
              f"policy {args.policy}")  # (a line of its own: as a title it would wrap at the columns' width)
        t = table(None, ("measure", "value"), right=("value",))
        for k, v in doc.items():
            if k != "policy":
                t.add_row(k, str(v))
        show(t)
    return 0


def cli_main(args: argparse.Namespace) -> int:
    """Entry point of ``legionrm simulate``."""
    if getattr(args, "swf", None):
        return cli_swf(args)
    if not getattr(args, "scenario", None):
        raise ConfigError("give a scenario file, or --swf FILE to replay a trace", file="simulate")
    cycles = getattr(args, "cycles", None)
    if cycles is not None and cycles < 1:
        raise ConfigError(f"--cycles must be at least 1, not {cycles}")
    sc = load_scenario(args.scenario)
    if cycles is None:
        cycles = scenario_cycles(args.scenario, sc.arrivals, sc.events)
    try:
        results = run(sc, cycles)  # refuses more than fairshare.scenario.MAX_CYCLES cycles
    except (SchedulingError, ConfigError) as exc:
        raise ConfigError(str(exc), file=str(args.scenario)) from None
    if getattr(args, "plot", None):
        plot(results, sc.core, args.plot, f"{Path(args.scenario).name}: {cycles} cycles")
    if getattr(args, "json", False):
        json.dump({"cycles": [r.as_dict() for r in results]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif getattr(args, "summary", False):
        print("\n".join(summary_lines(results)))
    else:
        render(results, sc.core)
    if getattr(args, "plot", None):
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0
