"""One scheduling pass over one top-level nodepool tree (DUCC NodepoolScheduler).

Order of operations, per tree:

1. caps for every job (jobcaps);
2. tables from schedulable machines less non-preemptable work;
3. How Much per priority group, best first (fair share, fixed, reserve),
   each group's counts deducted before the next group counts;
4. tables again, now less *every* share (evicting ones too);
5. needy jobs from the last defragmentation expand first (every group);
6. What Of per group;
7. fair-share jobs above their count shrink (investment order);
8. defragmentation.

The pass mutates jobs and machines through the :class:`CycleContext`; the
caller (:mod:`legionrm.scheduler.fairshare.core`) owns the state and reports.
"""

from __future__ import annotations

from legionrm.scheduler.fairshare.apportion import how_much_fair_share
from legionrm.scheduler.fairshare.classes import (
    ResourceClass,
    SharePolicy,
)
from legionrm.scheduler.fairshare.context import CycleContext
from legionrm.scheduler.fairshare.defrag import detect_fragmentation, do_final_evictions
from legionrm.scheduler.fairshare.jobcaps import (
    allotment_for_job,
    allotment_gb,
    init_job_cap,
    single_allotment_ok,
)
from legionrm.scheduler.fairshare.nodepool import NodePool
from legionrm.scheduler.fairshare.preemption import do_evictions
from legionrm.scheduler.fairshare.shares import Job, Machine, reserve_max_order
from legionrm.scheduler.fairshare.whatof import (
    expand_needy_jobs,
    what_of_fair_share,
    what_of_fixed,
    what_of_reserve,
)

# Reasons carry DUCC's own wording (its key phrases), so they read the same.
NO_RESOURCES = "Deferred: insufficient resources in nodepool {pool}"
NO_MEMORY = "Deferred: no hosts in nodepool {pool} have sufficient memory"
ALLOTMENT = "Deferred: allotment of {limit} is exceeded by user {user}"
NO_SIZE = "Deferred: no hosts of the correct size in nodepool {pool}"
EXHAUSTED = "Deferred: resources are exhausted in nodepool {pool}"


def how_much_fixed(ctx: CycleContext, group: list[ResourceClass]) -> None:
    for rc in group:
        pool = ctx.pools[rc.nodepool]
        for j in sorted(ctx.jobs_by_class.get(rc.name, []), key=lambda j: j.age_key()):
            j.deferred = False
            current = j.current()
            if j.completed:
                j.counted = current
                continue
            local = ctx.tables.nshares_local(pool)
            have = int(local[j.order]) if j.order < ctx.tables.L else 0
            limit, used = ctx.user_limit_q(j.user), ctx.user_np_used_q(j.user)
            if j.single:
                if current >= 1:
                    j.counted = current
                    continue
                j.counted = 0
                if have == 0:
                    _defer_no_room(ctx, j, pool)
                elif not single_allotment_ok(j, limit, used):
                    j.deferred, j.reason = True, _allotment_reason(ctx, j)
                else:
                    j.counted = 1
                    ctx.tables.count_out(pool, j.order, 1)
                continue
            if have == 0 and current == 0:
                j.counted = 0
                _defer_no_room(ctx, j, pool)
                continue
            granted, deferred = allotment_for_job(j, limit, used)
            j.counted = granted
            if deferred:
                j.deferred, j.reason = True, _allotment_reason(ctx, j)
                continue
            ctx.tables.count_out(pool, j.order, granted - current)


def _allotment_reason(ctx: CycleContext, j: Job) -> str:
    gb = allotment_gb(ctx.users.get(j.user), ctx.settings)
    return ALLOTMENT.format(limit=f"{gb:g}GB" if gb is not None else "unlimited", user=j.user)


def _defer_no_room(ctx: CycleContext, j: Job, pool: NodePool) -> None:
    j.deferred = True
    big = any(m.order >= j.order for m in pool.machines.values() if m.schedulable)
    j.reason = (NO_RESOURCES if big else NO_MEMORY).format(pool=pool.name)


def _reserve_max_order(ctx: CycleContext, j: Job) -> int:
    if j.order_upgraded:
        return j.order
    if j.kind == "reservation":
        return reserve_max_order(j.order, j.memory_gb, ctx.quantum_gb, ctx.settings.reserve_overage_gb)
    return j.order


