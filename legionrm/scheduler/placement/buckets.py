"""The bucket path (OpenPBS style): place excl requests by counting alike hosts.

Placing a request (:class:`BucketPlacer`) over the node buckets of
:mod:`legionrm.scheduler.placement.bucketset`: map each chunk to the buckets
that can hold it and how many copies one host takes (1 for scatter and
vscatter); if a chunk's total capacity is short, the request can never run;
otherwise take hosts per chunk, per bucket, busy-later hosts first when the
walltime ends before the host's next event, then free hosts, never giving a
host to two chunks of one request.
"""

from __future__ import annotations

import numpy as np

from legionrm.scheduler.placement.base import PathPlacer, PlaceConfig, SearchOutcome
from legionrm.scheduler.placement.bucketset import BucketSet, Part, first_true
from legionrm.scheduler.placement.chunkfit import (
    NO_NODE_RESOURCES,
    NO_TOTAL_NODES,
    CompiledChunk,
    host_reason,
)
from legionrm.scheduler.placement.nodes import NodeTable
from legionrm.scheduler.placement.nodestate import HostState, StateView
from legionrm.scheduler.placement.select import SelectRequest


_ONES = np.ones(0, np.int64)


def ones(n: int) -> np.ndarray:
    """``n`` ones (int64), a read-only view of one kept array: the copies of
    a scatter answer, one per host."""
    global _ONES
    if len(_ONES) < n:
        _ONES = np.ones(max(n, 2 * len(_ONES), 1024), np.int64)
        _ONES.flags.writeable = False
    return _ONES[:n]


