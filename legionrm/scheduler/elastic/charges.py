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

    def settle(self, held: dict[str, int]) -> None:
        """Charge each job what it holds now (at least one process)."""
        for jid, processes in held.items():
            if jid not in self._jobs:
                continue
            request, charged = self._jobs[jid]
            want = max(1, processes)
            if want == charged:
                continue
            self.pools.release(pool_id(jid))
            if self.pools.admit(pool_gang(request, want)) is None:
                self._jobs[jid] = (request, want)
            elif self.pools.admit(pool_gang(request, charged)) is not None:
                log.warning("the pools no longer admit elastic job %s at %d processes", jid, charged)

    def release(self, job_id: str) -> None:
        """The job is done: its allocation goes back.  Idempotent."""
        self._jobs.pop(job_id, None)
        self.pools.release(pool_id(job_id))
