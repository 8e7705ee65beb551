"""Preemption: shrink fair-share jobs that hold more than their count.

A job sheds its least valuable processes first (investment order):

1. squatters (processes in a pool below the job's own) before residents;
2. a process still initializing before an initialized one;
3. two initializing: the one with less initialization time;
4. two initialized: the one with less investment (time on current work);
5. then the larger host first, then the youngest share (higher id).

An eviction, once published, is never taken back: the share stays on its
machine, flagged, until the exit is confirmed.  Shares already leaving are
not picked again.
"""

from __future__ import annotations

from legionrm.scheduler.fairshare.classes import SharePolicy
from legionrm.scheduler.fairshare.context import CycleContext
from legionrm.scheduler.fairshare.shares import Job, Share


def investment_key(ctx: CycleContext, job: Job, s: Share) -> tuple:
    """Sort key: smallest first is evicted first."""
    home = ctx.pools[ctx.classes.classes[job.cls].nodepool]
    m = ctx.machines[s.machine]
    squatter = ctx.pools[m.nodepool] is not home
    if s.initialized:
        inv = (1, s.investment_ms)
    else:
        inv = (0, s.init_time_ms)
    return (0 if squatter else 1, inv, -m.memory_gb, -s.id)


def evict_share(ctx: CycleContext, job: Job, s: Share) -> None:
    """Publish the eviction of one share (idempotent)."""
    if s.evicted:
        return
    s.evicted = True
    ctx.evictions.append((job.id, s.id, s.machine))


def shrink_by(ctx: CycleContext, job: Job, count: int) -> int:
    """Evict ``count`` running processes of ``job`` in investment order; returns how many."""
    cands = [s for s in job.shares.values() if not s.evicted and not s.pending and not s.fixed]
    cands.sort(key=lambda s: investment_key(ctx, job, s))
    done = 0
    for s in cands[: max(0, count)]:
        evict_share(ctx, job, s)
        done += 1
    return done


def do_evictions(ctx: CycleContext) -> None:
    """Every FAIR_SHARE job holding more than its count sheds the surplus
    (pools visited children first, descending search order)."""
    for pool in ctx.top.post_order(descending=True):
        for rc in ctx.classes.classes.values():
            if rc.nodepool != pool.name or rc.policy is not SharePolicy.FAIR_SHARE:
                continue
            for j in sorted(ctx.jobs_by_class.get(rc.name, []), key=lambda j: j.age_key()):
                surplus = j.current() - j.counted
                if surplus > 0:
                    shrink_by(ctx, j, surplus)
