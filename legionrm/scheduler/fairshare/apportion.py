"""How Much for FAIR_SHARE: weighted fair share by apportioning qshares.

The same routine (:func:`apportion_qshares`) runs at three levels: classes
(by weight) over a nodepool's free space, users (weight 1) over their class's
grant, jobs (weight 1) over their user's grant.  Demand is in nshares of each
entity's orders; fairness is measured in qshares; the resources are a table of
holes by size, so what is given can really be carved out of machines.

Each pass gives every entity its deserved qshares (floor of the weighted
share of what is left, the remainder +1 each in entity order) walking orders
from the largest down; an entity that got all it deserved this pass pulls its
weight so it does not dilute the others (repeatedly, as DUCC does).  Passes
repeat while anything is given; a bonus phase then hands out whole holes that
rounding left behind, one per entity per order per round.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from legionrm.scheduler.fairshare.classes import ResourceClass
from legionrm.scheduler.fairshare.context import CycleContext
from legionrm.scheduler.fairshare.shares import nshares_from_v, remove_shares_by_order

INF = 2**62


@dataclass(eq=False)
class Entity:
    """A class, user or job as apportionment sees it (``wanted``/``given`` by order)."""

    name: str
    weight: float
    wanted: np.ndarray
    cap: int = INF
    can_bonus: Callable[[int], bool] | None = None
    given: np.ndarray = field(init=False)  # set by __post_init__

    def __post_init__(self) -> None:
        self.wanted = self.wanted.astype(np.int64).copy()
        self.wanted[0] = int(self.wanted[1:].sum())
        self.given = np.zeros_like(self.wanted)

    def given_q(self) -> int:
        """Qshares given so far."""
        return int((self.given[1:] * np.arange(1, len(self.given))).sum())


def apportion_qshares(entities: list[Entity], vshares: np.ndarray, rebalance: bool = False) -> None:
    """Apportion the holes ``vshares`` (mutated: what is left) among ``entities``
    (already in their tie-break order); fills each entity's ``given``.

    With ``rebalance`` False every pass and bonus round serves the entities in
    the given order, exactly as DUCC does (classes by weight then name, jobs
    oldest first).  With ``rebalance`` True (users, whose DUCC order is a hash
    order) each later pass and bonus round serves the entity given least per
    weight first, then the given order: with a fixed order the first entity
    collects the rounding remainder and the one-process round-up pass after
    pass, leaving equal users two or more processes apart.  The first pass is
    the same either way.
    """
    if not entities:
        return
    L = len(vshares)
    maxorder = L - 1
    # The per-order bookkeeping runs on Python ints (a numpy scalar read or write costs more
    # than the arithmetic); each entity's arrays are read once here and written back at the end.
    wanted = {e: e.wanted.tolist() for e in entities}
    given = {e: e.given.tolist() for e in entities}
    given_q = {e: e.given_q() for e in entities}  # qshares given so far, kept up to date
    nshares = nshares_from_v(vshares).tolist()
    pos = {e: i for i, e in enumerate(entities)}
    # the orders any entity wants now (nonzero: a superset, which is safe); wants only shrink
    wanted_orders = set().union(*(itertools.compress(range(L), wanted[e]) for e in entities))

    def neediest_first(es: list[Entity]) -> list[Entity]:
        if not rebalance:
            return list(es)
        return sorted(es, key=lambda e: (given_q[e] / e.weight, pos[e]))

    working = list(entities)
    shares_given = True
    while shares_given:
        shares_given = False
        working = neediest_first(working)
        allweights = float(sum(e.weight for e in working))
        if allweights <= 0:
            break
        total_q = nshares[1]
        deserved = {}
        left = total_q
        for e in working:
            # Java's evaluation order (n * (w / W)), so rounding matches DUCC's to the bit
            d = int(math.floor(total_q * (e.weight / allweights)))
            deserved[e] = d
            left -= d
        for e in working:
            if left <= 0:
                break
            deserved[e] += 1
            left -= 1
        gpr = {e: 0 for e in working}
        # an order no entity wants gives nothing (see ``wanted_orders``), but each still
        # pulls the satisfied entities' weights again: ``satisfied`` is that list while gpr stands
        satisfied: list[float] | None = None
        for o in range(maxorder, 0, -1):
            if nshares[o] == 0:
                continue
            total_taken = 0
            for e in working if o in wanted_orders else ():
                w, g_ = wanted[e], given[e]
                if w[o] <= 0 or g_[0] >= e.cap:
                    continue
                dgiven = nshares[o] * (e.weight / allweights) * o
                t = min(max(0, deserved[e] - gpr[e]), int(math.ceil(dgiven)))
                g = t // o
                if t % o > 0 and g == 0:
                    g = min(1, nshares[o])
                g = min(g, e.cap - g_[0])
                taken = min(g, w[o], nshares[o] - total_taken)
                if taken <= 0:
                    continue
                g_[o] += taken
                g_[0] += taken
                w[o] -= taken
                w[0] -= taken
                total_taken += taken
                gpr[e] += taken * o
                given_q[e] += taken * o
            if total_taken > 0:
                shares_given = True
                remove_shares_by_order(vshares, total_taken, o)
                nshares = nshares_from_v(vshares).tolist()
                satisfied = None
            if satisfied is None:
                satisfied = [e.weight for e in working if deserved[e] - gpr[e] <= 0]
            for weight in satisfied:
                allweights -= weight
            if allweights <= 0:
                break
        working = [e for e in working if wanted[e][0] > 0 and given[e][0] < e.cap]
        left_orders = [o for o in range(1, L) if nshares[o] > 0]
        working = [e for e in working if any(wanted[e][o] > 0 for o in left_orders)]
    # bonus: whole holes left by rounding, one per entity per order per round
    holes = vshares.tolist()
    more = True
    while nshares[1] > 0 and more:
        more = False
        for e in neediest_first(entities):
            w, g_ = wanted[e], given[e]
            for o in range(maxorder, 0, -1):
                if holes[o] <= 0 or w[o] <= 0 or g_[0] >= e.cap:
                    continue
                if e.can_bonus is not None and not e.can_bonus(o):
                    continue
                g_[o] += 1
                g_[0] += 1
                w[o] -= 1
                w[0] -= 1
                given_q[e] += o
                remove_shares_by_order(vshares, 1, o)
                holes = vshares.tolist()
                more = True
        nshares = nshares_from_v(vshares).tolist()
    for e in entities:
        e.wanted[:] = wanted[e]
        e.given[:] = given[e]


# --- How Much over the nodepool tree -------------------------------------------------


def _has_room(avail: np.ndarray) -> Callable[[int], bool]:
    """A class's ``can_bonus``: its pool still has room for a share of order ``o``."""
    return lambda o: avail[o] > 0


