"""An administrator's (and an owner's) hand on the queue: hold, release, update, top.

As Slurm's ``scontrol hold/release/update/top``:

* ``hold``: a pending request waits, unconsidered, until released.  Its
  owner's hold is a ``user`` hold, an administrator's an ``admin`` hold.
* ``release``: the hold ends; an owner may release only a ``user`` hold.
* ``update``: an administrator sets the request's fixed ``priority``
  (replacing the formula's sum), gives it back to the formula, or moves it to
  another ``qos`` (any QoS: an administrator is not bound by its user lists).
* ``top``: an administrator puts the request first: its fixed priority becomes
  one above the highest priority any pending request has now.

Each acts on a pending request only (``queue.not_pending``) and is kept in
the request itself, so it survives a restart.  Who may call what is the
door's business (:mod:`legionrm.scheduler.door`).  Pure: no Ray.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from legionrm import codes
from legionrm.auth.errors import AuthRefusedError
from legionrm.errors import SchedulingError
from legionrm.models import RequestInfo
from legionrm.models.schedules import MAX_PRIORITY
from legionrm.scheduler.priority.site import SitePolicy
from legionrm.scheduler.requests import Entry, RequestBook


class QueueError(SchedulingError):
    """A queue call that cannot act (its ``code`` says why)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # it crosses Ray: made again from both arguments
        return type(self), (str(self.code), str(self))


class QueueControl:
    """Hold, release, update and top over ``book`` (``replan``: run the queue again after a change;
    ``info_of``: any request the scheduler knows, the finished ones too, raising for an unknown id)."""

    def __init__(self, book: RequestBook, site: SitePolicy, replan: Callable[[], object],
                 info_of: Callable[[str], RequestInfo] | None = None) -> None:
        self.book, self.site, self._replan, self._info_of = book, site, replan, info_of

    def _pending(self, request_id: str, what: str) -> Entry:
        entry = self.book.get(request_id)
        if entry is None:
            if self._info_of is None:
                raise SchedulingError(f"no request {request_id!r} is known to this scheduler", code=codes.REQUEST_UNKNOWN)
            ended = self._info_of(request_id)  # it left the live book: finished (or unknown, raised)
            raise QueueError(codes.QUEUE_NOT_PENDING, f"{request_id} is {ended.state}: only a pending request can be {what}")
        if entry.state != "pending":
            raise QueueError(codes.QUEUE_NOT_PENDING, f"{request_id} is {entry.state}: only a pending request can be {what}")
        return entry

    def _change(self, entry: Entry, reason: str, **update: Any) -> RequestInfo:
        entry.request = entry.request.model_copy(update=update)
        self.book.move(entry, "pending", reason)
        self.book.save(entry)
        return entry.info()

    def hold(self, request_id: str, admin: bool) -> RequestInfo:
        """Hold a pending request (an administrator's hold outranks its owner's)."""
        entry = self._pending(request_id, "held")
        kind = "admin" if admin or entry.request.hold == "admin" else "user"
        return self._change(entry, f"{codes.QUEUE_HELD}: held by {'an administrator' if kind == 'admin' else 'its user'}",
                            hold=kind)

    def release(self, request_id: str, admin: bool) -> RequestInfo:
        """End a hold (its owner: only their own ``user`` hold); a request not held is left as it is."""
        entry = self._pending(request_id, "released")
        if entry.request.hold is None:
            return entry.info()
        if entry.request.hold == "admin" and not admin:
            raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"{request_id} is held by an administrator: "
                                   "only an administrator releases it", "queue")
        self._change(entry, "released", hold=None)
        self._replan()
        return entry.info()

    def update(self, request_id: str, priority: int | None = None, qos: str | None = None,
               clear_priority: bool = False) -> RequestInfo:
        """Set the fixed ``priority`` (or with ``clear_priority`` forget it) and/or move to ``qos``."""
        entry = self._pending(request_id, "updated")
        if qos is not None and qos not in self.site.settings.qos:
            raise QueueError(codes.QOS_UNKNOWN, f"no QoS {qos!r} (known: {', '.join(sorted(self.site.settings.qos))})")
        update: dict[str, Any] = {}
        if qos is not None:
            update["qos"] = qos
        if clear_priority:
            update["priority"] = None
        elif priority is not None:
            update["priority"] = priority
        said = ", ".join(f"{k} {'from the formula' if v is None else v}" for k, v in update.items()) or "nothing"
        self._change(entry, f"updated by an administrator: {said}", **update)
        self._replan()
        return entry.info()

    def top(self, request_id: str, beside: frozenset[str] = frozenset()) -> RequestInfo:
        """Put a pending request first (see the module); the requests ``beside`` (the other tasks of
        its array, put on top with it) do not count among those it goes ahead of."""
        entry = self._pending(request_id, "put on top")
        others = [f.priority for e, f in self.site.rank(self.book.entries()) if e.id != request_id and e.id not in beside]
        prio = min(MAX_PRIORITY, math.floor(max(others, default=0.0)) + 1)
        self._change(entry, f"put on top by an administrator (priority {prio})", priority=prio)
        self._replan()
        return entry.info()
