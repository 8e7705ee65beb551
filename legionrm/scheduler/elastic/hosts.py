"""The cycle's view of the hosts: :class:`HostView` keeps the DUCC core's
machines in line with Collection snapshots.

A new host is added to the core, a departed one removed, an unavailable one
(missed heartbeats, varied off) is down (the core purges its work), a
returning or resized one is up again with its size refreshed.  The diff
against the last snapshot seen is vectorised, so watching between cycles is
cheap.  Pure Python over the core and a snapshot (no Ray, no I/O).
"""

from __future__ import annotations

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.scheduler.fairshare import DuccCore

HOSTS = '$kind == "host"'


class HostView:
    """The hosts the core was last brought in line with (name order, memory, availability)."""

    def __init__(self) -> None:
        empty = np.array([], dtype=str)
        self.seen: tuple[np.ndarray, np.ndarray, np.ndarray] = (empty, np.array([]), np.array([], dtype=bool))

    def diff(self, core: DuccCore, snap: CollectionSnapshot):
        """Hosts now (name order) against those seen last: the rows that are
        new or changed (memory, availability) and the names that are gone."""
        rows = snap.rows(HOSTS, include_unavailable=True)
        names = np.asarray(snap.table.names[rows].tolist(), dtype=str)
        mem = snap.numeric("memory_gb", rows, 0.0)
        alive = snap.mask(HOSTS)[rows]
        old_names, old_mem, old_alive = self.seen
        if len(old_names) == 0:
            changed = np.ones(len(names), dtype=bool)
            gone = sorted(set(core.machines) - set(names.tolist()))
        else:
            known = np.isin(names, old_names)
            pos = np.clip(np.searchsorted(old_names, names), 0, len(old_names) - 1)
            changed = ~known | (old_mem[pos] != mem) | (old_alive[pos] != alive)
            gone = old_names[~np.isin(old_names, names)].tolist()
        return names, mem, alive, changed, gone

    def events(self, core: DuccCore, snap: CollectionSnapshot) -> list[str]:
        """The host events (join, leave, unavailable, back, resized) since the
        hosts seen last, without acting on them."""
        names, mem, alive, changed, gone = self.diff(core, snap)
        events = [f"host-leave {n}" for n in gone]
        for i in np.flatnonzero(changed):
            m = core.machines.get(str(names[i]))
            if m is None:
                events.append(f"host-join {names[i]}")
            elif bool(alive[i]) == m.dead or float(mem[i]) != m.memory_gb:
                kind = "host-back" if alive[i] and m.dead else "host-unavailable" if not alive[i] else "host-resized"
                events.append(f"{kind} {names[i]}")
        return events

    def sync(self, core: DuccCore, snap: CollectionSnapshot, events: list[str]) -> dict[str, str]:
        """Bring the core's machines in line with the snapshot (each change
        noted in ``events``); returns the hosts whose work was lost, with why."""
        names, mem, alive, changed, gone = self.diff(core, snap)
        lost: dict[str, str] = {}
        for name in gone:
            if name in core.machines:
                core.remove_machine(name)
                lost[name] = f"host {name} left"
                events.append(f"host-leave {name}")
        for i in np.flatnonzero(changed):
            name, gb, ok = str(names[i]), float(mem[i]), bool(alive[i])
            m = core.machines.get(name)
            if m is None:
                core.add_machine(name, gb, _nodepool_of(core, snap, name))
                if ok:
                    events.append(f"host-join {name}")
                else:
                    core.node_down(name)
            elif ok and m.dead:
                core.heartbeat(name, gb)  # back: schedulable again, size refreshed
                events.append(f"host-back {name}")
            elif ok and gb != m.memory_gb:
                core.heartbeat(name, gb)
                events.append(f"host-resized {name}")
            elif not ok and not m.dead:
                core.node_down(name)  # DUCC purges a dead node's work at once
                lost[name] = f"host {name} unavailable"
                events.append(f"host-unavailable {name}")
        self.seen = (names, mem, alive)
        events[:] = list(dict.fromkeys(events))
        return lost


def _nodepool_of(core: DuccCore, snap: CollectionSnapshot, name: str) -> str | None:
    rec = snap.record(name)
    pool = rec.nodepool or rec.attributes.get("nodepool")
    # DUCC: a node no pool claims goes to the first top-level pool
    return str(pool) if pool is not None and str(pool) in core.tree.pools else None