def _order_vector(L: int, items: list[tuple[int, int]]) -> np.ndarray:
    w = np.zeros(L, dtype=np.int64)
    for order, count in items:
        if 0 < order < L and count > 0:
            w[order] += count
    return w


def how_much_fair_share(ctx: CycleContext, group: list[ResourceClass]) -> None:
    """Counts for every job of one FAIR_SHARE priority group (sets ``job.counted``).

    Pools are visited leaf first (children ascending).  At every pool that has
    classes of its own with jobs, the classes of that pool *and of its
    subtree* apportion the subtree's free space; a subpool class may not get
    more than its own pool gave it, and its final grant is the one computed at
    the highest level (DUCC keeps the first, leaf-level grant, which can count
    more than the cluster holds).  The counts are then deducted from the
    tables so later priority groups see only what is left.
    """
    L = ctx.tables.L
    classes = [c for c in group if ctx.jobs_by_class.get(c.name)]
    for c in group:
        for j in ctx.jobs_by_class.get(c.name, []):
            j.counted = 0
            j.pure_fair_share = 0
    if not classes:
        return
    grant: dict[str, np.ndarray] = {}
    pure: dict[str, int] = {}
    class_cap = ctx.settings.class_cap(ctx.quantum_gb)
    by_pool: dict[str, list] = {}
    for c in classes:
        by_pool.setdefault(c.nodepool, []).append(c)
    assignable: dict[str, np.ndarray] = {}

    for pool in ctx.top.post_order():
        own = by_pool.get(pool.name)
        if not own:
            continue
        members = [c for c in classes if pool.contains(ctx.pools[c.nodepool])]
        members.sort(key=lambda c: (-c.weight, c.name))
        vshares = ctx.tables.subtree_v(pool).copy()
        ents = []
        for c in members:
            want = _order_vector(L, [(j.order, j.cap) for j in ctx.jobs_by_class[c.name]])
            if c.name in grant:  # counted at a lower level: never more than that pool gave
                want = np.minimum(want, grant[c.name])
            cpool = ctx.pools[c.nodepool]
            if cpool.name not in assignable:
                assignable[cpool.name] = ctx.tables.nshares_subtree(cpool)
            avail = assignable[cpool.name]
            ents.append(Entity(c.name, c.weight, want, cap=class_cap, can_bonus=_has_room(avail)))
        apportion_qshares(ents, vshares)
        total = pool.subtree_total_shares()
        wsum = sum(c.weight for c in members)
        for c, e in zip(members, ents):
            grant[c.name] = e.given.copy()
            pure[c.name] = int(np.floor(total * c.weight / wsum))

    # deduct the counts from the tables (children first; a deficit spills down)
    for pool in ctx.top.post_order():
        for c in by_pool.get(pool.name, []):
            g = grant.get(c.name)
            if g is None:
                continue
            for o in range(L - 1, 0, -1):
                if g[o] > 0:
                    ctx.tables.count_out(pool, o, int(g[o]))

    # users within each class, then jobs within each user
    for c in classes:
        g = grant.get(c.name)
        jobs = ctx.jobs_by_class[c.name]
        if g is None or g[1:].sum() == 0:
            continue
        by_user: dict[str, list] = {}
        for j in jobs:
            by_user.setdefault(j.user, []).append(j)
        users = sorted(by_user)  # DUCC: hash order; here by name (deterministic)
        uents = [
            Entity(u, 1.0, _order_vector(L, [(j.order, j.cap) for j in by_user[u]])) for u in users
        ]
        apportion_qshares(uents, g.copy(), rebalance=True)
        upure = pure[c.name] // len(users)
        for u, ue in zip(users, uents):
            ujobs = sorted(by_user[u], key=lambda j: j.age_key())
            jents = [
                Entity(j.id, 1.0, _order_vector(L, [(j.order, j.cap)])) for j in ujobs
            ]
            apportion_qshares(jents, ue.given.copy())
            jpure = upure // len(ujobs)
            for j, je in zip(ujobs, jents):
                j.counted = int(je.given[j.order]) if j.order < L else 0
                j.pure_fair_share = jpure
