"""Placement scenarios: a scenario file -> hosts, holdings and jobs, placed in
one cycle by the placement engine (``legionrm place``).

The scenario file (all times in seconds)::

    [scheduler]
    resources = ["ncpus", "mem", "color"]   # bucket resources (default: PBS's line)
    node_sort_key = "sort_priority HIGH"     # or a list of keys
    node_group_key = "switch"                # placement sets (optional)
    do_not_span_psets = false
    now = 0

    [[node]]
    name = "n"          # with count = 3: n1, n2, n3
    count = 3
    priority = 0
    queue = "workq"     # hosts tied to a queue (optional)
    [node.resources]
    ncpus = 24
    mem = "64gb"
    color = "red"
    bigmem = true
    switch = ["s1", "s2"]

    [[busy]]            # a holding; a start after `now` is a calendar event
    nodes = ["n1"]
    start = 0
    end = 3600

    [[job]]
    id = "j1"
    select = "2:ncpus=12"
    place = "scatter:excl"
    walltime = 600
    queue = "workq"

Jobs are placed in file order in one cycle; each job that runs holds its
hosts from ``now`` for its walltime.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from legionrm.errors import ConfigError, SelectSyntaxError
from legionrm.scheduler.placement.base import (
    PlaceConfig,
    PlacementResult,
    requested_resources,
)
from legionrm.scheduler.placement.chunkfit import BadValue, compile_request
from legionrm.scheduler.placement.engine import Placer
from legionrm.scheduler.placement.nodes import (
    DEFAULT_RESOURCES,
    DEFAULT_SORT_KEY,
    NodeSpec,
    NodeTable,
    SortKey,
)
from legionrm.scheduler.placement.nodestate import JOB_INFINITY
from legionrm.scheduler.placement.select import (
    MAX_VALUE,
    Place,
    SelectRequest,
    parse_place,
    parse_select,
    size_kb,
    value_position,
)
from legionrm.tomlio import (
    MAX_INT,
    MAX_TEXT,
    Budget,
    bounded,
    check_keys,
    count_of,
    expand_names,
    expect,
    load_toml,
    require,
    table_count,
    tables,
)

MAX_NODES = 100_000
"""The most hosts a scenario may describe once ``count`` is expanded."""
MAX_JOBS = 10_000
"""The most ``[[job]]`` (and ``[[busy]]``) tables in a scenario."""
MAX_TIME = 1e12
"""The largest time in seconds (``now``, ``start``, ``end``, ``walltime``): about 30,000 years."""
MAX_PRIORITY = 2**31 - 1
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
"""A resource name, as the select syntax writes one."""
CONSUMABLE = {"ncpus": int, "ngpus": int, "mpiprocs": int, "ompthreads": int, "mem": "size", "vmem": "size"}
"""Resources a host counts out: whole numbers, or sizes (a number of kb or ``"64gb"``), never negative."""


@dataclass(frozen=True)
class JobSpec:
    id: str
    request: SelectRequest
    walltime: float | None
    queue: str | None
    select_text: str = ""  # as written, for carets under values of the wrong kind
    where: str = ""  # "job[3]"


@dataclass
class Scenario:
    config: PlaceConfig
    now: float
    nodes: list[NodeSpec]
    busy: list[tuple[list[str], float, float]]
    jobs: list[JobSpec]
    file: str = ""


class ScenarioSelectError(SelectSyntaxError):
    """A select or place string of a scenario that is wrong: the message starts
    with the file and the key (``s.toml: job[0].select: line 1, column 9: ...``)
    and ends with the caret."""

    def __init__(self, prefix: str, exc: SelectSyntaxError, *, line: int | None = None,
                 column: int | None = None, text: str | None = None) -> None:
        self.prefix = prefix
        super().__init__(
            exc.message, text=exc.text if text is None else text, line=exc.line if line is None else line,
            column=exc.column if column is None else column, expected=exc.expected,
        )

    def render(self) -> str:
        return f"{self.prefix}: {super().render()}"


def _strings(value: Any, *, file: str, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) and len(v) <= MAX_TEXT for v in value) and len(value) <= 1000:
        return tuple(value)
    raise ConfigError("must be a string or an array of (at most 1000) strings", file=file, table=where, key=key)


def _names(value: Any, *, file: str, where: str, key: str) -> tuple[str, ...]:
    """Resource names: each as the select syntax writes one (``ncpus``, ``gpu_model``)."""
    names = _strings(value, file=file, where=where, key=key)
    for n in names:
        if not NAME.match(n):
            raise ConfigError(f"{n!r} is not a resource name (letters, digits, _ . -; a letter or _ first)",
                              file=file, table=where, key=key)
    return names


def _value(k: str, v: Any, *, file: str, where: str) -> object:
    """One host resource: finite numbers within 64 bits, short strings; consumables numbers or sizes >= 0."""
    bad = ""
    if isinstance(v, float) and not math.isfinite(v):
        bad = f"must be a finite number, not {v!r}"
    elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
        bad = "number out of range"
    elif isinstance(v, str) and len(v) > MAX_TEXT:
        bad = f"longer than {MAX_TEXT} characters"
    elif k in CONSUMABLE:
        want = CONSUMABLE[k]
        number = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if want == "size" and isinstance(v, str):
            kb = size_kb(v)
            number = float(kb) if kb is not None and math.isfinite(kb) else None
        ok = number is not None and 0 <= number <= MAX_VALUE and (want != int or isinstance(v, int))
        if not ok:
            what = "a whole number >= 0" if want == int else "a size >= 0 (kb, or like '64gb')"
            bad = f"must be {what}, not {v!r}"
    if bad:
        raise ConfigError(bad, file=file, table=f"{where}.resources", key=k)
    return v


def _resources(table: dict[str, Any], *, file: str, where: str) -> dict[str, object]:
    res = table.get("resources", {})
    if not isinstance(res, dict):
        raise ConfigError("must be a table", file=file, table=where, key="resources")
    out: dict[str, object] = {}
    for k, v in res.items():
        if not NAME.match(k):
            raise ConfigError("is not a resource name (letters, digits, _ . -; a letter or _ first)",
                              file=file, table=f"{where}.resources", key=k)
        if isinstance(v, (bool, int, float, str)):
            out[k] = _value(k, v, file=file, where=where)
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[k] = tuple(v)
        else:
            raise ConfigError(
                "must be a number, a string (sizes like '64gb'), a boolean or an array of strings",
                file=file, table=f"{where}.resources", key=k,
            )
    return out


def _parse_text(parser: Any, text: str, *, file: str, where: str, key: str) -> Any:
    try:
        return parser(text)
    except SelectSyntaxError as exc:
        raise ScenarioSelectError(f"{file}: {where}.{key}", exc) from None


def load_scenario(path: str) -> Scenario:
    """Read and validate a scenario file; any problem is a ConfigError or a
    SelectSyntaxError naming the file, the table and the key."""
    file = str(path)
    doc = load_toml(file)
    check_keys(doc, ("scheduler", "node", "busy", "job"), file=file, where="")
    sched = doc.get("scheduler", {})
    if not isinstance(sched, dict):
        raise ConfigError("must be a table", file=file, table="scheduler")
    check_keys(sched, ("resources", "node_sort_key", "node_group_key", "do_not_span_psets", "now"), file=file,
               where="scheduler")
    resources = _names(sched.get("resources", list(DEFAULT_RESOURCES)), file=file, where="scheduler", key="resources")
    sort_key = _strings(sched.get("node_sort_key", list(DEFAULT_SORT_KEY)), file=file, where="scheduler",
                        key="node_sort_key")
    for text in sort_key:
        try:
            SortKey.parse(text)
        except ValueError as exc:
            raise ConfigError(str(exc), file=file, table="scheduler", key="node_sort_key") from None
    group_key = expect(sched, "node_group_key", str, None, file=file, where="scheduler")
    if group_key is not None:
        _names(group_key, file=file, where="scheduler", key="node_group_key")
    span = expect(sched, "do_not_span_psets", bool, False, file=file, where="scheduler")
    now = bounded(sched, "now", float, 0.0, file=file, where="scheduler", lo=-MAX_TIME, hi=MAX_TIME)
    try:
        config = PlaceConfig(resources=resources, node_sort_key=sort_key, node_group_key=group_key,
                             do_not_span_psets=span)
    except ValueError as exc:
        raise ConfigError(str(exc), file=file, table="scheduler") from None
    nodes: list[NodeSpec] = []
    groups: dict[str, list[str]] = {}  # a [[node]] name with count -> its expanded hosts
    budget = Budget("hosts", file=file, limit=MAX_NODES)
    for k, t in enumerate(tables(doc, "node", file)):
        where = f"node[{k}]"
        check_keys(t, ("name", "count", "priority", "queue", "resources"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        count = count_of(t, file=file, where=where, limit=MAX_NODES)
        budget.take(count or 1, where=where)
        prio = bounded(t, "priority", int, 0, file=file, where=where, lo=-MAX_PRIORITY, hi=MAX_PRIORITY)
        queue = expect(t, "queue", str, None, file=file, where=where)
        res = _resources(t, file=file, where=where)
        expanded = expand_names(name, count)
        groups.setdefault(name, []).extend(expanded)
        nodes.extend(NodeSpec(n, prio, queue, res) for n in expanded)
    known = {n.name for n in nodes}
    if len(known) != len(nodes):
        seen: set[str] = set()
        dup = next(n.name for n in nodes if n.name in seen or seen.add(n.name))  # type: ignore[func-returns-value]
        raise ConfigError(f"host {dup!r} is defined twice", file=file, table="node")
    busy: list[tuple[list[str], float, float]] = []
    for k, t in enumerate(table_count(tables(doc, "busy", file), "busy", file=file, limit=MAX_JOBS)):
        where = f"busy[{k}]"
        check_keys(t, ("nodes", "start", "end"), file=file, where=where)
        given = _strings(require(t, "nodes", (str, list), file=file, where=where), file=file, where=where, key="nodes")
        names: list[str] = []
        for n in given:
            if n in known:
                names.append(n)
            elif n in groups:  # the name of a counted [[node]] table: all its hosts
                names.extend(groups[n])
            else:
                raise ConfigError(f"no host named {n!r}", file=file, table=where, key="nodes")
        require(t, "start", float, file=file, where=where)
        require(t, "end", float, file=file, where=where)
        start = bounded(t, "start", float, None, file=file, where=where, lo=-MAX_TIME, hi=MAX_TIME)
        end = bounded(t, "end", float, None, file=file, where=where, lo=-MAX_TIME, hi=MAX_TIME)
        if end <= start:
            raise ConfigError("end must be after start", file=file, table=where, key="end")
        busy.append((names, start, end))
    jobs: list[JobSpec] = []
    ids: set[str] = set()
    for k, t in enumerate(table_count(tables(doc, "job", file), "job", file=file, limit=MAX_JOBS)):
        where = f"job[{k}]"
        check_keys(t, ("id", "select", "place", "walltime", "queue"), file=file, where=where)
        jid = require(t, "id", str, file=file, where=where)
        if jid in ids:
            raise ConfigError(f"job id {jid!r} used twice", file=file, table=where, key="id")
        ids.add(jid)
        sel = require(t, "select", str, file=file, where=where)
        chunks = _parse_text(parse_select, sel, file=file, where=where, key="select")
        ptext = expect(t, "place", str, None, file=file, where=where)
        place = _parse_text(parse_place, ptext, file=file, where=where, key="place") if ptext else Place()
        wall = bounded(t, "walltime", float, None, file=file, where=where, hi=MAX_TIME)
        if wall is not None and wall <= 0:
            raise ConfigError("must be positive", file=file, table=where, key="walltime")
        queue = expect(t, "queue", str, None, file=file, where=where)
        jobs.append(JobSpec(jid, SelectRequest(chunks=chunks, place=place), wall, queue, sel, where))
    return Scenario(config, now, nodes, busy, jobs, file)


def run_scenario(sc: Scenario) -> tuple[Placer, dict[str, PlacementResult]]:
    """Build the table and state, apply [[busy]], place every job in order."""
    try:
        table = NodeTable(sc.nodes, resources=sc.config.resources, node_sort_key=sc.config.node_sort_key)
    except ValueError as exc:
        raise ConfigError(str(exc), file=sc.file, table="node") from None
    for job in sc.jobs:  # values of the wrong kind for the hosts (ncpus=abc): a caret, before placing
        try:
            compile_request(table, job.request)
        except BadValue as exc:
            line, col = value_position(job.select_text, exc.chunk, exc.resource)
            raise ScenarioSelectError(
                f"{sc.file}: {job.where}.select", exc, text=job.select_text, line=line, column=col
            ) from None
    # one cycle: bucket signatures cover the resources these jobs ask for (L13)
    config = sc.config.model_copy(update={"requested": requested_resources(j.request for j in sc.jobs)})
    placer = Placer(table, config)
    placer.state.advance(sc.now)
    for names, start, end in sc.busy:
        placer.state.occupy([table.index[n] for n in names], start, end)
    out: dict[str, PlacementResult] = {}
    for job in sc.jobs:
        res = placer.place(job.request, sc.now, job.walltime, queue=job.queue)
        if res.status == "run":
            placer.occupy(res, sc.now, sc.now + (job.walltime if job.walltime is not None else JOB_INFINITY))
        out[job.id] = res
    return placer, out
