"""Defragmentation: make room for jobs the layout starves.

After What Of and the evictions, a job whose count is above what it holds is
*potentially needy*: fair-share jobs only while they hold fewer than the
fragmentation threshold and fewer than their pure fair share (in qshares,
compared with processes, as DUCC does), and then for at most the threshold;
non-preemptable jobs for whatever they lack.  Every potentially needy job
goes on the needy list, served first next cycle.  Against the holes that will
exist once pending evictions finish, a job the holes cannot satisfy is
*actually needy*, and processes are taken from the rich for it: initialized
fair-share jobs of users ordered by wealth, holding at least the threshold,
in compatible pools, not of a better priority (falling back to the poor when
the needy job has the better priority), on machines where clearing them
makes a hole of the needy job's order.
"""

from __future__ import annotations

import numpy as np

from legionrm.scheduler.fairshare.classes import SharePolicy
from legionrm.scheduler.fairshare.context import CycleContext
from legionrm.scheduler.fairshare.nodepool import NodePool
from legionrm.scheduler.fairshare.preemption import evict_share
from legionrm.scheduler.fairshare.shares import (
    Job,
    Share,
    nshares_from_v,
    remove_shares_by_order,
)

WAIT_DEFRAG = "Waiting for defragmentation"


def detect_fragmentation(ctx: CycleContext) -> dict[str, int]:
    """Put potentially needy jobs on the needy list; return the actually needy ones
    with how many processes each still lacks."""
    thr = ctx.settings.fragmentation_threshold
    potential: dict[str, int] = {}
    for rc in ctx.classes.classes.values():
        if not ctx.tree_has_pool(rc.nodepool):
            continue
        for j in ctx.jobs_by_class.get(rc.name, []):
            if j.refused or j.deferred or j.completed:
                continue
            current = j.current()
            needed = j.counted - current
            if rc.policy is SharePolicy.FAIR_SHARE:
                if current >= thr or current >= j.pure_fair_share or needed < 0:
                    needed = 0
                else:
                    needed = min(needed, thr)
            if needed > 0:
                potential[j.id] = needed
    if not potential:
        return {}
    L = ctx.tables.L
    # holes as they will be once pending evictions have left, per pool and ancestors
    vt = {p.name: np.zeros(L, dtype=np.int64) for p in ctx.top.subtree()}
    for p in ctx.top.subtree():
        for m in p.machines.values():
            if not m.schedulable:
                continue
            hole = min(m.free() + sum(s.order for s in m.shares.values() if s.evicted), L - 1)
            if hole <= 0:
                continue
            q: NodePool | None = p
            while q is not None:
                vt[q.name][hole] += 1
                q = q.parent
    nt = {k: nshares_from_v(v) for k, v in vt.items()}
    needy: dict[str, int] = {}
    for p in ctx.top.post_order():
        jobs = [
            ctx.jobs[jid] for jid in potential if ctx.classes.classes[ctx.jobs[jid].cls].nodepool == p.name
        ]
        for j in sorted(jobs, key=lambda j: j.age_key()):
            need = potential[j.id]
            if j.id not in ctx.needy:
                ctx.needy.append(j.id)
            avail = int(nt[p.name][j.order]) if j.order < L else 0
            if avail >= need:
                continue  # DUCC leaves the table as it is here
            needy[j.id] = need - avail
            if avail > 0:
                q = p
                while q is not None:
                    remove_shares_by_order(vt[q.name], avail, j.order)
                    nt[q.name] = nshares_from_v(vt[q.name])
                    q = q.parent
    return needy


def _compatible(ctx: CycleContext, a: str, b: str) -> bool:
    pa, pb = ctx.pools[a], ctx.pools[b]
    return pa.contains(pb) or pb.contains(pa)


def _forceable(s: Share) -> bool:
    return not s.fixed and not s.evicted


