"""Entitlement: how much of the cluster each pool may use, computed top-down.

One cycle (:func:`compute_entitlement`):

1. the root's reservation and limit become the cluster capacity, its
   entitlement the capacity and its slack entitlement the slack cpu;
2. non-leaf demand, slack demand and allocation are summed up the tree;
3. total entitlement, parent by parent from the root (:func:`split_entitlement`):
   phase 1 reservations, phase 2 the excess demand by share, phase 3 what
   nobody claimed, by share, under each child's limit;
4. slack / non-slack split, parent by parent from the root (:func:`split_slack`).

Each parent's children are handled as ``(n, 4)`` matrices, so a level is a
few numpy operations whatever its width.

Deliberate differences from Peloton (see docs/pools.md):

* phase 2 is exact weighted water-filling (Peloton approaches it in
  geometric rounds and stops up to EPS short, e.g. 34.999 for 35);
* children with share 0 take no part in phases 2 and 3, so a share-0 child
  with excess demand cannot make the calculation loop forever (Peloton does);
* in phase 3, what a child's limit cuts off goes on to its siblings still
  under their limit, by share, instead of being lost.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from legionrm.scheduler.pools.gang import NON_SLACK, SLACK
from legionrm.scheduler.pools.tree import PoolTree, ResourcePool
from legionrm.scheduler.pools.vec import EPS, KINDS, Vec, sub_floor, vec, zeros

CPU = 0


def water_fill(amount: float, shares: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Share ``amount`` among children in proportion to ``shares``, none above its cap.

    Exact weighted water-filling: find the level ``lam`` with
    ``sum(min(caps, shares * lam)) == amount`` (or give every cap when the
    caps add up to less).  Children with share 0 or a cap below EPS get
    nothing.  Returns the amount given to each child; pure.
    """
    give = np.zeros_like(caps, dtype=np.float64)
    if amount <= 0:
        return give
    elig = (shares > 0) & (caps > EPS)
    if not elig.any():
        return give
    s, c = shares[elig], caps[elig]
    if c.sum() <= amount:
        give[elig] = c
        return give
    ratio = c / s
    order = np.argsort(ratio, kind="stable")
    r_sorted, s_sorted, c_sorted = ratio[order], s[order], c[order]
    filled_before = np.concatenate(([0.0], np.cumsum(c_sorted)[:-1]))  # caps of children already full
    share_after = np.cumsum(s_sorted[::-1])[::-1]  # shares of children still growing
    used_at = filled_before + r_sorted * share_after  # amount used when the level reaches ratio j
    j = int(np.searchsorted(used_at, amount, side="left"))
    lam = (amount - filled_before[j]) / share_after[j]
    give[elig] = np.minimum(c, s * lam)
    return give


def _requirements(kids: list[ResourcePool]) -> tuple[np.ndarray, np.ndarray]:
    """Per child: non-slack requirement (allocation + demand) and slack requirement (capped by slack limit)."""
    alloc = np.stack([c.alloc for c in kids])
    ns_req = alloc[:, NON_SLACK] + np.stack([c.demand for c in kids])
    slack_limit = np.stack([c.slack_limit for c in kids])
    s_req = np.minimum(slack_limit, alloc[:, SLACK] + np.stack([c.slack_demand for c in kids]))
    return ns_req, s_req


