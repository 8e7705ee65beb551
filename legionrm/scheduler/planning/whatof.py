"""The planner's "what of": instances onto ranked hosts, and the columns a
schedule being built reads and writes (what it took, which row a host is,
which host group carries it).  Pure numpy over one Collection snapshot; no
Ray.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.models import ObjectRequest
from legionrm.scheduler.planning.pipeline import INF, HostTable
from legionrm.scheduler.planning.snaptables import host_groups


def assign(req: ObjectRequest, hosts: HostTable, count: int) -> list[int] | None:
    """Map ``count`` instances onto ranked ``hosts`` (row indices, one per
    instance) by the placement mode, or None when they do not fit.

    pack: all on the first host with room for all; scatter / vscatter and
    exclusive: one per host; free: fill hosts in rank order.
    """
    return assign_slots(req, hosts.slots(req), count)


def assign_slots(req: ObjectRequest, slots: np.ndarray, count: int) -> list[int] | None:
    """:func:`assign` given each ranked host's slots (``HostTable.slots``)."""
    if count == 0:
        return []
    if req.placement == "pack":
        ok = np.flatnonzero(slots >= count)
        return [int(ok[0])] * count if len(ok) else None
    if req.placement in ("scatter", "vscatter") or req.exclusive:
        ok = np.flatnonzero(slots >= 1)
        return ok[:count].tolist() if len(ok) >= count else None
    cum = np.cumsum(np.minimum(slots, count))
    if len(cum) == 0 or cum[-1] < count:
        return None
    last = int(np.searchsorted(cum, count))
    per = np.minimum(slots[: last + 1], count).copy()
    per[last] -= int(cum[last] - count)
    return np.repeat(np.arange(last + 1), per).tolist()

def first_fit(
    req: ObjectRequest, slots: np.ndarray, eligible: Callable[[int], np.ndarray], count: int
) -> tuple[np.ndarray, list[int] | None]:
    """:func:`assign_slots` over the eligible ones of ranked hosts, looking
    only as far down the ranking as it must: ``eligible(end)`` gives the
    eligible positions below ``end``; returns them and the picks (indices
    into them), or the picks None when even all hosts cannot hold ``count``.
    Every mode takes the best-ranked hosts that fit, so a prefix that fits
    gives what the whole would."""
    n = len(slots)
    end = min(n, max(1024, 4 * count))
    while True:
        fresh = eligible(end)
        picks = assign_slots(req, slots[fresh], count)
        if picks is not None or end >= n:
            return fresh, picks
        end = min(n, end * 4)


class Ordered:
    """The hosts of a :class:`HostTable` in another order (None: as they are),
    with the columns taken in that order only where they are read: a master
    after the first reorders tens of thousands of hosts but reads a few names."""

    def __init__(self, table: HostTable, order: np.ndarray | None = None) -> None:
        self.table = table
        self.order = order
        self._row: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.table) if self.order is None else len(self.order)

    @property
    def row(self) -> np.ndarray:
        if self._row is None:
            self._row = self.table.row if self.order is None else self.table.row[self.order]
        return self._row

    def slots(self, req: ObjectRequest) -> np.ndarray:
        s = self.table.slots(req)
        return s if self.order is None else s[self.order]

    def name(self, k: int) -> object:
        return self.table.names_at(k if self.order is None else int(self.order[k]))

    def names_at(self, picks: list[int]) -> list[str]:
        if not picks:
            return []
        at = np.asarray(picks, dtype=np.int64)
        return self.table.names_at(at if self.order is None else self.order[at]).tolist()

    def off(self, used: "Taken") -> "Ordered":
        """The same hosts in the same order with what ``used`` took subtracted."""
        return Ordered(used.off(self.table), self.order)


class Taken:
    """What a schedule being built (a master, or one delta) has put on hosts so
    far, as columns over the snapshot's rows, so later object requests see it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.any = False
        self.cpu = self.mem = self.gpu = np.zeros(0)  # allocated by the first add
        self.kind: dict[str, np.ndarray] = {}

    def add(self, rows: np.ndarray, req: ObjectRequest) -> None:
        """One instance of ``req`` on each of ``rows`` (a row may repeat; an
        exclusive instance takes every cpu)."""
        if not len(rows):
            return
        if not self.any:
            self.cpu, self.mem, self.gpu = np.zeros(self.n), np.zeros(self.n), np.zeros(self.n)
        self.any = True
        np.add.at(self.cpu, rows, INF if req.exclusive else req.cpus)
        np.add.at(self.mem, rows, req.memory_gb)
        np.add.at(self.gpu, rows, req.gpus)
        for name, need in req.custom():  # custom kinds (Ray custom resources), by name
            np.add.at(self.kind.setdefault(name, np.zeros(self.n)), rows, need)

    def off(self, hosts: HostTable) -> HostTable:
        """``hosts`` with what was taken subtracted from their free capacity."""
        if not self.any:
            return hosts
        at = hosts.row
        dc, dm, dg = self.cpu[at], self.mem[at], self.gpu[at]
        kind_free = hosts.kind_free
        if self.kind and kind_free is not None:
            kind_free = kind_free.copy()
            for i, name in enumerate(hosts.kinds):
                if name in self.kind:
                    kind_free[:, i] -= self.kind[name][at]
        return dataclasses.replace(
            hosts, free_cpus=np.maximum(hosts.free_cpus - dc, 0), free_memory_gb=hosts.free_memory_gb - dm,
            free_gpus=hosts.free_gpus - dg, instances=hosts.instances + (dc > 0), kind_free=kind_free,
        )


class Rows:
    """One make_schedules call's view of the snapshot's rows: host name ->
    row, each row's place in name order, and the host group of a row (read
    for the rows a schedule uses)."""

    def __init__(self, snap: CollectionSnapshot, base: HostTable) -> None:
        self.snap = snap
        self.n = len(snap.table.names)
        self.names = snap.table.names
        self.base = base
        self._row_of: dict[str, int] | None = None
        self.name_rank = np.full(self.n, self.n, np.int64)  # the base table is in name order
        self.name_rank[base.row] = np.arange(len(base))

    @property
    def _row(self) -> dict[str, int]:
        if self._row_of is None:  # built on first use: most plans need only a few hosts' rows
            self._row_of = dict(zip(self.base.names.tolist(), self.base.row.tolist()))
        return self._row_of

    def rows_of(self, names: Iterable[str]) -> np.ndarray:
        row = self._row
        return np.array([row[n] for n in names], dtype=np.int64)

    def groups_at(self, rows: np.ndarray) -> list[str | None]:
        """The host group of each of the snapshot's ``rows`` (None: it names none)."""
        return host_groups(self.snap, rows)

    def group_at(self, row: int) -> str | None:
        return host_groups(self.snap, np.array([row], dtype=np.int64))[0]
