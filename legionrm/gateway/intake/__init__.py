"""The gateway's intake: the submits and cancels that arrive together go to
the Scheduler as one call each way, and its fast signature check.

:class:`Intake` holds one :class:`~legionrm.gateway.intake.collector.Collector`
for submits and one for cancels over the control plane: a batch is one
``submit_batch`` (``cancel_batch``) call to the Scheduler, signed once by
the gateway agent, each item naming the user whose signed HTTP call it is
(:mod:`legionrm.scheduler.intake.door` checks them).  The Scheduler writes
a batch with one durable write and answers each item; each caller gets its
own answer.  :mod:`~legionrm.gateway.intake.quickcheck` verifies the
signatures legionrm's own clients make without the general RFC 9421
parser.
"""

from __future__ import annotations

from typing import Any

from legionrm.gateway.intake.collector import BatchMismatch, Collector
from legionrm.gateway.plane import ControlPlane
from legionrm.models import RequestInfo, SchedulerResponse, SchedulingRequest


class Intake:
    """Submits and cancels to ``target`` (the Scheduler) over ``plane``, in batches (see the module doc)."""

    def __init__(self, plane: ControlPlane, target: str = "scheduler", *, window_s: float = 0.0,
                 max_batch: int = 256) -> None:
        self.plane, self.target = plane, target
        self.submits: Collector[tuple[str, SchedulingRequest]] = Collector(
            self._submit_batch, window_s=window_s, max_batch=max_batch)
        self.cancels: Collector[tuple[str, str, str]] = Collector(
            self._cancel_batch, window_s=window_s, max_batch=max_batch)

    async def submit(self, user: str, request: SchedulingRequest) -> SchedulerResponse:
        """``request`` submitted as ``user``'s (its refusal or error raised)."""
        return await self.submits.call((user, request))  # type: ignore[no-any-return]

    async def cancel(self, user: str, request_id: str, reason: str) -> RequestInfo:
        """``request_id`` cancelled by ``user`` (its refusal or error raised)."""
        return await self.cancels.call((user, request_id, reason))  # type: ignore[no-any-return]

    async def _submit_batch(self, items: list[tuple[str, SchedulingRequest]]) -> list[Any]:
        # None: the gateway agent signs the batch as itself; each item names its user
        return await self.plane.call(None, self.target, "submit_batch", {"items": items})  # type: ignore[arg-type,no-any-return]

    async def _cancel_batch(self, items: list[tuple[str, str, str]]) -> list[Any]:
        return await self.plane.call(None, self.target, "cancel_batch", {"items": items})  # type: ignore[arg-type,no-any-return]


__all__ = ["BatchMismatch", "Collector", "Intake"]