def count_freeable_machines(ctx: CycleContext, j: Job, pool: NodePool, needed: int) -> int:
    """Machines a reservation can have: free ones first (smallest first), then ones
    holding only fair-share work (to be preempted).  The first pick fixes the
    reservation's order.  Each pick leaves the tables at once, so lower
    priorities do not count the same machine in this cycle."""
    lo, hi = j.order, _reserve_max_order(ctx, j)
    cands = [
        m for m in pool.machines.values()
        if m.schedulable and lo <= m.order <= hi and m.name not in ctx.picked
    ]
    cands.sort(key=lambda m: (0 if not m.shares else 1, m.order, m.name))
    got = 0
    actual = j.order if j.order_upgraded else 0
    for m in cands:
        if got >= needed:
            break
        if actual and m.order != actual:
            continue
        if any((s.fixed or not ctx.classes.classes.get(ctx.jobs[s.job].cls, None) or
                not ctx.classes.classes[ctx.jobs[s.job].cls].preemptable) and not s.evicted
               for s in m.shares.values() if s.job in ctx.jobs):
            continue
        if m.shares:
            ctx.preemptables.setdefault(j.id, set()).add(m.name)
        ctx.picked.add(m.name)
        ctx.tables.rearrange(m.name, m.order, whole=True)
        got += 1
        if not actual:
            actual = m.order
            if m.order != j.order:
                j.order = m.order
            j.order_upgraded = True
    return got


def how_much_reserve(ctx: CycleContext, group: list[ResourceClass]) -> None:
    for rc in group:
        pool = ctx.pools[rc.nodepool]
        for j in sorted(ctx.jobs_by_class.get(rc.name, []), key=lambda j: j.age_key()):
            j.deferred = False
            current = j.current()
            if j.completed or (j.single and current >= 1):
                j.counted = current
                continue
            limit, used = ctx.user_limit_q(j.user), ctx.user_np_used_q(j.user)
            if j.single:
                want = 1
                if not single_allotment_ok(j, limit, used):
                    j.counted, j.deferred, j.reason = 0, True, _allotment_reason(ctx, j)
                    continue
            else:
                granted, deferred = allotment_for_job(j, limit, used)
                if deferred:
                    j.counted, j.deferred, j.reason = current, True, _allotment_reason(ctx, j)
                    continue
                want = granted - current
            lo, hi = j.order, _reserve_max_order(ctx, j)
            # DUCC's countReservables: machines of the size on the pool's lists (not dead, not varied off)
            if not any(lo <= m.order <= hi and not (m.dead or m.varied_off) for m in pool.machines.values()):
                j.counted, j.deferred, j.reason = current, True, NO_SIZE.format(pool=pool.name)
                continue
            got = count_freeable_machines(ctx, j, pool, want) if want > 0 else 0
            j.counted = current + got
            if got == 0 and current == 0:
                j.deferred, j.reason = True, EXHAUSTED.format(pool=pool.name)


# --- the pass -------------------------------------------------------------------------


def schedule_tree(ctx: CycleContext) -> None:
    """Run one DUCC scheduling pass over ``ctx.top``'s tree (mutates state)."""
    cls = ctx.classes.classes
    for name, jobs in ctx.jobs_by_class.items():
        for j in jobs:
            init_job_cap(j, cls[name], ctx.settings)
    groups = [
        [c for c in g if ctx.tree_has_pool(c.nodepool)] for g in ctx.classes.groups()
    ]
    groups = [g for g in groups if g]

    def np_free(m: Machine) -> int:
        return m.order - sum(s.order for s in m.shares.values() if s.fixed) - sum(m.blacklist.values())

    ctx.tables.reset(np_free)
    for g in groups:
        pol = g[0].policy
        if pol is SharePolicy.FAIR_SHARE:
            how_much_fair_share(ctx, g)
        elif pol is SharePolicy.FIXED_SHARE:
            how_much_fixed(ctx, g)
        else:
            how_much_reserve(ctx, g)

    ctx.tables.reset(lambda m: m.free())
    for g in groups:
        expand_needy_jobs(ctx, g)
    for g in groups:
        pol = g[0].policy
        if pol is SharePolicy.FAIR_SHARE:
            what_of_fair_share(ctx, g)
        elif pol is SharePolicy.FIXED_SHARE:
            what_of_fixed(ctx, g)
        else:
            what_of_reserve(ctx, g)
    do_evictions(ctx)
    if ctx.settings.defragmentation:
        needy = detect_fragmentation(ctx)
        if needy:
            do_final_evictions(ctx, needy)
