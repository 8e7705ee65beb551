"""The queue's verbs on the Scheduler actor, each forwarded to its door (who
may call which: see :class:`~legionrm.scheduler.door.SchedulerDoor`), as
:class:`~legionrm.scheduler.watch.calls.WorkCalls` does for the work's
results: a mixin, so the actor stays a thin shell."""

from __future__ import annotations

from typing import Any

from legionrm.models import RequestInfo


class QueueCalls:
    door: Any

    def hold(self, request_id: str, proof: Any = None) -> RequestInfo:
        """Hold a pending request (its owner or an administrator)."""
        return self.door.hold(request_id, proof)

    def release(self, request_id: str, proof: Any = None) -> RequestInfo:
        """Release a held request (an owner: only their own hold)."""
        return self.door.release(request_id, proof)

    def update(self, request_id: str, priority: int | None = None, qos: str | None = None,
               clear_priority: bool = False, proof: Any = None) -> RequestInfo:
        """Set a pending request's fixed priority or its QoS (administrators)."""
        return self.door.update(request_id, priority, qos, clear_priority, proof)

    def top(self, request_id: str, proof: Any = None) -> RequestInfo:
        """Put a pending request first (administrators)."""
        return self.door.top(request_id, proof)
