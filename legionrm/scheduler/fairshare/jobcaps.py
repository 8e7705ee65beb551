"""Job caps (DUCC RmJob.initJobCap / getProjectedCap) and allotment.

The cap is the number of processes a job could use *right now* on an
unbounded cluster: start from remaining work / threads, never below what it
holds, bounded by ``max_processes``; then whittled down by prediction, the
initialization cap (before a work item has finished) and expand-by-doubling.
FIXED_SHARE and RESERVE jobs go through the same steps with the global rules.

Allotment bounds non-preemptable work per user: the user's
``max_allotment_gb`` if set, else the global allotment (unlimited by default).
"""

from __future__ import annotations

import math

from legionrm.scheduler.fairshare.classes import (
    ResourceClass,
    RmSettings,
    SharePolicy,
    UserSpec,
)
from legionrm.scheduler.fairshare.shares import Job

UNBOUNDED = 2**62


def projected_cap(job: Job, rc: ResourceClass, settings: RmSettings) -> int:
    """Processes the job can use before it would finish anyway; 0 means "unknown".

    While initializing (no time per item yet) nothing is known.  Otherwise the
    work expected to be done by the time a new process is initialized
    (average init time + one scheduling epoch + the fudge) is deducted.
    """
    if job.init_wait:
        return 0
    current = job.current()
    init_ms = job.init_time_ms if (job.init_time_ms > 0 and job.initialized()) else 0.0
    target = init_ms + settings.epoch_ms + rc.prediction_fudge_ms
    rate = current * job.threads / job.time_per_item_ms
    done = int(math.floor(target * rate + 0.5))
    future = max(job.work_items - done, 0)
    answer = -(-future // job.threads)
    return answer if answer > 0 else current


def init_job_cap(job: Job, rc: ResourceClass, settings: RmSettings) -> int:
    """The cap for this cycle (sets and returns ``job.cap``)."""
    current = job.current()
    if job.refused:
        job.cap = 0
        return 0
    if job.completed:
        job.cap = current
        return current
    if job.single:
        c = 1
    else:
        c = -(-max(job.work_items, 0) // max(job.threads, 1))
    c = max(c, current)
    maxp = job.max_processes
    if maxp is None:
        base = c
    elif maxp < 0:
        base = min(current, c)
    else:
        base = min(maxp, c)
    base = max(base, 0)
    projected = projected_cap(job, rc, settings) if rc.prediction else 0
    if projected == 0:
        projected = base
    potential = base
    if rc.prediction and projected < base:
        potential = max(projected, current)
    icap = rc.initialization_cap
    if job.single:
        cap = potential
    elif job.init_wait and icap > 0:
        cap = min(potential, icap)
    elif job.init_wait:
        cap = potential
    elif rc.expand_by_doubling:
        cap = min(base, max(1, icap)) if current == 0 else min(potential, 2 * current)
    else:
        cap = potential
    job.cap = max(0, cap)
    return job.cap


def allotment_gb(user: UserSpec | None, settings: RmSettings) -> float | None:
    """A user's allotment for non-preemptable work, in GB: their own
    ``max_allotment_gb``, else the global one; None when unlimited."""
    if user is not None and user.max_allotment_gb is not None:
        return user.max_allotment_gb
    return settings.global_allotment_gb


def allotment_limit_q(limit_gb: float | None, quantum_gb: float) -> int:
    """An allotment (:func:`allotment_gb`) in qshares (UNBOUNDED when unlimited)."""
    if limit_gb is None:
        return UNBOUNDED
    return int(math.floor(limit_gb / quantum_gb + 1e-9))


def non_preemptable_used_q(jobs: list[Job], classes: dict[str, ResourceClass]) -> int:
    """Qshares a user's non-FAIR_SHARE work holds (running and pending)."""
    return sum(
        j.current() * j.order for j in jobs if classes[j.cls].policy is not SharePolicy.FAIR_SHARE
    )


def allotment_for_job(job: Job, limit_q: int, used_q: int) -> tuple[int, bool]:
    """(granted processes, deferred) for a multi-process non-preemptable job."""
    current = job.current()
    if limit_q >= UNBOUNDED:
        return max(job.cap, current), False
    additional = max(0, limit_q - used_q)
    extra = additional // job.order
    if extra == 0:
        return current, current == 0
    return min(job.cap, current + extra), False


def single_allotment_ok(job: Job, limit_q: int, used_q: int) -> bool:
    """May a single-process request (service, managed, reservation) start now?"""
    return limit_q >= UNBOUNDED or used_q + job.order <= limit_q
