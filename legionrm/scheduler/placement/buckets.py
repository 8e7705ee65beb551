"""Node buckets (OpenPBS style): place excl requests by counting alike hosts.

Hosts with the same signature (the bucket resources' values, every boolean
with unset as False, the queue and the priority) form a bucket: an ordered
array of host indices with three pool bitmaps over it -- free, busy-later
(free now, with a future calendar event) and busy.  The bitmaps are kept
current as work starts and ends (:class:`BucketSet` subscribes to
:class:`~legionrm.scheduler.placement.nodestate.HostState`); they are never rebuilt
per request.

Placing a request (:class:`BucketPlacer`): map each chunk to the buckets
that can hold it and how many copies one host takes (1 for scatter and
vscatter); if a chunk's total capacity is short, the request can never run;
otherwise take hosts per chunk, per bucket, busy-later hosts first when the
walltime ends before the host's next event, then free hosts, never giving a
host to two chunks of one request.  Differences from upstream: the signature
key is symmetric with an explicit "unset" (L4), each host keeps a direct
reference to its bucket (L3), a chunk no consumable constrains counts one per
host instead of matching nothing (L7), and placement-set buckets are slices
of the live bitmaps, so they are never stale (L2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from legionrm.scheduler.placement.base import PathPlacer, PlaceConfig, SearchOutcome
from legionrm.scheduler.placement.chunkfit import (
    FEW_HOSTS,
    NO_LIMIT,
    NO_NODE_RESOURCES,
    NO_TOTAL_NODES,
    CompiledChunk,
    chunks_per_host,
    host_reason,
    match_mask,
)
from legionrm.scheduler.placement.nodes import NodeTable
from legionrm.scheduler.placement.nodestate import (
    BUSY,
    BUSY_LATER,
    FREE,
    HostState,
    StateView,
)
from legionrm.scheduler.placement.select import SelectRequest, format_value


_Shape = tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]
"""A bucket set's membership: bucket of each host, members of each bucket,
representatives, position of each host in its bucket."""


@dataclass(frozen=True)
class Part:
    """A bucket as one placement set sees it: bucket id and positions (None: all members)."""

    b: int
    positions: np.ndarray | None
    total: int


class BucketSet:
    """All buckets of a node table, with live pool bitmaps.

    Built once per table (per cycle when ``requested`` narrows the
    signature to the resources the cycle's requests name); ``refresh``
    (called by the host state on every occupy / release) moves the touched
    hosts between pools.
    """

    def __init__(self, table: NodeTable, state: HostState, requested: tuple[str, ...] | None = None) -> None:
        self.table = table
        self.state = state
        self.sig = table.signature_resources(requested)
        # which host is in which bucket depends on the table alone: built once per
        # table and signature, shared by the bucket sets of every host state on it
        key = ("buckets", self.sig)
        shape = cast("_Shape | None", table.derived.get(key))
        if shape is None:
            shape = self._shape()
            table.derived[key] = shape
        self.bucket_of, self.members, self.rep, self.pos = shape
        self.free: list[np.ndarray] = []
        self.busy_later: list[np.ndarray] = []
        self.busy: list[np.ndarray] = []
        live = state.live()
        for m in self.members:
            p = live.pool[m]
            self.free.append(p == FREE)
            self.busy_later.append(p == BUSY_LATER)
            self.busy.append(p == BUSY)
        self.nfree = np.asarray([int(f.sum()) for f in self.free], dtype=np.int64)
        self.nlater = np.asarray([int(f.sum()) for f in self.busy_later], dtype=np.int64)
        self._parts: dict[int, tuple[np.ndarray, list[Part]]] = {}
        self._cpn: dict[tuple, tuple[np.ndarray, list[bool]]] = {}
        self._totals: dict[str, list[float] | None] = {}
        self._counts: list[int] | None = None  # usable_counts, until a refresh
        self._per: dict[tuple[str, float], tuple[int, ...] | None] = {}  # (resource, amount) -> copies per bucket
        # per bucket, its free hosts (node indices, ascending) and its busy-later hosts with their next
        # events, kept until a refresh touches the bucket: on a busy fleet every request would find them
        # again in the same bitmaps (None: not known)
        self._free_hosts: list[np.ndarray | None] = [None] * len(self.members)
        self._later_hosts: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(self.members)
        state.subscribe(self.refresh)

    def _shape(self) -> "_Shape":
        """(bucket of each host, members of each bucket, representatives, position in bucket)."""
        table = self.table
        n = table.n
        cols = [table.columns[r].signature_codes() for r in self.sig] + [table.queue_code, table.priority]
        matrix = np.stack(cols, axis=1) if n else np.zeros((0, len(cols)), np.int64)
        if n:
            _, first, inv = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
            inv = inv.reshape(-1)
        else:
            first, inv = np.zeros(0, np.int64), np.zeros(0, np.int64)
        created = np.argsort(first, kind="stable")  # creation order = first appearance in node order
        reps = first[created]
        keyed = sorted(range(len(created)), key=lambda k: self._sort_key(int(reps[k])))
        rank = np.empty(len(created), np.int64)
        rank[created[keyed]] = np.arange(len(created))
        bucket_of = rank[inv] if n else np.zeros(0, np.int64)  # direct host -> bucket (L3)
        order = np.argsort(bucket_of, kind="stable")
        bounds = np.searchsorted(bucket_of[order], np.arange(len(created) + 1))
        members: list[np.ndarray] = [order[bounds[b] : bounds[b + 1]] for b in range(len(created))]
        rep = np.asarray([m[0] for m in members], dtype=np.int64)
        pos = np.empty(n, np.int64)
        for m in members:
            pos[m] = np.arange(len(m))
        for a in (bucket_of, rep, pos, *members):
            a.flags.writeable = False
        return bucket_of, members, rep, pos

    def __len__(self) -> int:
        return len(self.members)

    def _sort_key(self, rep: int) -> tuple[float, ...]:
        out: list[float] = []
        for k in self.table.sort_keys:
            if k.resource in ("sort_priority", "priority"):
                v = float(self.table.priority[rep])
            elif k.resource in self.sig and self.table.columns[k.resource].consumable:
                v = float(cast(np.ndarray, self.table.columns[k.resource].values)[rep])
            else:
                v = 0.0
            out.append(-v if k.high else v)
        return tuple(out)

    def name(self, b: int) -> str:
        """For logs and explanations: ``res=val:...[:priority=N][:queue=Q]``."""
        rep = int(self.rep[b])
        parts = []
        for r in self.sig:
            v = self.table.columns[r].value(rep)
            parts.append(f"{r}={'' if v is None else format_value(v)}")
        pr = int(self.table.priority[rep])
        if pr:
            parts.append(f"priority={pr}")
        q = int(self.table.queue_code[rep])
        if q >= 0:
            parts.append(f"queue={self.table.queues[q]}")
        return ":".join(parts)

    # -- keeping pools current --------------------------------------------------

    def refresh(self, hosts: np.ndarray, view: StateView) -> None:
        """Move ``hosts`` to the pool their live state says (idempotent)."""
        if len(hosts) == 0:
            return
        self._counts = None
        if len(hosts) == 1:  # one host: scalar updates, no numpy call overhead
            i = int(hosts[0])
            b, p, pool = int(self.bucket_of[i]), int(self.pos[i]), int(view.pool[i])
            f, bl = self.free[b], self.busy_later[b]
            self.nfree[b] += (pool == FREE) - int(f[p])
            self.nlater[b] += (pool == BUSY_LATER) - int(bl[p])
            f[p] = pool == FREE
            bl[p] = pool == BUSY_LATER
            self.busy[b][p] = pool == BUSY
            self._free_hosts[b] = self._later_hosts[b] = None
            return
        bs = self.bucket_of[hosts]
        for b in np.unique(bs).tolist():
            self._free_hosts[b] = self._later_hosts[b] = None
            h = hosts[bs == b] if len(hosts) > 1 else hosts
            p = self.pos[h]
            pool = view.pool[h]
            f, bl = self.free[b], self.busy_later[b]
            self.nfree[b] += int((pool == FREE).sum()) - int(f[p].sum())
            self.nlater[b] += int((pool == BUSY_LATER).sum()) - int(bl[p].sum())
            f[p] = pool == FREE
            bl[p] = pool == BUSY_LATER
            self.busy[b][p] = pool == BUSY

    # -- placement-set views ----------------------------------------------------

    def parts(self, hosts: np.ndarray, pset: bool = True) -> list[Part]:
        """The buckets of a host set, in bucket order for a universe (a queue's,
        or one a caller narrowed to the hosts it accepts: ``pset`` False) and
        in creation order for a placement set made of parts of buckets
        (upstream does not re-sort those)."""
        hit = self._parts.get(id(hosts))  # host sets are persistent arrays: key by identity
        if hit is not None and hit[0] is hosts:
            return hit[1]
        bs = self.bucket_of[hosts]
        uniq, first = np.unique(bs, return_index=True)
        counts = np.bincount(bs, minlength=len(self)) if len(hosts) else np.zeros(len(self), np.int64)
        whole = [int(b) for b in uniq if counts[b] == len(self.members[b])]
        if len(whole) == len(uniq):  # a whole universe (queue-split): bucket order
            out = [Part(b, None, len(self.members[b])) for b in sorted(whole)]
        else:  # parts of buckets: a placement set's in creation order, a narrowed universe's in bucket order
            out = []
            for b in (uniq[np.argsort(first, kind="stable")] if pset else uniq).tolist():
                pos = np.sort(self.pos[hosts[bs == b]])
                out.append(Part(int(b), pos, len(pos)))
        self._parts[id(hosts)] = (hosts, out)
        return out

    def bits(self, part: Part, view: StateView, live: bool) -> tuple[np.ndarray, np.ndarray]:
        """(free, busy_later) bitmaps of a part under ``view`` (copies, safe to edit)."""
        if live:
            f, bl = self.free[part.b], self.busy_later[part.b]
            if part.positions is None:
                return f.copy(), bl.copy()
            return f[part.positions], bl[part.positions]
        pool = view.pool[self.hosts_of(part)]
        return pool == FREE, pool == BUSY_LATER

    def hosts_of(self, part: Part) -> np.ndarray:
        m = self.members[part.b]
        return m if part.positions is None else m[part.positions]

    def free_hosts(self, b: int, k: int) -> np.ndarray:
        """The first ``k`` free hosts of bucket ``b`` (node indices, ascending),
        live: ``members[first_true(free, k)]``.  When that search reads the
        whole bitmap anyway, every free host is kept (read-only) until a
        refresh touches the bucket, and later requests take a slice of it."""
        kept = self._free_hosts[b]
        if kept is not None:
            return kept[:k]
        bits = self.free[b]
        if k <= 1 or max(8 * k, 16384) < len(bits):  # a short or partial search: nothing whole to keep
            return self.members[b][first_true(bits, k)]
        kept = self.members[b][bits.nonzero()[0]]
        kept.flags.writeable = False
        self._free_hosts[b] = kept
        return kept[:k]

    def later_hosts(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Bucket ``b``'s busy-later hosts (node indices, ascending) and their
        next events, live; kept until a refresh touches the bucket."""
        kept = self._later_hosts[b]
        if kept is None:
            hosts = self.members[b][self.busy_later[b].nonzero()[0]]
            events = self.state.live().next_event[hosts]
            hosts.flags.writeable = events.flags.writeable = False
            kept = self._later_hosts[b] = (hosts, events)
        return kept

    def usable_counts(self) -> list[int]:
        """Free plus busy-later hosts of each whole bucket, live (kept until a refresh)."""
        if self._counts is None:
            self._counts = (self.nfree + self.nlater).tolist()
        return self._counts

    def usable(self, part: Part, view: StateView, live: bool) -> int:
        """Free plus busy-later hosts of a part (an upper bound on what it can give)."""
        if live and part.positions is None:
            return int(self.nfree[part.b] + self.nlater[part.b])
        f, bl = self.bits(part, view, live)
        return int(np.count_nonzero(f) + np.count_nonzero(bl))

    def chunks_per_node(self, chunk: CompiledChunk, b: int) -> int:
        """How many copies of ``chunk`` one host of bucket ``b`` can hold (totals)."""
        return self.chunks_per_bucket(chunk)[b]

    def chunks_per_bucket(self, chunk: CompiledChunk) -> list[int]:
        """:meth:`chunks_per_node` for every bucket at once, tested on the
        buckets' representatives: exactly :func:`chunks_per_host` of them.
        Which buckets match (the non-consumable checks) is cached by those
        checks alone, so requests that differ only in amounts share it; the
        amounts are divided in, in Python over the few buckets' totals (kept
        per resource) with the float operations numpy would do, once per
        resource and amount (a cycle's requests share most amounts: ncpus=1)."""
        ok = self._cpn.get(chunk.match_key)
        if ok is None:
            if len(self._cpn) > 4096:
                self._cpn.clear()
            mask = np.ones(len(self.rep), bool)
            for c in chunk.checks:
                if not c.consumable:
                    mask &= match_mask(self.table, c, self.rep)
            ok = self._cpn[chunk.match_key] = (mask, mask.tolist())
        cap: tuple[int, ...] | list[int] | None = None
        for res, a in chunk.amounts:  # (the consumable checks' amounts, in the same order)
            if a <= 0:
                continue
            got = self._copies(res, a)
            if got is None:  # many buckets, or a total that is not finite or too large: numpy's own rules
                return chunks_per_host(self.table, chunk, self.rep, matched=ok[0]).tolist()
            cap = got if cap is None else list(map(min, cap, got))
        if cap is None:
            return [int(m) for m in ok[1]]
        return [g if m else 0 for g, m in zip(cap, ok[1])]

    def _copies(self, res: str, a: float) -> tuple[int, ...] | None:
        """How many times ``a`` of ``res`` fits in each representative's total
        (as ``np.floor(np.maximum(h, 0) / a + 1e-9)``); None where numpy's own
        rules must answer (see :meth:`_rep_totals`, or a count past NO_LIMIT).
        A tuple of ints: the garbage collector leaves it alone."""
        key = (res, a)
        if key in self._per:
            return self._per[key]
        have = self._rep_totals(res)
        got = None if have is None else tuple([math.floor(h / a + 1e-9) for h in have])
        if got is not None and got and max(got) > NO_LIMIT:
            got = None
        if len(self._per) > 4096:
            self._per.clear()
        self._per[key] = got
        return got

    def _rep_totals(self, res: str) -> list[float] | None:
        """The representatives' totals of ``res``, clipped at 0, as floats (None:
        more than a few buckets, or a value that is not finite)."""
        if res not in self._totals:
            have = self.table.total(res)[self.rep].tolist() if len(self.rep) <= FEW_HOSTS else None
            if have is not None and not all(math.isfinite(h) for h in have):
                have = None
            self._totals[res] = None if have is None else [max(h, 0.0) for h in have]
        return self._totals[res]


def first_true(bits: np.ndarray, k: int) -> np.ndarray:
    """Indices of the first ``k`` True entries: one ``nonzero`` for a bitmap
    of up to 16,384 hosts, else a scan in growing blocks."""
    n = len(bits)
    if k <= 0 or n == 0:
        return np.zeros(0, np.int64)
    if k == 1:  # one host (a single-host job): argmax stops at the first True
        i = int(bits.argmax())
        return np.array([i] if bits[i] else [], dtype=np.intp)
    step = max(8 * k, 16384)
    if step >= n:
        return bits.nonzero()[0][:k]
    found: list[np.ndarray] = []
    got = 0
    start = 0
    while start < n and got < k:
        seg = bits[start : start + step].nonzero()[0][: k - got] + start
        found.append(seg)
        got += len(seg)
        start += step
        step *= 2
    return np.concatenate(found) if len(found) > 1 else found[0]


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