class BucketPlacer(PathPlacer):
    """The bucket path.  ``place(request, now, walltime)`` -> PlacementResult."""

    path = "buckets"
    pset_prefilter = False

    def __init__(self, table: NodeTable, config: PlaceConfig | None = None, state: HostState | None = None,
                 buckets: BucketSet | None = None) -> None:
        super().__init__(table, config, state)
        self.buckets = buckets if buckets is not None else BucketSet(table, self.state, self.config.requested)
        self._maps: dict[tuple, tuple[np.ndarray, tuple[tuple[int, int], ...], int, int | None]] = {}

    def _search(
        self,
        request: SelectRequest,
        chunks: tuple[CompiledChunk, ...],
        hosts: np.ndarray,
        view: StateView,
        walltime: float,
        pset: bool = False,
    ) -> SearchOutcome:
        bs = self.buckets
        live = view is self.state.live()
        parts = bs.parts(hosts, pset)
        scatter = request.place.arrangement in ("scatter", "vscatter")
        cb_map: list[tuple[tuple[int, int], ...]] = []
        for ch in chunks:
            entries, ever, fail = self._map_chunk(ch, hosts, parts, scatter)
            if not entries or ever < ch.count:
                why = host_reason(self.table, ch, fail) if fail is not None else None
                return SearchOutcome("never", why[1] if why else NO_TOTAL_NODES if fail is None else NO_NODE_RESOURCES,
                                     chunk=ch.index)
            cb_map.append(entries)
        # A necessary condition by counts, so hopeless requests cost O(buckets).
        counts = bs.usable_counts() if live else None  # usable hosts of each whole bucket
        for ch, entries in zip(chunks, cb_map):
            can = 0
            for k, c in entries:
                part = parts[k]
                can += c * (counts[part.b] if counts is not None and part.positions is None
                            else bs.usable(part, view, live))
            if can < ch.count:
                return SearchOutcome("not_now", NO_NODE_RESOURCES, chunk=ch.index)
        # Per part, its [free, busy-later (None: none), own copy?] bitmaps: a chunk marks the hosts it
        # takes so a later chunk of the request does not take them again; the live bitmaps are copied
        # only then (the last chunk, the only one of most requests, reads them as they are).
        working: dict[int, list] = {}
        deadline = view.now + walltime
        result: list[tuple[np.ndarray, np.ndarray]] = []
        for ci, (ch, entries) in enumerate(zip(chunks, cb_map)):
            mark = ci < len(chunks) - 1
            need = ch.count
            taken: list[tuple[np.ndarray, int]] = []
            for k, c in entries:
                if need <= 0:
                    break
                part = parts[k]
                if counts is not None and part.positions is None and not counts[part.b]:
                    continue  # a whole bucket with no usable host (the counts above): it gives nothing
                bits = working.get(k)
                if bits is None:
                    if live and part.positions is None:
                        b = part.b
                        bits = [bs.free[b], bs.busy_later[b] if bs.nlater[b] else None, False]
                    else:
                        bits = [*bs.bits(part, view, live), True]
                    working[k] = bits
                if mark and not bits[2]:
                    bits[:] = [bits[0].copy(), None if bits[1] is None else bits[1].copy(), True]
                free_w, later_w, copied = bits
                hosts_needed = -(-need // c)
                got = 0
                if not copied:  # the live bitmaps of a whole bucket (mark is off): its kept host lists
                    b = part.b
                    if later_w is not None:
                        lh, le = bs.later_hosts(b)
                        fit = lh[le >= deadline][:hosts_needed]
                        if len(fit):
                            taken.append((fit, c))
                            got += len(fit)
                    if got < hosts_needed:
                        fit = bs.free_hosts(b, hosts_needed - got)
                        if len(fit):
                            taken.append((fit, c))
                            got += len(fit)
                    need -= got * c
                    continue
                members = bs.hosts_of(part)
                # busy-later hosts first, when the work ends before their next event
                if later_w is not None:
                    cand = later_w.nonzero()[0]
                    if len(cand):
                        fit = cand[view.next_event[members[cand]] >= deadline][:hosts_needed]
                        if len(fit):
                            if mark:
                                later_w[fit] = False
                            taken.append((members[fit], c))
                            got += len(fit)
                if got < hosts_needed:
                    pick = first_true(free_w, hosts_needed - got)
                    if len(pick):
                        if mark:
                            free_w[pick] = False
                        taken.append((members[pick], c))
                        got += len(pick)
                need -= got * c
            if need > 0:
                return SearchOutcome("not_now", NO_NODE_RESOURCES, chunk=ch.index)
            if len(taken) == 1 and taken[0][1] == 1:  # one bucket, one copy per host: already ascending
                result.append((taken[0][0], ones(len(taken[0][0]))))
                continue
            if len(taken) == 1:
                hs, c = taken[0]
                cs = np.full(len(hs), c, np.int64)
            else:
                hs = np.concatenate([h for h, _ in taken])
                cs = np.concatenate([np.full(len(h), c, np.int64) for h, c in taken])
                order = np.argsort(hs, kind="stable")
                hs, cs = hs[order], cs[order]
            # min(c, remaining) copies per host in ascending node index
            before = np.concatenate(([0], np.cumsum(cs)[:-1]))
            copies = np.minimum(np.maximum(ch.count - before, 0), cs)
            keep = copies > 0
            result.append((hs[keep], copies[keep]))
        return SearchOutcome("run", "", arrays=result)

    def _map_chunk(
        self, ch: CompiledChunk, hosts: np.ndarray, parts: list[Part], scatter: bool
    ) -> tuple[tuple[tuple[int, int], ...], int, int | None]:
        """The chunk's row of the chunk-to-bucket map: (part index, copies per host)
        for every matching bucket, the chunk's total capacity, and the first
        failing bucket's representative host (its reason is worked out only
        when the request can never run).  Static for a host set, so cached:
        by the chunk, and by the copies per bucket it comes to (the row is
        made of those alone), which chunks that differ only in amounts
        (each request its own mem) share."""
        key = (ch.key, id(hosts), scatter)
        hit = self._maps.get(key)
        if hit is not None and hit[0] is hosts:
            return hit[1], hit[2], hit[3]
        bs = self.buckets
        per_bucket = tuple(bs.chunks_per_bucket(ch))
        by_copies = (per_bucket, id(hosts), scatter)
        hit = self._maps.get(by_copies)
        if hit is None or hit[0] is not hosts:
            entries: list[tuple[int, int]] = []
            ever = 0
            fail: int | None = None
            for k, part in enumerate(parts):
                c = per_bucket[part.b]
                if c > 0:
                    c = 1 if scatter else c
                    entries.append((k, c))
                    ever += part.total * c
                elif fail is None:
                    fail = int(bs.rep[part.b])
            # (a tuple of int pairs: nothing the garbage collector must follow)
            hit = (hosts, tuple(entries), ever, fail)
        if len(self._maps) > 4096:
            self._maps.clear()
        self._maps[key] = self._maps[by_copies] = hit
        return hit[1], hit[2], hit[3]

    def bucket_of(self, host: str) -> str:
        """The bucket name of a host (for explanations)."""
        return self.buckets.name(int(self.buckets.bucket_of[self.table.index[host]]))