def do_final_evictions(ctx: CycleContext, needy: dict[str, int]) -> None:
    thr = ctx.settings.fragmentation_threshold
    for nid in sorted(needy, key=lambda i: ctx.jobs[i].age_key()):
        nj = ctx.jobs[nid]
        nrc = ctx.classes.classes[nj.cls]
        rich: list[Job] = []
        poor: list[Job] = []
        for rc in ctx.classes.classes.values():
            if rc.policy is not SharePolicy.FAIR_SHARE or not _compatible(ctx, rc.nodepool, nrc.nodepool):
                continue
            if rc.priority < nrc.priority:
                continue  # never take from a better priority
            for j in ctx.jobs_by_class.get(rc.name, []):
                if j.id == nid or j.current() == 0:
                    continue
                is_poor = j.id in needy or not j.initialized() or j.current() < thr
                (poor if is_poor else rich).append(j)
        given = _take_from_the_rich(ctx, nj, needy[nid], rich)
        poor_worse = [j for j in poor if ctx.classes.classes[j.cls].priority > nrc.priority]
        if given < needy[nid] and poor_worse:
            given += _take_from_the_rich(ctx, nj, needy[nid] - given, rich + poor_worse)
        if nj.current() == 0:
            nj.reason = WAIT_DEFRAG


def _take_from_the_rich(ctx: CycleContext, nj: Job, needed: int, donors: list[Job]) -> int:
    if not donors or needed <= 0:
        return 0
    order = nj.order
    rc = ctx.classes.classes[nj.cls]
    pool = ctx.pools[rc.nodepool]
    donor_ids = {j.id for j in donors}
    wealth: dict[str, int] = {}
    for j in donors:
        wealth[j.user] = wealth.get(j.user, 0) + j.current() * j.order
    reserve = rc.policy is SharePolicy.RESERVE
    # Fair-share work may squat, so its subtree is fair game; non-preemptable
    # work never leaves its own pool, so only that pool's machines help it.
    machines = pool.all_machines() if rc.preemptable else pool.machines.values()
    eligible = []
    for m in machines:
        if not m.schedulable or m.order < order or (reserve and m.order != order):
            continue
        forceable = [s for s in m.shares.values() if _forceable(s) and s.job in donor_ids]
        if reserve and any(s.job not in donor_ids and not s.evicted for s in m.shares.values()):
            continue
        if m.free() + sum(s.order for s in forceable) >= order:
            eligible.append(m)
    if reserve and len(eligible) < needed:
        return 0

    def machine_key(m):
        richest = max((wealth.get(ctx.jobs[s.job].user, 0) for s in m.shares.values() if _forceable(s) and s.job in donor_ids), default=0)
        return (-richest, -m.memory_gb, m.name)

    given = 0
    while given < needed:
        eligible.sort(key=machine_key)
        cleared_round = 0
        g = 0
        for m in eligible:
            shares = [s for s in m.shares.values() if _forceable(s) and s.job in donor_ids]
            shares.sort(key=lambda s: (-wealth.get(ctx.jobs[s.job].user, 0), s.initialized, s.investment_ms, -s.id))
            g = m.free()
            picked: list[Share] = []
            for s in shares:
                g += s.order
                if s.order == order:
                    picked.insert(0, s)
                else:
                    picked.append(s)
                if g >= order:
                    break
            if g < order:
                continue
            g = m.free()
            for s in picked:
                owner = ctx.jobs[s.job]
                g += s.order
                cleared_round += 1
                _clear_share(ctx, s, owner, nj)
                wealth[owner.user] = wealth.get(owner.user, 0) - s.order
                if g >= order:
                    break
            break
        if cleared_round == 0:
            break
        given += g // order
    return given


def _clear_share(ctx: CycleContext, s: Share, owner: Job, nj: Job) -> None:
    """Reassign a same-size pending share to the needy job, cancel a pending one of
    another size, or evict a running one."""

    if s.pending:
        if s.order == nj.order:
            ctx.reassign_share(s, owner, nj)
        else:
            ctx.cancel_share(s, owner)
    else:
        evict_share(ctx, owner, s)
