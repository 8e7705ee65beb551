"""A ``legionrm pools`` file: validate its pools, compute entitlement, admit once.

The file (see docs/pools.md)::

    [capacity]            # cluster capacity per kind: cpu, memory, disk, gpu
    [slack_capacity]      # revocable capacity (only cpu is used)
    [[pool]]              # path, optional controller_limit_percent, slack_limit_percent
    [pool.cpu]            # reservation, limit, share (default 1), type (ELASTIC | STATIC)
    [[demand]]            # pool, the four kinds, slack = true for the revocable side
    [[allocation]]        # pool, the four kinds, slack; optional preemptible, controller
    [[gang]]              # id, pool, tasks = [{cpu, memory, disk, gpu, priority,
                          #   preemptible, revocable, controller}, ...]

Pools are created parents first (file order within a depth) under a root
whose reservation and limit are ``[capacity]``, each through the validators;
the first refusal is the command's error (exit 2).  Shape errors in the file
are ConfigErrors naming file, table and key.

The ``[[pool]]`` table format has one parser, :func:`~legionrm.scheduler.pools.spec.parse_pools`, and one tree builder,
:func:`~legionrm.scheduler.pools.spec.build_tree`: cluster files go through
the same two.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from legionrm.errors import ConfigError, LegionError, PoolRuleError
from legionrm.models import PoolSpec
from legionrm.scheduler.pools.respool import (
    Gang,
    ResourcePoolTree,
    Task,
)
from legionrm.scheduler.pools.spec import (
    build_tree,
    parse_pools,
    pool_config,
    resource_spec,
)
from legionrm.scheduler.pools.validate import check_path, check_resources
from legionrm.scheduler.pools.vec import KINDS
from legionrm.tomlio import (
    MAX_AMOUNT,
    bounded,
    check_keys,
    expect,
    load_toml,
    require,
    table_count,
    tables,
)

MAX_GANGS = 10_000
"""The most ``[[gang]]``, ``[[demand]]`` or ``[[allocation]]`` tables in one pool file."""
MAX_TASKS = 10_000
"""The most tasks one gang may hold (and 10 times this in the whole file)."""
MAX_PRIORITY = 2**31 - 1
"""Task priorities are 32-bit, either sign."""


def _kinds(table: dict[str, Any], *, file: str, where: str) -> dict[str, float]:
    """cpu, memory, disk, gpu: finite numbers from 0 to MAX_AMOUNT (absent: 0)."""
    return {k: bounded(table, k, float, 0.0, file=file, where=where, lo=0, hi=MAX_AMOUNT) for k in KINDS}


def _capacity(doc: dict[str, Any], name: str, file: str) -> dict[str, float]:
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError("must be a table", file=file, table=name)
    check_keys(table, KINDS, file=file, where=name)
    return _kinds(table, file=file, where=name)


def _pool_ref(tree: ResourcePoolTree, table: dict[str, Any], *, file: str, where: str, leaf: bool) -> str:
    path = require(table, "pool", str, file=file, where=where)
    try:
        pool = tree.get(path)
    except LegionError as exc:
        raise ConfigError(str(exc), file=file, table=where, key="pool") from None
    if leaf and not pool.is_leaf:
        raise ConfigError(f"resource pool {path} is not a leaf node", file=file, table=where, key="pool")
    return path


def _gang(table: dict[str, Any], *, file: str, where: str) -> Gang:
    check_keys(table, ("id", "pool", "tasks"), file=file, where=where)
    gid = require(table, "id", str, file=file, where=where)
    raw = require(table, "tasks", list, file=file, where=where)
    if not raw:
        raise ConfigError("gang has no elements", file=file, table=where, key="tasks")
    if len(raw) > MAX_TASKS:
        raise ConfigError(f"more than {MAX_TASKS} tasks in one gang", file=file, table=where, key="tasks")
    tasks = []
    for i, t in enumerate(raw):
        tw = f"{where}.tasks[{i}]"
        if not isinstance(t, dict):
            raise ConfigError("must be a table", file=file, table=tw)
        check_keys(t, (*KINDS, "id", "priority", "preemptible", "revocable", "controller"), file=file, where=tw)
        tasks.append(
            Task(
                id=expect(t, "id", str, f"{gid}-{i}", file=file, where=tw),
                **_kinds(t, file=file, where=tw),
                priority=bounded(t, "priority", int, 0, file=file, where=tw, lo=-MAX_PRIORITY, hi=MAX_PRIORITY),
                preemptible=expect(t, "preemptible", bool, True, file=file, where=tw),
                revocable=expect(t, "revocable", bool, False, file=file, where=tw),
                controller=expect(t, "controller", bool, False, file=file, where=tw),
            )
        )
    return Gang(gid, tuple(tasks))


_KIND_TWICE = re.compile(r"Cannot declare \('pool', '([^']*)'\) twice \(at line (\d+)")
_POOL_HEADER = re.compile(r"^\s*\[\[\s*pool\s*\]\]")
_KIND_HEADER = re.compile(r"^\s*\[\s*pool\s*\.\s*([A-Za-z0-9_-]+)\s*\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


def load_pool_file(file: str) -> dict[str, Any]:
    """The parsed file.  TOML refuses a kind sub-table declared twice in one
    ``[[pool]]``; that is a repeated kind, so it is reported as the validator
    reports one (see :func:`_refuse_repeated_kind`).  Other syntax errors are
    ConfigErrors."""
    try:
        return load_toml(file)
    except ConfigError as exc:
        m = _KIND_TWICE.search(str(exc))
        if m is not None:
            _refuse_repeated_kind(file, int(m.group(2)))
        raise


def _refuse_repeated_kind(file: str, line_no: int) -> None:
    """Read the ``[[pool]]`` block holding line ``line_no`` one kind sub-table at
    a time and run the resource rules on its kinds in file order, repeats
    included: raises the first refusal, the one upstream gives for the same
    resource list (an earlier kind's own error comes before the repeat).
    Returns, leaving the TOML error to stand, when the block cannot be read so."""
    lines = Path(file).read_text(encoding="utf-8").splitlines()
    starts = [i for i in range(min(line_no, len(lines))) if _POOL_HEADER.match(lines[i])]
    if not starts:
        return
    start = starts[-1]
    after = range(start + 1, len(lines))
    end = next((i for i in after if _ANY_HEADER.match(lines[i]) and not _KIND_HEADER.match(lines[i])), len(lines))
    segments: list[tuple[str, list[str]]] = [("", [])]
    for line in lines[start + 1 : end]:
        m = _KIND_HEADER.match(line)
        if m:
            segments.append((m.group(1), []))
        else:
            segments[-1][1].append(line)
    try:
        head, *subs = [(kind, tomllib.loads("\n".join(body))) for kind, body in segments]
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):  # the load_toml error stands
        return
    where = f"pool[{len(starts) - 1}]"
    table = head[1]
    path = require(table, "path", str, file=file, where=where)
    kinds = [(k, v) for k, v in table.items() if isinstance(v, dict)] + subs
    config = pool_config(PoolSpec(
        path=path,
        resources=tuple(resource_spec(k, sub, file=file, where=f"{where}.{k}") for k, sub in kinds),
        controller_limit_percent=expect(table, "controller_limit_percent", float, None, file=file, where=where),
        slack_limit_percent=expect(table, "slack_limit_percent", float, None, file=file, where=where),
    ))  # fmt: skip
    check_path(path)
    check_resources(config, path)
    kind = next((k for i, (k, _) in enumerate(kinds) if k in [j for j, _ in kinds[:i]]), None)
    if kind is None:
        return
    raise PoolRuleError(f"resource pool config has multiple configurations for resource type {kind}",
                        path=path, rule="resource_pool", kind=kind)  # fmt: skip


def run_file(file: str) -> dict[str, Any]:
    """Load, validate, compute entitlement, run one admission cycle; the --json answer."""
    doc = load_pool_file(file)
    check_keys(doc, ("capacity", "slack_capacity", "pool", "demand", "allocation", "gang"), file=file, where="")
    capacity = _capacity(doc, "capacity", file)
    slack_capacity = _capacity(doc, "slack_capacity", file)
    tree = build_tree(parse_pools(doc, file=file), capacity)

    for i, t in enumerate(table_count(tables(doc, "demand", file), "demand", file=file, limit=MAX_GANGS)):
        w = f"demand[{i}]"
        check_keys(t, (*KINDS, "pool", "slack"), file=file, where=w)
        path = _pool_ref(tree, t, file=file, where=w, leaf=True)
        tree.add_demand(path, _kinds(t, file=file, where=w), slack=expect(t, "slack", bool, False, file=file, where=w))
    for i, t in enumerate(table_count(tables(doc, "allocation", file), "allocation", file=file, limit=MAX_GANGS)):
        w = f"allocation[{i}]"
        check_keys(t, (*KINDS, "pool", "slack", "preemptible", "controller"), file=file, where=w)
        path = _pool_ref(tree, t, file=file, where=w, leaf=True)
        tree.add_allocation(
            path,
            _kinds(t, file=file, where=w),
            slack=expect(t, "slack", bool, False, file=file, where=w),
            preemptible=expect(t, "preemptible", bool, True, file=file, where=w),
            controller=expect(t, "controller", bool, False, file=file, where=w),
        )
    seen: set[str] = set()
    task_ids: set[str] = set()
    for i, t in enumerate(table_count(tables(doc, "gang", file), "gang", file=file, limit=MAX_GANGS)):
        w = f"gang[{i}]"
        gang = _gang(t, file=file, where=w)
        if gang.id in seen:
            raise ConfigError(f"gang id {gang.id!r} is used twice", file=file, table=w, key="id")
        seen.add(gang.id)
        for j, task in enumerate(gang.tasks):  # each task's allocation is released by its id
            if task.id in task_ids:
                raise ConfigError(f"task id {task.id!r} is used twice", file=file, table=f"{w}.tasks[{j}]", key="id")
            task_ids.add(task.id)
        if len(task_ids) > 10 * MAX_TASKS:
            raise ConfigError(f"more than {10 * MAX_TASKS} tasks in the file", file=file, table=w, key="tasks")
        path = _pool_ref(tree, t, file=file, where=w, leaf=True)
        tree.enqueue(gang, path)

    tree.compute_entitlement(capacity, slack_capacity)
    admitted = tree.admit_cycle()
    return {"pools": tree.report(), "admitted": [g.id for g in admitted]}


