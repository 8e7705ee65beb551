"""``legionrm simulate``: run the DUCC core over a scenario file, offline.

The file format is described in docs/fairshare.md.  Every problem in the
file is a :class:`ConfigError` naming the table (``job[2]``), the key and
what is wrong, so the command exits 2 with a message a person can act on.

Time in the simulator: evictions published in a cycle have left by the start
of the next; processes allocated in a cycle are running from the next.
Within a cycle, arrivals are admitted first, then the cycle's events apply,
then the scheduler runs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legionrm.config import check_keys, expand_names, expect, load_toml, require, tables
from legionrm.errors import ConfigError, SchedulingError
from legionrm.scheduler.fairshare.classes import ClassSpec, NodepoolSpec, Policy, RmSettings, UserSpec
from legionrm.scheduler.fairshare.core import CycleResult, DuccCore
from legionrm.scheduler.fairshare.shares import JOB_KINDS

RM_KEYS = {
    "quantum_gb": float, "fragmentation_threshold": int, "initialization_cap": int, "expand_by_doubling": bool,
    "prediction": bool, "prediction_fudge_ms": float, "global_allotment_gb": float, "reserve_overage_gb": float,
    "defragmentation": bool, "node_stability": int, "epoch_ms": float, "reserved_dram_gb": float,
}
TOP_KEYS = {"rm", "nodepool", "class", "user", "machine", "job", "event"}
CLASS_KEYS = {
    "name", "policy", "priority", "weight", "nodepool", "users", "expand_by_doubling", "initialization_cap",
    "prediction", "prediction_fudge_ms", "max_allotment_gb", "default", "abstract", "parent",
}
JOB_KEYS = {
    "id", "user", "class", "memory_gb", "work_items", "threads", "max_processes", "time_per_item_ms",
    "init_time_ms", "kind", "submit", "arrive",
}
UPDATE_FIELDS = {"work_items": int, "time_per_item_ms": float, "init_time_ms": float, "max_processes": int, "threads": int}
EVENT_KINDS = {"complete": "job", "update": "job", "vary_off": "machine", "vary_on": "machine", "node_down": "machine", "node_up": "machine"}


@dataclass
class Scenario:
    """A loaded scenario: a ready core plus the arrivals and events by cycle."""

    core: DuccCore
    arrivals: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _num(t: dict, key: str, typ: type, default: Any, file: str, where: str, minimum: float | None = None) -> Any:
    v = expect(t, key, typ, default, file=file, where=where)
    if v is not None and minimum is not None and v < minimum:
        raise ConfigError(f"must be >= {minimum:g}, not {v!r}", file=file, table=where, key=key)
    return v


def core_from_doc(doc: dict[str, Any], file: str, prefix: str = "", defaults: RmSettings | None = None) -> DuccCore:
    """A DUCC core (no machines) from the ``rm``, ``nodepool``, ``class`` and
    ``user`` tables of ``doc``; ``prefix`` names where ``doc`` sits in the file
    (``"fairshare."``) for error messages; ``defaults`` are the settings for
    keys absent from ``rm``.  Raises ConfigError naming table and key."""
    rm = doc.get("rm", {})
    if not isinstance(rm, dict):
        raise ConfigError(f"must be a table [{prefix}rm]", file=file, table=f"{prefix}rm")
    check_keys(rm, RM_KEYS, file=file, where=f"{prefix}rm")
    kw = {}
    for key, typ in RM_KEYS.items():
        if key in rm:
            kw[key] = _num(rm, key, typ, None, file, f"{prefix}rm", minimum=0 if typ is not bool else None)
    if kw.get("quantum_gb") == 0:
        raise ConfigError("must be > 0", file=file, table=f"{prefix}rm", key="quantum_gb")
    settings = dataclasses.replace(defaults or RmSettings(), **kw)

    pools = []
    for i, t in enumerate(tables(doc, "nodepool", file)):
        w = f"{prefix}nodepool[{i}]"
        check_keys(t, {"name", "parent", "search_order", "quantum_gb"}, file=file, where=w)
        pools.append(NodepoolSpec(
            name=require(t, "name", str, file=file, where=w), parent=expect(t, "parent", str, None, file=file, where=w),
            search_order=expect(t, "search_order", int, 100, file=file, where=w),
            quantum_gb=expect(t, "quantum_gb", float, None, file=file, where=w),
        ))
    from legionrm.scheduler.fairshare.classes import resolve_nodepools

    resolve_nodepools(pools, file=file, where=[f"{prefix}nodepool[{i}]" for i in range(len(pools))])
    pool_names = {p.name for p in pools} or {"default"}

    classes = []
    for i, t in enumerate(tables(doc, "class", file)):
        w = f"{prefix}class[{i}]"
        check_keys(t, CLASS_KEYS, file=file, where=w)
        users = expect(t, "users", list, None, file=file, where=w)
        if users is not None and not all(isinstance(u, str) for u in users):
            raise ConfigError("must be a list of user names", file=file, table=w, key="users")
        pol = expect(t, "policy", str, None, file=file, where=w)
        if pol is not None and pol.upper() not in Policy.__members__:
            raise ConfigError(f"unknown policy {pol!r} (known: FAIR_SHARE, FIXED_SHARE, RESERVE)", file=file, table=w, key="policy")
        classes.append(ClassSpec(
            name=require(t, "name", str, file=file, where=w), policy=pol.upper() if pol else None,
            priority=expect(t, "priority", int, None, file=file, where=w),
            weight=_num(t, "weight", float, None, file, w, minimum=0),
            nodepool=expect(t, "nodepool", str, None, file=file, where=w),
            users=tuple(users) if users is not None else None,
            expand_by_doubling=expect(t, "expand_by_doubling", bool, None, file=file, where=w),
            initialization_cap=_num(t, "initialization_cap", int, None, file, w, minimum=0),
            prediction=expect(t, "prediction", bool, None, file=file, where=w),
            prediction_fudge_ms=_num(t, "prediction_fudge_ms", float, None, file, w, minimum=0),
            max_allotment_gb=_num(t, "max_allotment_gb", float, None, file, w, minimum=0),
            default=expect(t, "default", bool, False, file=file, where=w),
            abstract=expect(t, "abstract", bool, False, file=file, where=w),
            parent=expect(t, "parent", str, None, file=file, where=w), where=w,
        ))
    users = []
    for i, t in enumerate(tables(doc, "user", file)):
        w = f"{prefix}user[{i}]"
        check_keys(t, {"name", "max_allotment_gb"}, file=file, where=w)
        users.append(UserSpec(require(t, "name", str, file=file, where=w), _num(t, "max_allotment_gb", float, None, file, w, minimum=0)))

    from legionrm.scheduler.fairshare.classes import resolve_classes

    first_pool = pools[0].name if pools else "default"
    for p in pools:
        if p.parent is None:
            first_pool = p.name
            break
    resolve_classes(classes, settings, pool_names, file=file, default_pool=first_pool)
    return DuccCore(settings, pools, classes, users)



def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file; raises ConfigError naming table and key."""
    file = str(path)
    doc = load_toml(path)
    for key in doc:
        if key not in TOP_KEYS:
            raise ConfigError(f"unknown table (known: {', '.join(sorted(TOP_KEYS))})", file=file, table=key)
    core = core_from_doc(doc, file)
    pool_names = set(core.tree.pools)
    seen: dict[str, str] = {}
    for i, t in enumerate(tables(doc, "machine", file)):
        w = f"machine[{i}]"
        check_keys(t, {"name", "memory_gb", "nodepool", "count"}, file=file, where=w)
        name = require(t, "name", str, file=file, where=w)
        mem = require(t, "memory_gb", float, file=file, where=w)
        if mem <= 0:
            raise ConfigError(f"must be > 0, not {mem!r}", file=file, table=w, key="memory_gb")
        pool = expect(t, "nodepool", str, None, file=file, where=w)
        if pool is not None and pool not in pool_names:
            raise ConfigError(f"machine in no pool: unknown nodepool {pool!r} (known: {', '.join(sorted(pool_names))})", file=file, table=w, key="nodepool")
        count = _num(t, "count", int, None, file, w, minimum=1)
        for n in expand_names(name, count):
            if n in seen:
                raise ConfigError(f"duplicate machine {n!r} (also in {seen[n]})", file=file, table=w, key="name")
            seen[n] = w
            core.add_machine(n, mem, pool)

    sc = Scenario(core=core)
    job_ids: dict[str, str] = {}
    for i, t in enumerate(tables(doc, "job", file)):
        w = f"job[{i}]"
        check_keys(t, JOB_KEYS, file=file, where=w)
        jid = require(t, "id", (str, int), file=file, where=w)
        jid = str(jid)
        if jid in job_ids:
            raise ConfigError(f"duplicate job id {jid!r} (also in {job_ids[jid]})", file=file, table=w, key="id")
        job_ids[jid] = w
        cls = expect(t, "class", str, None, file=file, where=w)
        if cls is not None and cls not in core.classes.classes:
            raise ConfigError(f"unknown class {cls!r} (known: {', '.join(sorted(core.classes.classes))})", file=file, table=w, key="class")
        kind = expect(t, "kind", str, "job", file=file, where=w)
        if kind not in JOB_KINDS:
            raise ConfigError(f"unknown kind {kind!r} (known: {', '.join(JOB_KINDS)})", file=file, table=w, key="kind")
        if cls is None:
            want = Policy.RESERVE if kind == "reservation" and Policy.RESERVE in core.classes.defaults else Policy.FAIR_SHARE
            if want not in core.classes.defaults:
                raise ConfigError("no class given and no default class to use", file=file, table=w, key="class")
        mem = require(t, "memory_gb", float, file=file, where=w)
        if mem <= 0:
            raise ConfigError(f"must be > 0, not {mem!r}", file=file, table=w, key="memory_gb")
        arrive = _num(t, "arrive", int, 1, file, w, minimum=1)
        spec = dict(
            id=jid, user=require(t, "user", str, file=file, where=w), memory_gb=mem, cls=cls, kind=kind,
            work_items=_num(t, "work_items", int, 0, file, w, minimum=0),
            threads=_num(t, "threads", int, 1, file, w, minimum=1),
            max_processes=_num(t, "max_processes", int, None, file, w, minimum=0),
            time_per_item_ms=_num(t, "time_per_item_ms", float, 0.0, file, w, minimum=0),
            init_time_ms=_num(t, "init_time_ms", float, 0.0, file, w, minimum=0),
            submit=_num(t, "submit", float, float(i), file, w),
        )
        sc.arrivals.setdefault(arrive, []).append(spec)

    for i, t in enumerate(tables(doc, "event", file)):
        w = f"event[{i}]"
        cycle = require(t, "cycle", int, file=file, where=w)
        if cycle < 1:
            raise ConfigError(f"must be >= 1, not {cycle}", file=file, table=w, key="cycle")
        kind = require(t, "kind", str, file=file, where=w)
        if kind not in EVENT_KINDS:
            raise ConfigError(f"unknown event kind {kind!r} (known: {', '.join(EVENT_KINDS)})", file=file, table=w, key="kind")
        subject = EVENT_KINDS[kind]
        allowed = {"cycle", "kind", subject} | (set(UPDATE_FIELDS) if kind == "update" else set())
        check_keys(t, allowed, file=file, where=w)
        ref = str(require(t, subject, (str, int) if subject == "job" else str, file=file, where=w))
        if subject == "job" and ref not in job_ids:
            raise ConfigError(f"unknown job {ref!r}", file=file, table=w, key="job")
        if subject == "machine" and ref not in seen:
            raise ConfigError(f"unknown machine {ref!r}", file=file, table=w, key="machine")
        ev = {"kind": kind, subject: ref}
        if kind == "update":
            for key, typ in UPDATE_FIELDS.items():
                if key in t:
                    ev[key] = _num(t, key, typ, None, file, w, minimum=1 if key == "threads" else 0)
        sc.events.setdefault(cycle, []).append(ev)
    return sc


def run(sc: Scenario, cycles: int) -> list[CycleResult]:
    """Run ``cycles`` cycles; returns each cycle's result."""
    core = sc.core
    out = []
    for c in range(1, cycles + 1):
        if c > 1:
            core.confirm_evictions()
        for spec in sc.arrivals.get(c, []):
            core.submit(**spec)
        for ev in sc.events.get(c, []):
            kind = ev["kind"]
            if kind in ("complete", "update") and ev["job"] not in core.jobs:
                continue  # not arrived yet, or already complete
            if kind == "complete":
                core.complete_job(ev["job"])
            elif kind == "update":
                core.update_job(ev["job"], **{k: v for k, v in ev.items() if k in UPDATE_FIELDS})
            else:
                getattr(core, kind)(ev["machine"])
        out.append(core.run_cycle())
    return out


def render(results: list[CycleResult], core: DuccCore) -> None:
    from rich.console import Console
    from rich.table import Table

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
