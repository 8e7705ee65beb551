"""What Of: put the counted processes on machines.

Best fit, oldest job first: for a job of order ``o`` the holes of size
``o, o+1, ...`` are searched in turn, and each machine found is filled
vertically with as many processes as fit and are still needed.  Fair-share
work fills its own pool, then squats in subpools (children ascending,
recursively); since children are expanded before parents, residents take
their pool before squatters.  Non-preemptable work never leaves its pool;
FIXED_SHARE first tries hosts free of other jobs (horizontal), then stacks.
Reservations take whole free machines of exactly their order, evicting the
fair-share work on the machines How Much chose if none is free.

Space held by shares being evicted stays occupied until the exit is
confirmed (the tables are built from every share on the machine).
"""

from __future__ import annotations

from legionrm.scheduler.fairshare.classes import SharePolicy
from legionrm.scheduler.fairshare.context import CycleContext
from legionrm.scheduler.fairshare.nodepool import NodePool
from legionrm.scheduler.fairshare.preemption import evict_share
from legionrm.scheduler.fairshare.shares import Job

WAIT_PREEMPT = "Waiting for preemptions"


def _fill(ctx: CycleContext, job: Job, pool: NodePool, needed: int, fixed: bool, only_free_of_jobs: bool) -> int:
    """Place up to ``needed`` processes in ``pool`` (local machines only); returns placed."""
    placed = 0
    tables = ctx.tables
    for size in range(job.order, tables.L):
        if needed <= 0:
            break
        # each machine visited takes at least one process (its free space is ``size`` >= the order),
        # so without the skip no more than ``needed`` machines are visited: snapshot only those
        for name in tables.machines_with_free(pool, size, None if only_free_of_jobs else needed):
            if needed <= 0:
                break
            if only_free_of_jobs and any(
                ctx.jobs[s.job].kind != "service" for s in ctx.machines[name].shares.values() if s.job in ctx.jobs
            ):
                continue
            fit = min(needed, tables.free[name] // job.order)
            for _ in range(fit):
                ctx.new_share(job, name, job.order, fixed=fixed)
            needed -= fit
            placed += fit
    return placed


def find_shares(ctx: CycleContext, job: Job, horizontal_first: bool = False) -> int:
    """DUCC findShares: place ``counted - current`` processes; returns how many were placed."""
    needed = job.counted - job.current()
    if needed <= 0:
        return 0
    rc = ctx.classes.classes[job.cls]
    pool = ctx.pools[rc.nodepool]
    fixed = not rc.preemptable
    # DUCC's horizontal pass avoids hosts holding a share of the same service id.
    # Every non-service process has service id 0, so a job (or managed process)
    # avoids every host with another non-service process; a service instance is
    # the only instance of its service here, so it avoids nothing: plain best fit.
    if horizontal_first and job.kind != "service":
        got = _fill(ctx, job, pool, needed, fixed, only_free_of_jobs=True)
        if got > 0:
            return got
    got = _fill(ctx, job, pool, needed, fixed, only_free_of_jobs=False)
    if rc.policy is SharePolicy.FAIR_SHARE:
        stack = pool.children_ascending()
        while stack and got < needed:
            child = stack.pop(0)
            got += _fill(ctx, job, child, needed - got, fixed, only_free_of_jobs=False)
            stack = child.children_ascending() + stack
    return got


def do_expansion(ctx: CycleContext, jobs: list[Job]) -> None:
    """Expand each job (in the given order) toward its count."""
    for j in jobs:
        if j.completed or j.refused:
            continue
        j.deferred = False
        find_shares(ctx, j)
        if j.current() == 0:
            j.reason = WAIT_PREEMPT


def expansion_order(jobs: list[Job]) -> list[Job]:
    """Oldest first; on equal age the larger order first; then the stable id."""
    return sorted(jobs, key=lambda j: (j.submit, -j.order, j.seq, j.id))


def what_of_fair_share(ctx: CycleContext, group) -> None:
    names = {c.name for c in group}
    for pool in ctx.top.post_order():
        jobs = [
            j for c in group if c.nodepool == pool.name and c.name in names for j in ctx.jobs_by_class.get(c.name, [])
        ]
        if jobs:
            do_expansion(ctx, expansion_order(jobs))


def what_of_fixed(ctx: CycleContext, group) -> None:
    for c in group:
        for j in sorted(ctx.jobs_by_class.get(c.name, []), key=lambda j: j.age_key()):
            if j.refused or j.deferred or j.completed or j.current() >= j.counted:
                continue
            find_shares(ctx, j, horizontal_first=True)
            if j.current() == 0:
                j.reason = WAIT_PREEMPT


def allocate_for_reservation(ctx: CycleContext, job: Job) -> int:
    """DUCC findMachines: whole free machines of exactly the job's order.

    If fewer are free than needed, the fair-share work on the machines How
    Much marked as freeable is evicted (only shares of jobs above their count).
    """
    needed = job.counted - job.current()
    if needed <= 0:
        return 0
    rc = ctx.classes.classes[job.cls]
    pool = ctx.pools[rc.nodepool]
    tables = ctx.tables
    free = [n for n in tables.machines_with_free(pool, job.order) if tables.full.get(n) and ctx.machines[n].order == job.order]
    if len(free) < needed:
        setup_preemptions(ctx, job)
    placed = 0
    for name in free:
        if placed >= needed:
            break
        ctx.new_share(job, name, job.order, fixed=True, whole=True)
        placed += 1
    if job.current() == 0:
        job.reason = WAIT_PREEMPT
    return placed


def setup_preemptions(ctx: CycleContext, job: Job) -> None:

    for name in sorted(ctx.preemptables.get(job.id, ())):
        m = ctx.machines[name]
        if m.order != job.order:
            continue
        for s in sorted(m.shares.values(), key=lambda s: s.id):
            owner = ctx.jobs.get(s.job)
            if owner is None or s.fixed or s.evicted or s.pending:
                continue
            if owner.current() > owner.counted:
                evict_share(ctx, owner, s)


def what_of_reserve(ctx: CycleContext, group) -> None:
    for c in group:
        for j in sorted(ctx.jobs_by_class.get(c.name, []), key=lambda j: j.age_key()):
            if j.refused or j.deferred or j.completed:
                continue
            allocate_for_reservation(ctx, j)  # places counted - current more, if any


def expand_needy_jobs(ctx: CycleContext, group) -> None:
    """Jobs defragmentation put on the needy list last cycle expand before anyone else."""
    if not ctx.needy:
        return
    names = {c.name for c in group}
    for pool in ctx.top.post_order():
        mine = []
        for jid in list(ctx.needy):
            j = ctx.jobs.get(jid)
            if j is None or j.completed or j.refused:
                ctx.needy.remove(jid)
                continue
            rc = ctx.classes.classes.get(j.cls)
            if rc is None or rc.name not in names or rc.nodepool != pool.name:
                continue
            mine.append(j)
            ctx.needy.remove(jid)
        mine.sort(key=lambda j: j.age_key())
        for j in mine:
            rc = ctx.classes.classes[j.cls]
            if rc.policy is SharePolicy.RESERVE:
                allocate_for_reservation(ctx, j)
        for j in mine:
            if ctx.classes.classes[j.cls].policy is SharePolicy.FIXED_SHARE and not j.deferred:
                find_shares(ctx, j)
        do_expansion(ctx, [j for j in mine if ctx.classes.classes[j.cls].policy is SharePolicy.FAIR_SHARE])
