"""What both placement paths share: config, outcome, result, path choice, and
:class:`PathPlacer`, the flow each path subclasses with its own search.

The flow for one request (:meth:`PathPlacer.place`), as OpenPBS runs it:

1. the job's universe: the hosts of its queue if that queue owns hosts, else
   the hosts tied to no queue;
2. the aggregate prefilter on the universe (free-node count, scatter node
   count, job-wide sums, each chunk against the set) -- failing it against
   free amounts is "not now", failing it against totals too is "never";
3. placement sets (``place=group=RES`` or ``node_group_key``), smallest
   first, each searched (the per-node path runs the prefilter on each set
   first; the bucket path, as upstream, only the set's chunk-to-bucket map);
   the first that runs wins.
   If some set could take the job later, the job waits (the original
   upstream rule, L1); if none ever could, ``do_not_span_psets`` makes it
   "never", otherwise the search runs on all hosts;
4. the path's own search (buckets or per node).

A request that cannot run now gets an earliest start: the first time, among
the ends of holdings in the calendar, at which the same flow succeeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from legionrm import codes
from legionrm.models import Refusal
from legionrm.scheduler.placement.chunkfit import (
    CANT_SPAN_PSET,
    DEFAULT_CHUNK,
    INVALID_STATE,
    NODE_NOT_EXCL,
    RESERVATION_CONFLICT,
    CompiledChunk,
    compile_request,
    host_reason,
    prefilter,
)
from legionrm.scheduler.placement.nodes import (
    DEFAULT_RESOURCES,
    DEFAULT_SORT_KEY,
    NodeTable,
)
from legionrm.scheduler.placement.nodestate import (
    JOB_INFINITY,
    HostState,
    StateView,
)
from legionrm.scheduler.placement.psets import PlacementSets
from legionrm.scheduler.placement.select import SelectRequest

Status = Literal["run", "not_now", "never"]
Path = Literal["buckets", "nodes"]


class PlaceConfig(BaseModel):
    """Scheduler settings that shape placement (PBS sched_config / sched attributes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resources: tuple[str, ...] = DEFAULT_RESOURCES
    node_sort_key: tuple[str, ...] = DEFAULT_SORT_KEY
    node_group_key: str | None = None
    do_not_span_psets: bool = False
    provision_policy: Literal["aggressive_provision", "avoid_provision"] = "aggressive_provision"
    requested: tuple[str, ...] | None = None
    """The resources this cycle's requests name (see :func:`requested_resources`).
    Upstream builds bucket signatures from these only (the resources line
    narrowed to what is asked for, plus every boolean), so hosts that differ
    only in a resource no request names share a bucket.  None: the whole line."""


@dataclass
class SearchOutcome:
    """What a search found: status, reason text, and per chunk (host, copies) pairs."""

    status: Status
    text: str
    chunks: list[list[tuple[int, int]]] = field(default_factory=list)
    pset: str | None = None
    arrays: list[tuple[np.ndarray, np.ndarray]] | None = None
    """The same answer as numpy arrays per chunk: (hosts ascending, copies),
    given by a path that works in arrays instead of ``chunks``."""
    chunk: int | None = None  # the select chunk a refusal is about, when it is about one


@dataclass
class PlacementResult:
    """The answer for one request.

    ``comment`` is PBS's job comment (``Not Running: ...``, ``Can Never Run:
    ...``); ``failed_chunk`` names the select chunk a refusal is about (when
    it is about one chunk); ``exec_vnode`` lists chunks in select order; ``nodes`` gives the
    distinct hosts of each select chunk; ``earliest_start`` is ``now`` for a
    request that runs, the first feasible time for one that waits (None if
    none is found), None for one that never runs.
    """

    status: Status
    path: Path
    earliest_start: float | None
    reason: str = ""
    path_reason: str = ""
    placement_set: str | None = None
    _alloc: list[list[tuple[int, int]]] | None = field(default=None, repr=False)
    _arrays: list[tuple[np.ndarray, np.ndarray]] | None = field(default=None, repr=False)
    request: SelectRequest | None = field(default=None, repr=False)  # what was placed, compiled as
    compiled: tuple[CompiledChunk, ...] = field(default=(), repr=False)
    queue: str | None = field(default=None, repr=False)  # in this queue, for this long
    walltime: float = field(default=0.0, repr=False)
    _placer: "PathPlacer | None" = field(default=None, repr=False)
    _now: float = field(default=0.0, repr=False)
    _chunk: int | None = field(default=None, repr=False)  # the select chunk a refusal is about

    # The texts are made when asked for: the live planner reads ``chunk_arrays``
    # only, and a 1,000-chunk exec_vnode costs more than placing it.  So is the
    # allocation as Python pairs when the path answered in arrays (buckets).

    @cached_property
    def allocation(self) -> list[list[tuple[int, int]]]:
        """Per select chunk, (node index, copies) in ascending node index."""
        if self._arrays is None:
            return self._alloc or []
        return [list(zip(h.tolist(), c.tolist())) for h, c in self._arrays]

    @property
    def in_arrays(self) -> bool:
        """The path answered in arrays (the bucket path): each chunk's hosts
        distinct and ascending, :meth:`chunk_arrays` as they are."""
        return self._arrays is not None

    def chunk_arrays(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """:attr:`allocation` as (node indices, copies) arrays per select chunk."""
        if self._arrays is not None:
            return self._arrays
        return [(np.fromiter((h for h, _ in a), np.int64, len(a)), np.fromiter((c for _, c in a), np.int64, len(a)))
                for a in self._alloc or ()]

    @cached_property
    def exec_vnode(self) -> str:
        return "+".join(self._groups()[0])

    @cached_property
    def nodes(self) -> list[list[str]]:
        return self._groups()[1]

    @cached_property
    def comment(self) -> str:
        chunk = None
        if self._chunk is not None and self.request is not None:
            chunk = (self._chunk, self.request.chunks[self._chunk].text())
        return comment_for(self.status, self.reason, self.exec_vnode, self._now, chunk)

    @cached_property
    def failed_chunk(self) -> str | None:
        if self._chunk is None or self.status == "run" or self.request is None:
            return None
        return self.request.chunks[self._chunk].text()

    def _groups(self) -> tuple[list[str], list[list[str]]]:
        groups: list[str] = []
        nodes: list[list[str]] = []
        if self.status == "run" and self._placer is not None:
            names = self._placer.table.names
            for ch, alloc in zip(self.compiled, self.allocation):
                piece = f"{ch.exec_suffix})"
                seen: list[str] = []
                for h, copies in alloc:
                    g = "(" + names[h] + piece
                    groups.extend([g] * copies)
                    seen.append(names[h])
                nodes.append(seen)
        return groups, nodes

    @property
    def runs(self) -> bool:
        return self.status == "run"

    def why_not(self, host: str) -> Refusal | None:
        """Why ``host`` is not part of this placement (None if it is).  Answered
        against the host state as it is when called (call right after placing)."""
        if self._placer is None or self.request is None:
            return None
        return self._placer.explain(self, host)

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "comment": self.comment,
            "exec_vnode": self.exec_vnode,
            "nodes": self.nodes,
            "path": self.path,
            "earliest_start": self.earliest_start,
        }


def requested_resources(requests: Iterable[SelectRequest]) -> tuple[str, ...]:
    """Every resource the requests' chunks name, plus the server's default
    chunk (``ncpus``), in first-seen order: what :attr:`PlaceConfig.requested`
    holds for a cycle placing these requests."""
    seen: dict[str, None] = {}
    for request in requests:
        for chunk in request.chunks:
            for name in (*chunk.resources, *DEFAULT_CHUNK):
                seen.setdefault(name, None)
    return tuple(seen)


def comment_for(
    status: Status, text: str, exec_vnode: str = "", now: float = 0.0, chunk: tuple[int, str] | None = None
) -> str:
    """The job comment: ``Job run at T on EXEC_VNODE``, ``Not Running: TEXT``,
    or ``Can Never Run: TEXT`` followed, when the refusal is about one select
    chunk (``chunk`` = its 0-based index and text), by ``(chunk N: TEXT)`` so
    the person knows which chunk to change."""
    if status == "run":
        return f"Job run at {int(now) if float(now).is_integer() else now} on {exec_vnode}"
    if status == "not_now":
        return "Not Running: " + text
    where = f" (chunk {chunk[0] + 1}: {chunk[1]})" if chunk is not None else ""
    return f"Can Never Run: {text}{where}"


def choose_path(
    request: SelectRequest,
    config: PlaceConfig,
    table: NodeTable | None = None,
    *,
    qrun: bool = False,
    in_reservation: bool = False,
    has_exec_vnode: bool = False,
) -> tuple[Path, str]:
    """("buckets" | "nodes", why): the bucket path only when every upstream condition holds."""
    if any(len(k.split()) > 2 and k.split()[2].lower() in ("unused", "assigned") for k in config.node_sort_key):
        return "nodes", "node_sort_key sorts by unused or assigned resources"
    if config.provision_policy == "avoid_provision":
        return "nodes", "provision_policy is avoid_provision"
    if qrun:
        return "nodes", "the job is the qrun job"
    if in_reservation:
        return "nodes", "the job is in a reservation (its own universe of hosts)"
    if not request.place.excl:
        return "nodes", "the request is not excl (hosts can be shared)"
    if request.place.arrangement == "pack":
        return "nodes", "pack placement"
    if table is not None and table.multi_vnode:
        return "nodes", "the complex has a multi-vnode host"
    for r in ("host", "vnode"):
        listed = table.checked(r) if table is not None else (not config.resources or r in config.resources)
        if listed and request.requests_resource(r):
            return "nodes", f"the select names {r}"
    if has_exec_vnode:
        return "nodes", "the job already has an exec_vnode"
    return "buckets", f"excl with {request.place.arrangement} placement"


class PathPlacer:
    """The flow shared by both paths; subclasses implement :meth:`_search`."""

    path: Path = "nodes"
    pset_prefilter: bool = True
    """Run the aggregate prefilter on each placement set before searching it
    (the normal path does; upstream's bucket path goes straight to the
    chunk-to-bucket map of each set, so a set too small *now* by the sums may
    still be "never" by its buckets, which decides whether the job spans)."""

    def __init__(self, table: NodeTable, config: PlaceConfig | None = None, state: HostState | None = None) -> None:
        self.table = table
        self.config = config or PlaceConfig(resources=table.resources)
        self.state = state if state is not None else HostState(table)
        self.sums = self.state.set_sums
        self.psets = PlacementSets(table, self.sums)
        self._compiled: dict[tuple, tuple[CompiledChunk, ...]] = {}

    # subclasses
    def _search(
        self, request: SelectRequest, chunks: tuple[CompiledChunk, ...], hosts: np.ndarray, view: StateView,
        walltime: float, pset: bool = False,
    ) -> SearchOutcome:  # pragma: no cover - abstract
        """Place on ``hosts`` (``pset``: they are one placement set, not a universe)."""
        raise NotImplementedError

    def compile(self, request: SelectRequest) -> tuple[CompiledChunk, ...]:
        # keyed by content: the models hold dicts (not hashable), and equal
        # requests from different jobs should share one compilation
        chunks = request.chunks
        if len(chunks) == 1:  # (one chunk: its parts in the key itself; an int second, never a tuple as below)
            c = chunks[0]
            key: tuple = (request.place.arrangement, c.count, tuple(c.resources.items()))
        else:
            key = (request.place.arrangement, *[(c.count, tuple(c.resources.items())) for c in chunks])
        hit = self._compiled.get(key)
        if hit is None:
            if len(self._compiled) > 4096:
                self._compiled.clear()
            hit = compile_request(self.table, request)
            self._compiled[key] = hit
        return hit

    def place(
        self,
        request: SelectRequest,
        now: float | None = None,
        walltime: float | None = None,
        *,
        queue: str | None = None,
        earliest: bool = True,
        path_reason: str = "",
        hosts: np.ndarray | None = None,
    ) -> PlacementResult:
        """Place ``request`` at ``now`` (default: the host state's clock) for
        ``walltime`` seconds (None: 5 years).  Pure: nothing is occupied; call
        :meth:`occupy` with the result to start the work.  ``hosts`` (node
        indices, ascending; a persistent array: sums are cached by its
        identity) narrows the queue's universe to the hosts a caller found
        acceptable (the Legion planner's query and class filters)."""
        wall = JOB_INFINITY if walltime is None else float(walltime)
        view = self.state.live() if now is None or float(now) == self.state.now else self.state.at(float(now))
        chunks = self.compile(request)
        out = self.decide(request, chunks, view, wall, queue, hosts)
        start: float | None = None
        if out.status == "run":
            start = view.now
        elif out.status == "not_now" and earliest:
            start = self._earliest(request, chunks, view.now, wall, queue, hosts)
        return self._result(request, chunks, out, view.now, start, queue, wall, path_reason)

    def decide(
        self, request: SelectRequest, chunks: tuple[CompiledChunk, ...], view: StateView, wall: float,
        queue: str | None, hosts: np.ndarray | None = None,
    ) -> SearchOutcome:
        universe = self.table.universe(queue)
        if hosts is not None:
            universe = hosts if not self.table.queues else np.intersect1d(universe, hosts)
        pre = prefilter(self.table, request, chunks, universe, view, self.sums)
        if pre is not None:
            return SearchOutcome(pre[0], pre[1], chunk=pre[2])  # type: ignore[arg-type]
        key = request.place.group or self.config.node_group_key
        if key:
            waiting: SearchOutcome | None = None
            for ps in self.psets.ordered(key, universe, view):
                pf = (
                    prefilter(self.table, request, chunks, ps.hosts, view, self.sums)
                    if self.pset_prefilter
                    else None
                )
                out = (
                    SearchOutcome(pf[0], pf[1], chunk=pf[2])  # type: ignore[arg-type]
                    if pf
                    else self._search(request, chunks, ps.hosts, view, wall, pset=True)
                )
                if out.status == "run":
                    out.pset = ps.name
                    return out
                if out.status == "not_now" and waiting is None:
                    waiting = out
            if waiting is not None:
                return waiting  # L1: the original rule -- wait for a set, do not span
            if self.config.do_not_span_psets:
                return SearchOutcome("never", CANT_SPAN_PSET)
        return self._search(request, chunks, universe, view, wall)

    def _earliest(
        self, request: SelectRequest, chunks: tuple[CompiledChunk, ...], now: float, wall: float, queue: str | None,
        hosts: np.ndarray | None = None,
    ) -> float | None:
        for t in self.state.event_times(now).tolist():
            if self.decide(request, chunks, self.state.at(t), wall, queue, hosts).status == "run":
                return float(t)
        return None

    def _result(
        self, request: SelectRequest, chunks: tuple[CompiledChunk, ...], out: SearchOutcome, now: float, start: float | None, queue: str | None,
        wall: float, path_reason: str,
    ) -> PlacementResult:
        return PlacementResult(
            status=out.status,
            path=self.path,
            earliest_start=start,
            reason=out.text,
            path_reason=path_reason,
            placement_set=out.pset,
            _alloc=out.chunks or None,  # (no empty list kept per refused request)
            _arrays=out.arrays,
            _now=now,
            _chunk=out.chunk,
            _placer=self,
            request=request,
            compiled=chunks,
            queue=queue,
            walltime=wall,
        )

    # -- starting and ending work ------------------------------------------

    def occupy(self, result: PlacementResult, start: float, end: float) -> list[int]:
        """Hold the result's hosts over ``[start, end)`` (exclusively for excl
        requests, by the requested amounts otherwise); returns a release token."""
        if result.status != "run" or result.request is None:
            return []
        chunks = result.compiled or self.compile(result.request)
        excl = result.request.place.excl
        if len(chunks) == 1 and result.in_arrays:  # the bucket path's answer: one chunk's arrays
            at, times = result.chunk_arrays()[0]  # (ascending, distinct hosts: as the pairs below would give)
            if len(at) == 1:  # one host (a single-host job): numbers, not one-element arrays
                one: dict[str, float] = {}
                t = float(times[0])
                for r, a in chunks[0].amounts:
                    one[r] = one[r] + a * t if r in one else a * t
                return self.state.occupy(at, start, end, exclusive=excl, amounts=one)
            if len(at):
                per: dict[str, np.ndarray] = {}
                for r, a in chunks[0].amounts:  # (each copy's amount times the copies, as the loop below sums)
                    per[r] = per[r] + a * times if r in per else a * times.astype(float)
                return self.state.occupy(at, start, end, exclusive=excl, amounts=per)
        per_host: dict[int, dict[str, float]] = {}
        for ch, alloc in zip(chunks, result.allocation):
            for h, copies in alloc:
                acc = per_host.setdefault(h, {})
                for r, a in ch.amounts:
                    acc[r] = acc.get(r, 0.0) + a * copies
        hosts = np.fromiter(per_host, np.int64, len(per_host))
        res = {r for d in per_host.values() for r in d}
        amounts = {r: np.asarray([per_host[h].get(r, 0.0) for h in per_host], float) for r in res}
        return self.state.occupy(hosts, start, end, exclusive=excl, amounts=amounts)

    def release(self, token: list[int]) -> None:
        """End work started with :meth:`occupy` (idempotent)."""
        self.state.release(token)

    # -- explanations -------------------------------------------------------

    def explain(self, result: PlacementResult, host: str) -> Refusal | None:
        """Why ``host`` is not in ``result``: the first filter that refuses it."""
        i = self.table.index.get(host)
        if i is None:
            return Refusal(code=codes.PLACEMENT_UNKNOWN, reason=f"Specified vnode does not exist: {host}", by="table")
        if any(host in chunk for chunk in result.nodes):
            return None
        req = result.request
        assert req is not None
        if i not in set(self.table.universe(result.queue).tolist()):
            return Refusal(code=codes.PLACEMENT_QUEUE, reason="host belongs to another queue", by="queue")
        view = self.state.live()
        if req.place.excl and view.njobs[i] > 0:
            return Refusal(code=codes.PLACEMENT_BUSY, reason=NODE_NOT_EXCL, by="state")
        if not req.place.excl and view.excl[i]:
            return Refusal(code=codes.PLACEMENT_BUSY, reason=INVALID_STATE.format(state=view.state_name(i)), by="state")
        if view.next_event[i] < view.now + result.walltime:
            return Refusal(code=codes.PLACEMENT_CALENDAR, reason=RESERVATION_CONFLICT, by="calendar")
        avail = None if self.path == "buckets" else {r: float(view.avail(r)[i]) for r in self.table.consumables()}
        reasons = [host_reason(self.table, ch, i, avail) for ch in self.compile(req)]
        if all(r is not None for r in reasons):
            res, text = reasons[0]  # type: ignore[misc]
            return Refusal(code=codes.RESOURCE_KIND.of(res), reason=text, by="resources")
        if result.status == "run":
            return Refusal(code=codes.PLACEMENT_NOT_NEEDED, reason="the request was placed on other hosts", by="allocation")
        return Refusal(code=codes.PLACEMENT_NOT_ENOUGH, reason=result.reason, by="allocation")


def infinite(x: float | None) -> float:
    return math.inf if x is None else x
