"""Placement sets: hosts partitioned by the value of one resource.

``node_group_key`` (or a request's ``place=group=RES``, which overrides it)
splits a job's universe of hosts by that resource's value.  A host lacking the
resource goes into the set ``RES=""``; a host with a string array sits in one
set per value.  Partitions are static (values do not change) and cached;
their order is not: sets are tried smallest first by (total ncpus, total
mem, free ncpus, free mem), so a partly used set comes before an identical
unused one, ties keep first-appearance order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from legionrm.scheduler.placement.nodes import NodeTable
from legionrm.scheduler.placement.nodestate import SetSums, StateView
from legionrm.scheduler.placement.select import format_value


@dataclass(frozen=True)
class PSet:
    """One placement set: its name (``switch=s1``) and host indices, ascending."""

    name: str
    hosts: np.ndarray


class PlacementSets:
    """Cached partitions of host universes by a resource."""

    def __init__(self, table: NodeTable, sums: SetSums) -> None:
        self.table = table
        self.sums = sums
        self._cache: dict[tuple[str, int], tuple[np.ndarray, list[PSet]]] = {}

    def partition(self, key: str, universe: np.ndarray) -> list[PSet]:
        """The sets of ``universe`` by ``key`` in first-appearance (node) order."""
        ck = (key, id(universe))  # universes are persistent arrays: key by identity
        hit = self._cache.get(ck)
        if hit is not None and hit[0] is universe:
            return hit[1]
        col = self.table.columns.get(key)
        groups: dict[str, list[int]] = {}
        for i in universe.tolist():
            v = col.value(i) if col is not None else None
            if v is None:
                vals: tuple[str, ...] = ("",)
            elif isinstance(v, tuple):
                vals = v
            else:
                vals = (format_value(v),)
            for s in vals:
                groups.setdefault(s, []).append(i)
        out = [
            PSet(f'{key}=""' if val == "" else f"{key}={val}", np.asarray(hosts, dtype=np.int64))
            for val, hosts in groups.items()
        ]
        self._cache[ck] = (universe, out)
        return out

    def ordered(self, key: str, universe: np.ndarray, view: StateView) -> list[PSet]:
        """The sets smallest first: (total ncpus, total mem, free ncpus, free mem)."""
        sets = self.partition(key, universe)
        s = self.sums

        def size(p: PSet) -> tuple[float, float, float, float]:
            _, avail = s.free_and_avail(p.hosts, view)
            return (s.total(p.hosts, "ncpus"), s.total(p.hosts, "mem"), avail.get("ncpus", 0.0), avail.get("mem", 0.0))

        return sorted(sets, key=size)