def split_entitlement(parent: ResourcePool) -> None:
    """Set each child's total entitlement from ``parent.entitlement`` (phases 1-3)."""
    kids = list(parent.children.values())
    if not kids:
        return
    res = np.stack([c.reservation for c in kids])
    lim = np.stack([c.limit for c in kids])
    share = np.stack([c.share for c in kids])
    static = np.stack([c.static for c in kids])
    ns_req, s_req = _requirements(kids)
    demand = np.minimum(ns_req + s_req, lim)  # the "limited demand", with this level's own limits

    # phase 1: reservations (STATIC: all of it; ELASTIC: what the demand claims of it)
    assign = np.where(static, res, np.minimum(demand, res))
    excess = np.where(demand > res, demand - res, 0.0)
    # The parent's rest floors at 0: reservations are granted even past it (over-commit, as upstream).
    rest = sub_floor(parent.entitlement, assign.sum(axis=0))

    for k in range(len(KINDS)):
        # phase 2: excess demand, by share, exactly
        if rest[k] > EPS:
            given = water_fill(rest[k], share[:, k], np.where(excess[:, k] >= EPS, excess[:, k], 0.0))
            assign[:, k] += given
            rest[k] = max(rest[k] - given.sum(), 0.0)
        # phase 3: what nobody claimed, by share, under each limit; a cut-off goes to the others.
        # As upstream, the limit caps every child here, share 0 or not (only a forced STATIC
        # reservation above its limit can be over it), and only when something is left.
        if rest[k] > EPS:
            assign[:, k] = np.minimum(assign[:, k], lim[:, k])
            assign[:, k] += water_fill(rest[k], share[:, k], np.maximum(lim[:, k] - assign[:, k], 0.0))

    for i, c in enumerate(kids):
        c.entitlement = assign[i].copy()


def split_slack(parent: ResourcePool) -> None:
    """Set each child's slack and non-slack entitlement from ``parent.slack_entitlement``."""
    kids = list(parent.children.values())
    if not kids:
        return
    ent = np.stack([c.entitlement for c in kids])
    share_cpu = np.array([c.share[CPU] for c in kids])
    slack_alloc_cpu = np.array([c.alloc[SLACK][CPU] for c in kids])
    slack_demand_cpu = np.array([c.slack_demand[CPU] for c in kids])
    ns_req, s_req = _requirements(kids)

    # phase 1: memory/disk/gpu left over after non-revocable needs go to revocable needs
    sa = np.minimum(sub_floor(ent, ns_req), s_req)  # cpu column is 0: the slack limit's cpu is 0
    untouched = np.all(sa == 0.0, axis=1)
    non_slack = np.where(untouched[:, None], ent, sub_floor(ent, sa))
    sa[:, CPU] = slack_alloc_cpu  # revocable cpu already in use stays guaranteed
    rest = sub_floor(parent.slack_entitlement, sa.sum(axis=0))

    # phase 2: revocable cpu to slack cpu demand, by cpu share, exactly
    if rest[CPU] > EPS:
        given = water_fill(rest[CPU], share_cpu, np.where(slack_demand_cpu >= EPS, slack_demand_cpu, 0.0))
        sa[:, CPU] += given
        rest[CPU] = max(rest[CPU] - given.sum(), 0.0)
    # phase 3: the remaining slack cpu by share, with no cap (as upstream)
    total_share = share_cpu.sum()
    if rest[CPU] > EPS and total_share > 0:
        sa[:, CPU] += np.where(share_cpu > 0, share_cpu / total_share * rest[CPU], 0.0)

    for i, c in enumerate(kids):
        c.slack_entitlement = sa[i].copy()
        c.non_slack_entitlement = non_slack[i].copy()


def compute_entitlement(
    tree: PoolTree,
    capacity: Vec | Mapping[str, float],
    slack_capacity: Vec | Mapping[str, float] | None = None,
) -> None:
    """Run one entitlement cycle over the whole tree; mutates the pools' entitlements.

    ``capacity`` and ``slack_capacity`` are per-kind cluster totals (only the
    slack cpu is used).  Idempotent for unchanged inputs.
    """
    cap = capacity if isinstance(capacity, np.ndarray) else vec(capacity)
    slack = zeros() if slack_capacity is None else (
        slack_capacity if isinstance(slack_capacity, np.ndarray) else vec(slack_capacity)
    )  # fmt: skip
    tree.set_capacity(cap)
    root = tree.root
    root.entitlement = cap.astype(np.float64).copy()
    root.non_slack_entitlement = cap.astype(np.float64).copy()  # used only while the root is a leaf
    root.slack_entitlement = zeros()
    root.slack_entitlement[CPU] = slack[CPU]
    tree.aggregate()
    order = tree.pools()  # pre-order: a parent's entitlement is set before its children's split
    for node in order:
        split_entitlement(node)
    for node in order:
        split_slack(node)
