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
    """Submits and cancels to each scheduler actor over ``plane``, in batches per
    scheduler (see the module doc); ``to`` names the actor (``scheduler:NAME``)."""

    def __init__(self, plane: ControlPlane, target: str = "scheduler", *, window_s: float = 0.0,
                 max_batch: int = 256) -> None:
        self.plane, self.target = plane, target
        self._window_s, self._max_batch = window_s, max_batch
        self._submits: dict[str, Collector[tuple[str, SchedulingRequest]]] = {}
        self._cancels: dict[str, Collector[tuple[str, str, str]]] = {}

    def _collector(self, kind: dict[str, Any], method: str, to: str) -> Collector[Any]:
        if to not in kind:  # one per scheduler: a batch is one call to one actor
            async def send(items: list[Any]) -> list[Any]:
                # None: the gateway agent signs the batch as itself; each item names its user
                return await self.plane.call(None, to, method, {"items": items})  # type: ignore[arg-type,no-any-return]
            kind[to] = Collector(send, window_s=self._window_s, max_batch=self._max_batch)
        return kind[to]  # type: ignore[no-any-return]

    async def submit(self, user: str, request: SchedulingRequest, to: str | None = None) -> SchedulerResponse:
        """``request`` submitted as ``user``'s to ``to`` (default: :attr:`target`); its refusal or error raised."""
        return await self._collector(self._submits, "submit_batch", to or self.target).call(  # type: ignore[no-any-return]
            (user, request))

    async def cancel(self, user: str, request_id: str, reason: str, to: str | None = None) -> RequestInfo:
        """``request_id`` cancelled by ``user`` at ``to`` (default: :attr:`target`); its refusal or error raised."""
        return await self._collector(self._cancels, "cancel_batch", to or self.target).call(  # type: ignore[no-any-return]
            (user, request_id, reason))


__all__ = ["BatchMismatch", "Collector", "Intake"]
