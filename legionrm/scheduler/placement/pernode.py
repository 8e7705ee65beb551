"""The per-node path: place chunks host by host, on free amounts.

This is what buckets cannot do: shared hosts (partial allocation), pack,
requests naming a host, jobs in reservations.  Each filter is a numpy mask
over the candidate hosts (state, calendar, resources); allocation walks the
hosts in node order per chunk (select order) and takes as many copies as fit
on each (one for scatter and vscatter, and never a host twice then), with a
cumulative sum instead of a Python loop.  In free placement a later chunk may
use what an earlier chunk of the same request left on a host, as upstream's
normal path does (the bucket path never shares a host between chunks).

Status: "run"; "never" when the request cannot be placed even on empty
hosts (reason: the first host's mismatch on totals); else "not now" with the
first refusing host's reason (its state, its calendar, or a resource), as the
normal path reports one node's reason.
"""

from __future__ import annotations

import math

import numpy as np

from legionrm.scheduler.placement.base import PathPlacer, SearchOutcome
from legionrm.scheduler.placement.chunkfit import (
    INVALID_STATE,
    NO_TOTAL_NODES,
    NODE_NOT_EXCL,
    NODE_PLACE_PACK,
    NOT_ENOUGH_NODES_AVAIL,
    RESERVATION_CONFLICT,
    CompiledChunk,
    chunks_per_host,
    host_reason,
    match_mask,
)
from legionrm.scheduler.placement.nodestate import FREE, StateView
from legionrm.scheduler.placement.select import SelectRequest

_Alloc = list[list[tuple[int, int]]]


class PerNodePlacer(PathPlacer):
    """The per-node path.  ``place(request, now, walltime)`` -> PlacementResult."""

    path = "nodes"

    def _empty_view(self, now: float) -> StateView:
        n = self.table.n
        return StateView(
            now,
            np.zeros(n, np.int64),
            np.zeros(n, bool),
            {},
            np.full(n, math.inf),
            np.full(n, FREE, np.int8),
            self.table,
        )

    def _search(
        self,
        request: SelectRequest,
        chunks: tuple[CompiledChunk, ...],
        hosts: np.ndarray,
        view: StateView,
        walltime: float,
        pset: bool = False,
    ) -> SearchOutcome:
        ok, alloc, failed = self._try(request, chunks, hosts, view, walltime)
        if ok:
            return SearchOutcome("run", "", alloc)
        ever, _, ever_failed = self._try(request, chunks, hosts, self._empty_view(view.now), 0.0)
        if not ever:
            text = self._reason(request, chunks, ever_failed, hosts, None, walltime) or NO_TOTAL_NODES
            return SearchOutcome("never", text, chunk=ever_failed)
        text = self._reason(request, chunks, failed, hosts, view, walltime) or NOT_ENOUGH_NODES_AVAIL
        return SearchOutcome("not_now", text, chunk=failed)

    def _eligible(self, request: SelectRequest, idx: np.ndarray, view: StateView, walltime: float) -> np.ndarray:
        elig = (view.njobs[idx] == 0) if request.place.excl else ~view.excl[idx]
        return elig & (view.next_event[idx] >= view.now + walltime)

    def _try(
        self,
        request: SelectRequest,
        chunks: tuple[CompiledChunk, ...],
        idx: np.ndarray,
        view: StateView,
        walltime: float,
    ) -> tuple[bool, _Alloc, int]:
        """(placed, allocation, index of the chunk that failed or -1)."""
        elig = self._eligible(request, idx, view, walltime)
        names = {r for ch in chunks for r, _ in ch.amounts}
        avail = {r: view.avail_at(r, idx).astype(np.float64) for r in names}
        if request.place.arrangement == "pack":
            ok = elig.copy()
            sums: dict[str, float] = {}
            for ch in chunks:
                for c in ch.checks:
                    if not c.consumable:
                        ok &= match_mask(self.table, c, idx)
                for r, a in ch.amounts:
                    sums[r] = sums.get(r, 0.0) + a * ch.count
            for r, need in sums.items():
                ok &= avail[r] + 1e-9 >= need
            hit = np.flatnonzero(ok)
            if not len(hit):
                return False, [], 0
            h = int(idx[hit[0]])
            return True, [[(h, ch.count)] for ch in chunks], -1
        scatter = request.place.arrangement in ("scatter", "vscatter")
        used = np.zeros(len(idx), bool)
        alloc: _Alloc = []
        for ch in chunks:
            cap = chunks_per_host(self.table, ch, idx, avail)
            cap[~elig] = 0
            if scatter:
                cap = np.minimum(cap, 1)
                cap[used] = 0
            cs = np.cumsum(cap)
            if not len(cs) or cs[-1] < ch.count:
                return False, alloc, ch.index
            k = int(np.searchsorted(cs, ch.count))
            take = cap[: k + 1].copy()
            take[k] = ch.count - (cs[k - 1] if k > 0 else 0)
            sel = np.flatnonzero(take)
            for r, a in ch.amounts:
                avail[r][sel] -= take[sel] * a
            used[sel] = True
            alloc.append(list(zip(idx[sel].tolist(), take[sel].tolist())))
        return True, alloc, -1

    def _reason(
        self,
        request: SelectRequest,
        chunks: tuple[CompiledChunk, ...],
        failed: int,
        idx: np.ndarray,
        view: StateView | None,
        walltime: float,
    ) -> str | None:
        """The first refusing host's reason for the chunk that failed."""
        if failed < 0 or failed >= len(chunks):
            return None
        ch = chunks[failed]
        if view is None:  # totals: the first host that cannot hold one copy
            caps = chunks_per_host(self.table, ch, idx)
            bad = np.flatnonzero(caps == 0)
            if request.place.arrangement == "pack":
                return NODE_PLACE_PACK if len(idx) else None
            if not len(bad):
                return None
            why = host_reason(self.table, ch, int(idx[bad[0]]))
            return why[1] if why else None
        excl_busy = (view.njobs[idx] > 0) if request.place.excl else view.excl[idx]
        late = view.next_event[idx] < view.now + walltime
        avail = {r: view.avail_at(r, idx) for r, _ in ch.amounts}
        caps = chunks_per_host(self.table, ch, idx, avail)
        refused = excl_busy | late | (caps == 0)
        hit = np.flatnonzero(refused)
        if not len(hit):
            return NODE_PLACE_PACK if request.place.arrangement == "pack" else None
        j = int(hit[0])
        i = int(idx[j])
        if excl_busy[j]:
            return NODE_NOT_EXCL if request.place.excl else INVALID_STATE.format(state=view.state_name(i))
        if late[j]:
            return RESERVATION_CONFLICT
        why = host_reason(self.table, ch, i, {r: float(a[j]) for r, a in avail.items()})
        return why[1] if why else None
