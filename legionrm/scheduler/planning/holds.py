"""Holds: capacity the queue keeps for a reserved start (EASY backfill).

A pending request at the top of the queue that cannot start now gets a
reserved start (:mod:`legionrm.scheduler.backfill`) and a :class:`Hold`:
from ``start`` on, work may use at most ``spare[host]`` cpus of each named
host, so the reserved request finds its cpus free when its start comes.
Work that ends by ``start`` is not bound by the hold (it is gone by then).
:func:`held_table` applies the holds to the planner's host table for one
object request.  Pure; no Ray.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from legionrm.scheduler.planning.pipeline import HostTable


@dataclass(frozen=True)
class Hold:
    """The cpus kept for ``request_id`` from ``start`` on: work still running
    then may use at most ``spare[host]`` cpus of each host named (hosts not
    named are not bound)."""

    request_id: str
    start: float
    spare: Mapping[str, float] = field(default_factory=dict)


def held_table(table: HostTable, holds: Sequence[Hold], end: float) -> HostTable:
    """``table`` as work ending at ``end`` may use it: for every hold whose
    start comes before ``end``, each named host's free cpus are at most its
    spare (see :class:`Hold`)."""
    binding = [h for h in holds if end > h.start and h.spare]
    if not binding:
        return table
    where: dict[str, int] | None = None
    free = table.free_cpus.copy()
    for hold in binding:
        columns = getattr(hold.spare, "columns", None)
        if columns is not None:  # the queue's holds: as arrays (the hosts named once per list of names)
            names, hosts, spares = columns
            at = _positions(names, table.names)[hosts]
            keep = at >= 0
            at = at[keep]
            free[at] = np.minimum(free[at], np.maximum(spares[keep], 0.0))
            continue
        where = where if where is not None else {str(n): i for i, n in enumerate(table.names)}
        for host, spare in hold.spare.items():
            i = where.get(host)
            if i is not None:
                free[i] = min(free[i], max(spare, 0.0))
    return dataclasses.replace(table, free_cpus=free)


_last: tuple[list[str], np.ndarray, np.ndarray] | None = None
"""The last names :func:`_positions` placed, the table names it placed them in, and their positions."""


def _positions(names: list[str], table_names: np.ndarray) -> np.ndarray:
    """Each of ``names``'s position in ``table_names`` (-1: not there); kept for the same table names and names alike."""
    global _last
    last = _last
    if last is not None and last[1] is table_names and (last[0] is names or last[0] == names):
        return last[2]
    where = {str(n): i for i, n in enumerate(table_names)}
    pos = np.fromiter((where.get(n, -1) for n in names), np.int64, len(names))
    _last = (names, table_names, pos)
    return pos
