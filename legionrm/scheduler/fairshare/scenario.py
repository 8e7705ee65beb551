"""Simulation scenarios for the DUCC core: a scenario file -> a core, its
arrivals and events by cycle, and the loop that runs them (``legionrm simulate``).

The file format is described in docs/fairshare.md.  Every problem in the
file is a :class:`ConfigError` naming the table (``job[2]``), the key and
what is wrong, so the command exits 2 with a message a person can act on.

Time in the simulator: evictions published in a cycle have left by the start
of the next; processes allocated in a cycle are running from the next.
Within a cycle, arrivals are admitted first, then the cycle's events apply,
then the scheduler runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legionrm.errors import ConfigError
from legionrm.scheduler.fairshare.build import core_from_doc, number
from legionrm.scheduler.fairshare.classes import (
    SharePolicy,
)
from legionrm.scheduler.fairshare.core import CycleResult, DuccCore
from legionrm.scheduler.fairshare.shares import JOB_KINDS
from legionrm.tomlio import check_keys, expand_names, expect, load_toml, require, tables

TOP_KEYS = {"rm", "nodepool", "class", "user", "machine", "job", "event"}
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
        count = number(t, "count", int, None, file, w, minimum=1)
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
            want = SharePolicy.RESERVE if kind == "reservation" and SharePolicy.RESERVE in core.classes.defaults else SharePolicy.FAIR_SHARE
            if want not in core.classes.defaults:
                raise ConfigError("no class given and no default class to use", file=file, table=w, key="class")
        mem = require(t, "memory_gb", float, file=file, where=w)
        if mem <= 0:
            raise ConfigError(f"must be > 0, not {mem!r}", file=file, table=w, key="memory_gb")
        arrive = number(t, "arrive", int, 1, file, w, minimum=1)
        spec = dict(
            id=jid, user=require(t, "user", str, file=file, where=w), memory_gb=mem, cls=cls, kind=kind,
            work_items=number(t, "work_items", int, 0, file, w, minimum=0),
            threads=number(t, "threads", int, 1, file, w, minimum=1),
            max_processes=number(t, "max_processes", int, None, file, w, minimum=0),
            time_per_item_ms=number(t, "time_per_item_ms", float, 0.0, file, w, minimum=0),
            init_time_ms=number(t, "init_time_ms", float, 0.0, file, w, minimum=0),
            submit=number(t, "submit", float, float(i), file, w),
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
                    ev[key] = number(t, key, typ, None, file, w, minimum=1 if key == "threads" else 0)
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


