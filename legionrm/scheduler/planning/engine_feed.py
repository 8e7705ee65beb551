"""The placement engine's feed from the live system: Collection snapshots in.

``legionrm place`` feeds the engine (:mod:`legionrm.scheduler.placement`) a
scenario file; this module feeds it a Collection snapshot, so the live
system and the command line get one engine's answers: the hosts per
instance, or "not now" (with the earliest start the calendar allows) or
"never", with PBS's texts.

* :class:`EngineFeed` keeps one :class:`NodeTable` per host set (hosts and
  their totals: ``ncpus``, ``mem``, ``ngpus``), built once and rebuilt only
  when hosts join, leave or change size; hosts in name order, the order the
  planner's ties break in.
* Per snapshot it builds the :class:`HostState` from the snapshot's columns:
  what each host holds now (totals minus its reported free capacity, held
  until further notice) and its calendar (the next reservation, from
  ``next_event``).  The snapshot knows no end for running work, so "not
  now" has an earliest start only when some holding ends.
* :meth:`EngineFeed.place` answers one :class:`ObjectRequest` over the hosts
  the caller found acceptable (the planner's query, access and class
  filters), choosing the bucket path where it applies (exclusive scatter /
  vscatter / free) and the per-node path otherwise.

Pure; no Ray.  Imports only the placement package's names (tests/arch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.models import ObjectRequest
from legionrm.scheduler.planning.pipeline import HostTable
from legionrm.scheduler.placement import (
    HostState,
    NodeSpec,
    NodeTable,
    PlaceConfig,
    Placer,
    SelectRequest,
)
from legionrm.scheduler.planning.snaptables import base_table

RESOURCES: tuple[str, ...] = ("ncpus", "mem", "ngpus", "host", "vnode")
"""The resources line the feed's node tables use (what an ObjectRequest asks for)."""
KB_PER_GB = 1048576
SCARCE_PRIORITY = -1
"""The node priority of a host with GPUs: the planner's scarce-hosts rule in
the engine's terms (``node_sort_key: sort_priority HIGH`` puts them last, so
work that needs no GPU takes them only when nothing else fits)."""


@dataclass
class EngineAnswer:
    """The engine's answer for one object request over one snapshot."""

    status: str  # "run" | "not_now" | "never"
    hosts: list[str]  # one host per instance (run only), in the engine's order
    comment: str  # PBS's job comment ("Not Running: ...", "Can Never Run: ...")
    reason: str
    earliest_start: float | None
    path: str
    path_reason: str = ""
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """The snapshot row of each instance's host (run only), in ``hosts`` order."""

    @property
    def runs(self) -> bool:
        return self.status == "run"


@dataclass
class _Cycle:
    """The engine over one snapshot: its placer, and host-set arrays by key."""

    snap: CollectionSnapshot
    placer: Placer
    node_of_row: np.ndarray  # snapshot row -> node index (-1: not a host of the table)
    row_of_node: np.ndarray  # node index -> snapshot row
    universes: dict[bytes, np.ndarray] = field(default_factory=dict)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else float(x)


