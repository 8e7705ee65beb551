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
from legionrm.scheduler.fairshare.build import MAX_MS, MAX_ORDER, MAX_SMALL, core_from_doc, number
from legionrm.scheduler.fairshare.classes import (
    SharePolicy,
)
from legionrm.scheduler.fairshare.core import CycleResult, DuccCore
from legionrm.scheduler.fairshare.shares import JOB_KINDS, job_order
from legionrm.tomlio import Budget, check_keys, count_of, expand_names, expect, load_toml, require, table_count, tables

TOP_KEYS = {"rm", "nodepool", "class", "user", "machine", "job", "event"}
JOB_KEYS = {
    "id", "user", "class", "memory_gb", "work_items", "threads", "max_processes", "time_per_item_ms",
    "init_time_ms", "kind", "submit", "arrive",
}
UPDATE_FIELDS = {"work_items": int, "time_per_item_ms": float, "init_time_ms": float, "max_processes": int, "threads": int}
MAX_CYCLES = 10_000
"""The most cycles a simulation runs (``--cycles``, an arrival's or an event's cycle)."""
MAX_MACHINES = 10_000
"""The most machines a scenario may describe once ``count`` is expanded."""
MAX_JOBS = 10_000
"""The most ``[[job]]`` tables in a scenario."""
MAX_EVENTS = 100_000
"""The most ``[[event]]`` tables in a scenario."""
MAX_WORK_ITEMS = 10**12
BOUNDS = {"work_items": (0, MAX_WORK_ITEMS), "threads": (1, 1024), "max_processes": (0, MAX_SMALL),
          "time_per_item_ms": (0, MAX_MS), "init_time_ms": (0, MAX_MS)}
"""The range of each numeric job key (also in ``update`` events)."""
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
    quanta = {name: p.quantum_gb for name, p in core.tree.pools.items()}
    least = min(quanta.values(), default=core.settings.quantum_gb)
    seen: dict[str, str] = {}
    budget = Budget("machines", file=file, limit=MAX_MACHINES)
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
        quantum = quanta.get(pool, least) if pool is not None else least
        if job_order(mem, quantum) > MAX_ORDER:
            raise ConfigError(f"more than {MAX_ORDER} quanta of {quantum:g} GB: at most {MAX_ORDER * quantum:g} GB",
                              file=file, table=w, key="memory_gb")
        count = count_of(t, file=file, where=w, limit=MAX_MACHINES)
        budget.take(count or 1, where=w)
        for n in expand_names(name, count):
            if n in seen:
                raise ConfigError(f"duplicate machine {n!r} (also in {seen[n]})", file=file, table=w, key="name")
            seen[n] = w
            core.add_machine(n, mem, pool)

    sc = Scenario(core=core)
    job_ids: dict[str, str] = {}
    for i, t in enumerate(table_count(tables(doc, "job", file), "job", file=file, limit=MAX_JOBS)):
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
        if job_order(mem, least) > MAX_ORDER:
            raise ConfigError(f"more than {MAX_ORDER} quanta of {least:g} GB: at most {MAX_ORDER * least:g} GB",
                              file=file, table=w, key="memory_gb")
        arrive = number(t, "arrive", int, 1, file, w, minimum=1, maximum=MAX_CYCLES)
        spec = dict(
            id=jid, user=require(t, "user", str, file=file, where=w), memory_gb=mem, cls=cls, kind=kind,
            **{key: number(t, key, UPDATE_FIELDS[key], default, file, w, minimum=BOUNDS[key][0], maximum=BOUNDS[key][1])
               for key, default in (("work_items", 0), ("threads", 1), ("max_processes", None),
                                    ("time_per_item_ms", 0.0), ("init_time_ms", 0.0))},
            submit=number(t, "submit", float, float(i), file, w, minimum=-MAX_MS, maximum=MAX_MS),
        )
        sc.arrivals.setdefault(arrive, []).append(spec)

    for i, t in enumerate(table_count(tables(doc, "event", file), "event", file=file, limit=MAX_EVENTS)):
        w = f"event[{i}]"
        cycle = require(t, "cycle", int, file=file, where=w)
        if cycle < 1:
            raise ConfigError(f"must be >= 1, not {cycle}", file=file, table=w, key="cycle")
        if cycle > MAX_CYCLES:
            raise ConfigError(f"must be at most {MAX_CYCLES}, not {cycle}", file=file, table=w, key="cycle")
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
                    ev[key] = number(t, key, typ, None, file, w, minimum=BOUNDS[key][0], maximum=BOUNDS[key][1])
        sc.events.setdefault(cycle, []).append(ev)
    return sc


def run(sc: Scenario, cycles: int) -> list[CycleResult]:
    """Run ``cycles`` cycles (1 to :data:`MAX_CYCLES`); returns each cycle's result."""
    if not 1 <= cycles <= MAX_CYCLES:
        raise ConfigError(f"cycles (--cycles) must be from 1 to {MAX_CYCLES}, not {cycles}")
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


