"""The Scheduler as a Ray actor: a thin shell over :class:`Scheduler`.

Threaded (``max_concurrency``) because the Enactor calls back for approval
while a ``scheduleObjects`` call is waiting on it, and because several
users' requests may be planned at once.  The adapters below are the only
places this shell talks to other actors.
"""

from __future__ import annotations

from typing import Any

import ray

from legionrm.collection.collection import CollectionSnapshot
from legionrm.models import (
    ClassSpec,
    EnactRequest,
    EnactResult,
    Identity,
    ObjectRequest,
    ScheduleProposal,
    SchedulerResponse,
    ScheduleSuite,
    SchedulingRequest,
)
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.scheduler import PoolGate, Scheduler

CALL_TIMEOUT_S = 120.0


class RemoteCollection:
    """``snapshot()`` from a Collection actor."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def snapshot(self) -> CollectionSnapshot:
        return ray.get(self.handle.snapshot.remote(), timeout=CALL_TIMEOUT_S)


class RemoteEnactor:
    """``enact_schedule`` on an Enactor actor, with this scheduler as approver."""

    def __init__(self, handle: Any, approver: tuple[Any, str] | None = None) -> None:
        self.handle = handle
        self.approver = approver

    def enact_schedule(self, schedules: EnactRequest) -> EnactResult:
        return ray.get(self.handle.enact_schedule.remote(schedules, self.approver), timeout=CALL_TIMEOUT_S)


@ray.remote(num_cpus=0, max_concurrency=8)
class SchedulerActor:
    def __init__(self, collection: Any, enactor: Any, classes: list[ClassSpec] | None = None,
                 pools: PoolGate | None = None, name: str = "scheduler") -> None:
        self_handle = ray.get_runtime_context().current_actor
        self.core = Scheduler(
            RemoteCollection(collection), RemoteEnactor(enactor, (self_handle, "approve")),
            Planner({c.name: c for c in classes or ()}), pools, name=name,
        )

    def ping(self) -> str:
        return "ok"

    def scheduleObjects(self, request: SchedulingRequest) -> SchedulerResponse:
        return self.core.scheduleObjects(request)

    def make_schedules(self, request: SchedulingRequest) -> ScheduleSuite:
        return self.core.make_schedules(request).suite()

    def getCandidatePlacements(self, class_info: ObjectRequest, caller: Identity) -> list[str]:
        return self.core.getCandidatePlacements(class_info, caller)

    def explain(self, request: SchedulingRequest, host: str) -> str:
        return self.core.explain(request, host)

    def approve(self, proposal: ScheduleProposal) -> bool:
        """Legion's step 6: the enactor reports a fully reserved schedule and
        the scheduler confirms it (the pool admission was charged already)."""
        return True

    def getCollection(self) -> Any:
        return self.core.getCollection().handle

    def setCollection(self, handle: Any) -> Any:
        return self.core.setCollection(RemoteCollection(handle)).handle

    def getEnactor(self) -> Any:
        return self.core.getEnactor().handle

    def setEnactor(self, handle: Any) -> Any:
        self_handle = ray.get_runtime_context().current_actor
        return self.core.setEnactor(RemoteEnactor(handle, (self_handle, "approve"))).handle

    def instances(self) -> list:
        return list(self.core.instances.values())
