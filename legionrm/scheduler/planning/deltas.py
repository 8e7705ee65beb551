"""The planner's delta schedules: per master, alternatives that move the
instances of one of its hosts to spare hosts (see :func:`make_deltas`).

Pure numpy over one Collection snapshot, no Ray; split from the planner
(:mod:`legionrm.scheduler.planner`), which calls :func:`make_deltas` once
per master.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.models import DeltaSchedule, Identity, Placement, Refusal
from legionrm.scheduler.planning.drafts import Columns
from legionrm.scheduler.planning.snaptables import VaultTable
from legionrm.scheduler.planning.whatof import Ordered, Rows, Taken, assign_slots, first_fit

if TYPE_CHECKING:  # (the planner imports this module)
    from legionrm.scheduler.planner import ObjectPlan


def make_deltas(
    max_deltas: int,
    objects: list[ObjectPlan],
    columns: list[Columns],
    at: np.ndarray,
    spares_by_obj: list["Ordered"],
    vaults: VaultTable,
    caller: Identity,
    snap: CollectionSnapshot,
    rows: Rows,
    *,
    batched: bool = True,
    slots: list[np.ndarray | None] | None = None,
) -> list[DeltaSchedule]:
    """Up to ``max_deltas`` deltas, each moving every instance of one host
    of the master (``at``: the snapshot row of each placement) to spare
    hosts (hosts the master does not use).

    In rounds: the first round offers one delta per host of the master,
    riskiest host first, each on spares no earlier delta took while such
    spares last (then on any spare); every later round offers each host,
    in the same order, one more alternative on spares no delta took yet,
    until the spares or ``max_deltas`` run out.  So a host whose first
    alternative also refuses still has another one (all hosts identical:
    every spare is some host's alternative).  Within one delta the
    instances moved share the spares' free capacity, never overbooking
    one.  ``slots``: per object request, its spares' slots where the master
    worked them out (None where it did not)."""
    in_master = np.zeros(rows.n, dtype=bool)
    in_master[at] = True
    risk = np.zeros(rows.n)
    for op in objects:
        assert op.ranked is not None
        risk[op.ranked.row] = op.ranked.risk
    # the master's hosts, riskiest first, then by name (only the first few are ever moved)
    used_rows = np.flatnonzero(in_master)  # (ascending, as np.unique(at))
    hosts_order = used_rows[np.lexsort((rows.name_rank[used_rows], -risk[used_rows]))].tolist()
    obj_of = np.repeat(np.arange(len(objects)), [len(op.keys) for op in objects])  # placements are in key order
    keys = [k for c in columns for k in c.keys]
    on_host = lambda r: [(keys[k], int(obj_of[k])) for k in np.flatnonzero(at == r).tolist()]  # noqa: E731
    spent = np.zeros(rows.n, dtype=bool)
    memo: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per object request: its spares' slots, in master
    for oi, known in enumerate(slots or ()):
        if known is not None and max_deltas:
            memo[oi] = (known, in_master[spares_by_obj[oi].row])
    deltas: list[DeltaSchedule] = []
    rounds = [True] + [False] * (max_deltas - 1)
    if batched and len(used_rows) == len(at):  # one placement per host (scatter, exclusive...): the first round batched
        if not _first_round(max_deltas, hosts_order, at, obj_of, keys, objects, columns, spares_by_obj, in_master,
                            spent, vaults, caller, snap, rows, memo, deltas):
            return deltas
        rounds = rounds[1:]
    for first_round in rounds:
        grew = False
        for host in hosts_order:
            if len(deltas) >= max_deltas:
                return deltas
            delta = _delta(on_host(host), objects, columns, spares_by_obj, in_master, spent, first_round,
                                vaults, caller, snap, rows, memo)
            if delta is not None:  # its spares are marked spent
                deltas.append(delta)
                grew = True
        if not grew:
            break
    return deltas

def _first_round(
    max_deltas: int, hosts_order: list[int], at: np.ndarray, obj_of: np.ndarray, keys: list[str], objects: list[ObjectPlan],
    columns: list[Columns], spares_by_obj: list[Ordered], in_master: np.ndarray, spent: np.ndarray,
    vaults: VaultTable, caller: Identity, snap: CollectionSnapshot, rows: Rows,
    memo: dict[int, tuple[np.ndarray, np.ndarray]], deltas: list[DeltaSchedule],
) -> bool:
    """The first round of :meth:`_deltas` when every host of the master
    carries one placement: what :meth:`_delta` gives host by host, each
    delta one instance on the first spare (in its object request's
    order) with a slot that is not in the master and that no earlier
    delta took -- or, when no such untaken spare is left at all, the first
    with a slot not in the master.  The candidates are listed once per
    object request and walked with a pointer (a spent spare stays spent),
    instead of a search over the spares per delta.  Appends to ``deltas``;
    False when the round made none (no later round would either)."""
    place_of = np.empty(rows.n, dtype=np.int64)
    place_of[at] = np.arange(len(at))
    cands: dict[int, np.ndarray] = {}  # per object request: spares not in the master with a slot, in order
    ptr: dict[int, int] = {}
    no_fresh: set[int] = set()  # object requests with no spare left that is outside the master and untaken
    grew = False
    for host in hosts_order:
        if len(deltas) >= max_deltas:
            return True
        k = int(place_of[host])
        oi = int(obj_of[k])
        req = objects[oi].request
        spares = spares_by_obj[oi]
        spare_rows = spares.row
        if oi not in cands:
            if oi not in memo:
                memo[oi] = (spares.slots(req), in_master[spare_rows])
            free, master_at = memo[oi]
            cands[oi] = np.flatnonzero(~master_at & (free >= 1))  # (read a few at a time: no list of all)
            ptr[oi] = 0
        cand, p = cands[oi], ptr[oi]
        while p < len(cand) and spent[spare_rows[cand[p]]]:
            p += 1
        ptr[oi] = p
        if p < len(cand):
            pick = int(cand[p])
        else:
            if oi not in no_fresh:
                if np.any(~(memo[oi][1] | spent[spare_rows])):
                    continue  # untaken spares remain, none with a slot: no delta for this host
                no_fresh.add(oi)
            if not len(cand):
                continue
            pick = int(cand[0])  # every spare is taken: the first with a slot again
        h = str(spares.name(pick))
        vault = vaults.pick(h, req, {}, snap, caller)
        if isinstance(vault, Refusal):
            continue
        row = int(spare_rows[pick])
        cols = columns[oi]
        placement = Placement.trusted(key=keys[k], class_name=cols.class_name, host=h, vault=vault,
                                      resources=cols.resources, group=rows.group_at(row))
        spent[row] = True
        deltas.append(DeltaSchedule.trusted(placements=(placement,)))
        grew = True
    return grew

def _delta(
    moved: list[tuple[str, int]], objects: list[ObjectPlan], columns: list[Columns],
    spares_by_obj: list[Ordered], in_master: np.ndarray, spent: np.ndarray, reuse: bool,
    vaults: VaultTable, caller: Identity, snap: CollectionSnapshot, rows: Rows,
    memo: dict[int, tuple[np.ndarray, np.ndarray]],
) -> DeltaSchedule | None:
    """``moved`` (one host's placements: each key with the index of its
    object request, whose ``columns`` give its class and resources) on
    spares, object request by object request, each seeing what the ones
    before took; None when they do not fit.  The spares a delta takes are
    marked in ``spent``."""
    used = Taken(rows.n)
    vault_used: dict[str, float] = {}
    mine: list[int] = []  # spares this delta took already: it may go on filling them
    new: list[Placement] = []
    ois = sorted({o for _, o in moved})
    for oi in ois:
        these = [k for k, o in moved if o == oi]
        cols = columns[oi]
        req = objects[oi].request
        spares = spares_by_obj[oi]
        at = spares.row
        if oi not in memo:  # what no delta changes: the spares' slots before any move, the master's hosts
            memo[oi] = (spares.slots(req), in_master[at])
        free, master_at = memo[oi]
        if used.any:
            free = spares.off(used).slots(req)

        def fresh_in(end: int) -> np.ndarray:  # spares among the first ``end`` no other delta took
            gone = spent[at[:end]]
            if mine:
                gone &= ~np.isin(at[:end], mine)
            return np.flatnonzero(~(master_at[:end] | gone))

        fresh, picks = first_fit(req, free, fresh_in, len(these))
        if picks is None and reuse and not len(fresh_in(len(at))):
            fresh = np.flatnonzero(~master_at)
            picks = assign_slots(req, free[fresh], len(these))
        if picks is None:
            return None
        took: list[int] = []
        for key, i in zip(these, picks):
            k = int(fresh[i])
            h = str(spares.name(k))
            vault = vaults.pick(h, req, vault_used, snap, caller)
            if isinstance(vault, Refusal):
                return None
            row = spares.row[k:k + 1]
            new.append(Placement.trusted(key=key, class_name=cols.class_name, host=h, vault=vault,
                                         resources=cols.resources, group=rows.group_at(int(row[0]))))
            took.append(int(row[0]))
        mine += took
        if oi != ois[-1]:  # what it took, for the object requests after it (the picks above are all one fit)
            used.add(np.asarray(took, dtype=np.int64), req)
    if not new:
        return None
    spent[mine] = True
    return DeltaSchedule.trusted(placements=tuple(new))
