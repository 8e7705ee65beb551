"""Elastic jobs in the resource pools: :class:`PoolCharges`.

Elastic work goes through the same pools as ``scheduleObjects`` work: a job
is admitted at submission (one process), charged what it holds after each
cycle, and released when it is done.  A pool that cannot take a job's new
size keeps its last charge (the books never hold less than what was
admitted); the pools' entitlement does not yet cap the fair-share core's
growth.
"""

from __future__ import annotations

import logging

from legionrm.models import (
    ElasticJobRequest,
    Identity,
    ObjectRequest,
    Refusal,
    SchedulingRequest,
)
from legionrm.scheduler.ports import PoolGate

log = logging.getLogger(__name__)


def pool_id(job_id: str) -> str:
    """The id an elastic job's allocation is charged under in the pools."""
    return f"elastic:{job_id}"


def pool_gang(request: ElasticJobRequest, processes: int) -> SchedulingRequest:
    """An elastic job at ``processes`` processes, as the pools count work."""
    return SchedulingRequest(
        request_id=pool_id(request.job_id), identity=Identity(user=request.user, groups=request.groups),
        objects=(ObjectRequest(class_name=request.class_name, count=processes, cpus=request.cpus,
                               memory_gb=request.memory_gb, gpus=request.gpus),))


class PoolCharges:
    """What each elastic job is charged in the pools (processes), kept in step
    with what it holds.  Not thread-safe: the cycle calls it under its lock."""

    def __init__(self, pools: PoolGate) -> None:
        self.pools = pools
        self._jobs: dict[str, tuple[ElasticJobRequest, int]] = {}

    def admit(self, request: ElasticJobRequest) -> Refusal | None:
        """Admit a new job at one process; a Refusal when its pool cannot."""
        refusal = self.pools.admit(pool_gang(request, 1))
        if refusal is None:
            self._jobs[request.job_id] = (request, 1)
        return refusal

    def wanted(self, held: dict[str, int]) -> dict[str, int]:
        """The charge (processes, at least one) of each job of ``held`` whose
        charge :meth:`settle` would change: what the cycle writes first."""
        return {jid: max(1, n) for jid, n in held.items() if jid in self._jobs and max(1, n) != self._jobs[jid][1]}

    def settle(self, held: dict[str, int]) -> list[str]:
        """Charge each job what it holds now (at least one process); returns
        the jobs whose charge changed."""
        changed = []
        for jid, want in self.wanted(held).items():
            request, charged = self._jobs[jid]
            self.pools.release(pool_id(jid))
            changed.append(jid)
            if self.pools.admit(pool_gang(request, want)) is None:
                self._jobs[jid] = (request, want)
            elif charged > 0 and self.pools.admit(pool_gang(request, charged)) is not None:
                log.warning("the pools no longer admit elastic job %s at %d processes", jid, charged)
                self._jobs[jid] = (request, 0)
        return changed

    def charged(self, job_id: str) -> int:
        """The processes ``job_id`` is charged for now (0: not charged)."""
        item = self._jobs.get(job_id)
        return item[1] if item is not None else 0

    def restore(self, request: ElasticJobRequest, processes: int) -> None:
        """After a restart: charge the job ``processes`` again (release first:
        the pools may still hold its old charge).  When the pools refuse that
        size, one process; when they refuse even that, the job runs uncharged
        (logged) and the next settle tries again."""
        jid = request.job_id
        self.pools.release(pool_id(jid))
        for size in dict.fromkeys((processes, 1)):
            if self.pools.admit(pool_gang(request, size)) is None:
                self._jobs[jid] = (request, size)
                return
        self._jobs[jid] = (request, 0)
        log.warning("the pools no longer admit elastic job %s after a restart", jid)

    def release_others(self, jobs: set[str]) -> list[str]:
        """Release every ``elastic:`` allocation the pools hold for a job not in
        ``jobs`` (charged by a Scheduler that died before it wrote the job
        down); returns the allocation ids released."""
        held = getattr(self.pools, "held", None)
        if not callable(held):
            return []
        mine = {pool_id(j) for j in jobs}
        stray = sorted(h for h in held() if h.startswith("elastic:") and h not in mine)
        for rid in stray:
            self.pools.release(rid)
        return stray

    def release(self, job_id: str) -> None:
        """The job is done: its allocation goes back.  Idempotent."""
        self._jobs.pop(job_id, None)
        self.pools.release(pool_id(job_id))
