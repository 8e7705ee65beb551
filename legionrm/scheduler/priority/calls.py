"""The Scheduler actor's calls that change a waiting request's place in the
queue: ``legionrm hold``, ``release``, ``update`` and ``top``.  A mixin of
:class:`~legionrm.scheduler.actor.SchedulerActor`; each call goes through
its door (:class:`~legionrm.scheduler.door.SchedulerDoor`: who may call
which).  No Ray here: ``share`` and ``prio``, which run in the actor's
control group, stay in the actor."""

from __future__ import annotations

from typing import Any

from legionrm.models import RequestInfo


class QueueCalls:
    door: Any

    def hold(self, request_id: str, proof: Any = None) -> RequestInfo:
        """Keep a pending request out of the queue until released (its owner or an admin)."""
        return self.door.hold(request_id, proof)

    def release(self, request_id: str, proof: Any = None) -> RequestInfo:
        """Put a held request back in the queue (its owner; an admin's hold: an admin)."""
        return self.door.release(request_id, proof)

    def update(self, request_id: str, priority: int | None = None, qos: str | None = None, clear_priority: bool = False,
               proof: Any = None) -> RequestInfo:
        """Change a pending request's fixed priority or QoS (an admin)."""
        return self.door.update(request_id, priority, qos, clear_priority, proof)

    def top(self, request_id: str, proof: Any = None) -> RequestInfo:
        """Put a pending request first in the site's order (an admin)."""
        return self.door.top(request_id, proof)