class EngineFeed:
    """Adapts Collection snapshots to the placement engine (see the module)."""

    def __init__(self) -> None:
        self._key: bytes | None = None
        self._table: NodeTable | None = None
        self._node: np.ndarray = np.zeros(0, np.int64)  # base table position -> node index
        self._seen: tuple[object, np.ndarray, np.ndarray] | None = None  # membership, rows, totals last checked
        self._cycle: _Cycle | None = None
        self.tables_built = 0

    # -- the node table, per host set ---------------------------------------

    @staticmethod
    def host_set_key(base: HostTable) -> bytes:
        """What the node table depends on: the hosts' names and totals."""
        names = "\0".join(base.names.tolist()).encode()
        return names + np.stack([base.cpus, base.memory_gb, base.gpus]).astype(np.float64).tobytes()

    def table(self, base: HostTable, membership: object = None) -> NodeTable:
        """The node table of ``base``'s hosts (cached until the host set changes).
        ``membership`` (the snapshot's, see ``TableSnapshot.membership``)
        lets an unchanged host set be recognised without comparing names."""
        totals = np.stack([base.cpus, base.memory_gb, base.gpus]).astype(np.float64)
        seen = self._seen
        if (self._table is not None and membership is not None and seen is not None and seen[0] is membership
                and np.array_equal(seen[1], base.row) and np.array_equal(seen[2], totals)):
            return self._table
        key = self.host_set_key(base)
        self._seen = (membership, base.row, totals) if membership is not None else None
        if self._table is None or key != self._key:
            specs = [
                NodeSpec(str(n), priority=SCARCE_PRIORITY if g > 0 else 0,
                         resources={"ncpus": _num(c), "mem": f"{math.ceil(m * KB_PER_GB)}kb", "ngpus": int(g)})
                for n, c, m, g in zip(base.names.tolist(), base.cpus.tolist(), base.memory_gb.tolist(),
                                      base.gpus.tolist())
            ]
            self._table = NodeTable(specs, resources=RESOURCES)
            self._node = np.fromiter((self._table.index[n] for n in base.names.tolist()), np.int64, len(base))
            self._key = key
            self._cycle = None
            self.tables_built += 1
        return self._table

    # -- the host state, per snapshot ----------------------------------------

    def cycle(self, snap: CollectionSnapshot, base: HostTable | None = None) -> _Cycle:
        """The placer over ``snap`` (cached for the same snapshot object)."""
        c = self._cycle
        if c is not None and c.snap is snap:
            return c
        base = base if base is not None else base_table(snap)
        table = self.table(base, snap.table.membership)
        state = HostState(table, now=float(snap.now))
        node = self._node
        now = float(snap.now)
        # what hosts hold now: totals minus reported free, held until further notice
        used_c = np.maximum(base.cpus - base.free_cpus, 0.0)
        used_m = np.maximum(base.memory_gb - base.free_memory_gb, 0.0)
        used_g = np.maximum(base.gpus - base.free_gpus, 0.0)
        busy = (base.instances > 0) | (used_c > 1e-9) | (used_m > 1e-9) | (used_g > 1e-9)
        whole = busy & (base.free_cpus <= 1e-9)
        for sel, excl in ((busy & ~whole, False), (whole, True)):
            if sel.any():
                state.occupy(node[sel], now, math.inf, exclusive=excl, amounts={
                    "ncpus": used_c[sel], "mem": used_m[sel] * KB_PER_GB, "ngpus": used_g[sel]})
        # the calendar: the next reservation of each host
        later = np.isfinite(base.next_event) & (base.next_event > now)
        for i in np.flatnonzero(later).tolist():
            state.occupy(node[i:i + 1], float(base.next_event[i]), math.inf, exclusive=True)
        config = PlaceConfig(resources=RESOURCES, requested=("ncpus", "mem", "ngpus"))
        node_of_row = np.full(len(snap.table.names), -1, np.int64)
        node_of_row[base.row] = node
        row_of_node = np.empty(table.n, np.int64)
        row_of_node[node] = base.row
        self._cycle = _Cycle(snap, Placer(table, config, state), node_of_row, row_of_node)
        return self._cycle

    # -- answers --------------------------------------------------------------

    def place(
        self, obj: ObjectRequest, snap: CollectionSnapshot, rows: np.ndarray | None = None,
        base: HostTable | None = None,
    ) -> EngineAnswer:
        """The engine's answer for ``obj`` over the hosts at snapshot ``rows``
        (None: every available host), at the snapshot's time."""
        cyc = self.cycle(snap, base)
        hosts = None
        if rows is not None:
            idx = np.unique(cyc.node_of_row[rows])
            idx = idx[idx >= 0]
            key = idx.tobytes()
            hosts = cyc.universes.get(key)
            if hosts is None:  # one persistent array per host set (the engine caches sums by identity)
                idx.flags.writeable = False
                hosts = cyc.universes[key] = idx
        request = SelectRequest.from_object(obj)
        res = cyc.placer.place(request, float(snap.now), obj.walltime_s, hosts=hosts)
        if not res.runs:
            return EngineAnswer(res.status, [], res.comment, res.reason, res.earliest_start, res.path, res.path_reason)
        per_chunk = [np.repeat(h, c) for h, c in res.chunk_arrays()]  # (the answer in arrays: no Python pairs)
        nodes = np.concatenate(per_chunk) if per_chunk else np.zeros(0, np.int64)
        names = cyc.placer.table.names
        return EngineAnswer(res.status, [names[h] for h in nodes.tolist()], res.comment, res.reason,
                            res.earliest_start, res.path, res.path_reason, cyc.row_of_node[nodes])
