"""The nodepool tree and its free-space tables.

Pools form a forest; each top-level pool and its subpools are scheduled
independently, with one quantum and one ``maxorder`` per tree.  Children are
visited in ascending ``search_order`` (ties by name), which is the order in
which fair-share work squats in subpools.

:class:`PoolTables` is DUCC's scratch space for one tree, rebuilt from the
machines before every phase (so errors never accumulate):

* ``n[p, o]`` completely free machines of size ``o`` in pool ``p`` (local);
* ``v[p, o]`` partly used machines whose free space is exactly ``o``;
* ``bucket[p][o]`` the machines behind ``n + v`` at free size ``o``
  (insertion-ordered, so placement is deterministic);
* ``nshares`` derived on demand: order-``o`` nshares all holes could yield.

``rearrange`` is DUCC's rearrangeVirtual: every share placed or accounted goes
through it and moves its machine to a smaller bucket.  ``count_out`` removes
counted (not yet placed) nshares from ``n``/``v`` only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from legionrm.scheduler.fairshare.classes import NodepoolSpec
from legionrm.scheduler.fairshare.shares import Machine, nshares_from_v


@dataclass(eq=False)
class NodePool:
    name: str
    search_order: int = 100
    parent: "NodePool | None" = None
    children: list["NodePool"] = field(default_factory=list)
    quantum_gb: float = 15.0
    index: int = 0  # position within its tree
    depth: int = 0
    machines: dict[str, Machine] = field(default_factory=dict)
    total_shares: int = 0  # orders of every machine that ever arrived here (local)

    @property
    def top(self) -> "NodePool":
        p = self
        while p.parent is not None:
            p = p.parent
        return p

    def children_ascending(self) -> list["NodePool"]:
        return sorted(self.children, key=lambda c: (c.search_order, c.name))

    def children_descending(self) -> list["NodePool"]:
        return sorted(self.children, key=lambda c: (-c.search_order, c.name))

    def subtree(self) -> Iterator["NodePool"]:
        """This pool and every descendant, pre-order, children ascending."""
        yield self
        for c in self.children_ascending():
            yield from c.subtree()

    def post_order(self, descending: bool = False) -> Iterator["NodePool"]:
        kids = self.children_descending() if descending else self.children_ascending()
        for c in kids:
            yield from c.post_order(descending)
        yield self

    def contains(self, other: "NodePool") -> bool:
        p: NodePool | None = other
        while p is not None:
            if p is self:
                return True
            p = p.parent
        return False

    def subtree_total_shares(self) -> int:
        return sum(p.total_shares for p in self.subtree())

    def all_machines(self) -> Iterator[Machine]:
        for p in self.subtree():
            yield from p.machines.values()


class NodepoolTree:
    """Every nodepool by name; the first top-level pool takes unplaced machines."""

    def __init__(self, specs: list[NodepoolSpec], default_quantum_gb: float) -> None:
        if not specs:
            specs = [NodepoolSpec(name="default")]
        self.pools: dict[str, NodePool] = {s.name: NodePool(name=s.name, search_order=s.search_order) for s in specs}
        for s in specs:
            if s.parent is not None:
                child, parent = self.pools[s.name], self.pools[s.parent]
                child.parent = parent
                parent.children.append(child)
        self.tops: list[NodePool] = [self.pools[s.name] for s in specs if s.parent is None]
        quanta = {s.name: s.quantum_gb for s in specs}
        for top in self.tops:
            q = quanta[top.name] or default_quantum_gb
            for i, p in enumerate(top.subtree()):
                p.quantum_gb = q
                p.index = i
                p.depth = 0 if p.parent is None else p.parent.depth + 1

    @property
    def default(self) -> NodePool:
        return self.tops[0]

class PoolTables:
    """Free-space tables of one top-level tree (see the module docstring)."""

    def __init__(self, top: NodePool, maxorder: int) -> None:
        self.top = top
        self.pools = list(top.subtree())
        self.L = maxorder + 1
        self.n = np.zeros((len(self.pools), self.L), dtype=np.int64)
        self.v = np.zeros((len(self.pools), self.L), dtype=np.int64)
        self.bucket: list[list[dict[str, None]]] = [[{} for _ in range(self.L)] for _ in self.pools]
        self.free: dict[str, int] = {}
        self.full: dict[str, bool] = {}
        self.machine: dict[str, Machine] = {}
        self.pool_of: dict[str, int] = {}

    # --- building --------------------------------------------------------------

    def reset(self, free_of: Callable[[Machine], int]) -> None:
        """Rebuild from schedulable machines; ``free_of(m)`` is the machine's free qshares."""
        self.n[:] = 0
        self.v[:] = 0
        for row in self.bucket:
            for d in row:
                d.clear()
        self.free.clear()
        self.full.clear()
        self.machine.clear()
        self.pool_of.clear()
        for p in self.pools:
            for name in sorted(p.machines):
                m = p.machines[name]
                if not m.schedulable:
                    continue
                size = min(m.order - sum(m.blacklist.values()), self.L - 1)
                f = min(max(0, free_of(m)), size)
                self.machine[name] = m
                self.pool_of[name] = p.index
                self.free[name] = f
                self.full[name] = f == size
                if f > 0:
                    (self.n if f == size else self.v)[p.index, f] += 1
                    self.bucket[p.index][f][name] = None

    # --- allocation ------------------------------------------------------------

    def rearrange(self, name: str, order: int, whole: bool = False) -> None:
        """Account one nshare of ``order`` on machine ``name`` (DUCC rearrangeVirtual).

        A share larger than the free space counts as the free space; ``whole``
        (a reservation) takes the whole machine.  Unknown (unschedulable)
        machines are ignored.
        """
        f = self.free.get(name)
        if f is None or f <= 0:
            return
        p = self.pool_of[name]
        if order > f or whole:
            order = f
        if self.full[name]:
            self.n[p, f] -= 1
        else:
            self.v[p, f] -= 1
        del self.bucket[p][f][name]
        f -= order
        self.free[name] = f
        self.full[name] = False
        if f > 0:
            self.v[p, f] += 1
            self.bucket[p][f][name] = None

    def count_out(self, pool: NodePool, order: int, k: int) -> int:
        """Remove ``k`` counted order-``order`` nshares from the tables, smallest hole
        first (a partial hole before a whole machine), spilling into children.
        Returns how many could not be found."""
        if k <= 0 or order >= self.L:
            return max(k, 0)
        p = pool.index
        for size in range(order, self.L):
            for tab in (self.v, self.n):
                while k > 0 and tab[p, size] > 0:
                    per = size // order
                    if k >= per:
                        h = min(int(tab[p, size]), k // per)
                        tab[p, size] -= h
                        k -= h * per
                        r = size % order
                        if r:
                            self.v[p, r] += h
                    else:
                        tab[p, size] -= 1
                        self.v[p, size - k * order] += 1
                        k = 0
            if k == 0:
                return 0
        for child in pool.children_ascending():
            k = self.count_out(child, order, k)
            if k == 0:
                break
        return k

    # --- queries ---------------------------------------------------------------

    def local_v(self, pool: NodePool) -> np.ndarray:
        return self.n[pool.index] + self.v[pool.index]

    def subtree_v(self, pool: NodePool) -> np.ndarray:
        idx = [p.index for p in pool.subtree()]
        return (self.n[idx] + self.v[idx]).sum(axis=0)

    def nshares_local(self, pool: NodePool) -> np.ndarray:
        return nshares_from_v(self.local_v(pool))

    def nshares_subtree(self, pool: NodePool) -> np.ndarray:
        return nshares_from_v(self.subtree_v(pool))

    def machines_with_free(self, pool: NodePool, size: int, limit: int | None = None) -> Iterable[str]:
        """Machines of ``pool`` (local) whose free space is exactly ``size``, in bucket order;
        a snapshot of the first ``limit`` of them (all when None)."""
        if size >= self.L or not self.bucket[pool.index][size]:
            return ()
        return list(itertools.islice(self.bucket[pool.index][size], limit))

