"""Node buckets (OpenPBS style): alike hosts counted together, with live pool bitmaps.

Hosts with the same signature (the bucket resources' values, every boolean
with unset as False, the queue and the priority) form a bucket: an ordered
array of host indices with three pool bitmaps over it -- free, busy-later
(free now, with a future calendar event) and busy.  The bitmaps are kept
current as work starts and ends (:class:`BucketSet` subscribes to
:class:`~legionrm.scheduler.placement.nodestate.HostState`); they are never rebuilt
per request.  Differences from upstream: the signature key is symmetric with
an explicit "unset" (L4), each host keeps a direct reference to its bucket
(L3), a chunk no consumable constrains counts one per host instead of
matching nothing (L7), and placement-set buckets are slices of the live
bitmaps, so they are never stale (L2).  The bucket path that places requests
over them is :mod:`legionrm.scheduler.placement.buckets`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from legionrm.scheduler.placement.chunkfit import (
    FEW_HOSTS,
    NO_LIMIT,
    CompiledChunk,
    chunks_per_host,
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
from legionrm.scheduler.placement.select import format_value


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
