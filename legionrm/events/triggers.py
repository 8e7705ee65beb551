"""The trigger registry: who waits for which status of which object.

A trigger names a subject (a request id, an instance id, or ``*`` for every
subject its user may see), the statuses it waits for
(:data:`~legionrm.models.EventStatus`; none given: all of them) and a
subscriber, a callable taking the :class:`~legionrm.models.StatusEvent`.
:meth:`Triggers.fire` stamps the event with the next sequence number, keeps
it in its request's stream, and calls every matching trigger's subscriber.
Access is part of matching: a trigger registered for a user only ever sees
that user's events (one registered with ``user=None``, an administrator's,
sees all), whatever its subject says.

Subscribers are called in the firing thread and must return at once (the
actor shell's subscriber sends a Ray call and checks earlier ones without
waiting).  One that raises counts a failure; after ``max_failures`` in a row
its trigger is dropped (:attr:`Triggers.dropped` says which); a success
resets the count.  The registry is bounded: at most ``max_triggers``
triggers, ``keep_per_request`` events per request stream and
``keep_requests`` streams (the oldest go first).  Thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable, Iterable, get_args

from legionrm.models import EventStatus, RequestState, StatusEvent

log = logging.getLogger(__name__)

STATUSES: tuple[str, ...] = get_args(EventStatus)
EVERY = "*"
"""The subject of a trigger on everything its user may see."""

STATUS_OF: dict[RequestState, EventStatus] = {
    "pending": "pending", "admitted": "admitted", "placing": "placing", "reserved": "reserved",
    "running": "started", "completed": "ended", "failed": "failed", "cancelled": "cancelled",
}
"""The event a request's move into each state fires."""

INSTANCE_STATUS: dict[str, EventStatus] = {"ended": "ended", "stopped": "ended", "lost": "host_lost"}
"""The event an instance's end fires, by how it ended."""

Subscriber = Callable[[StatusEvent], object]


@dataclass
class Trigger:
    id: str
    subject: str
    statuses: frozenset[str]
    user: str | None
    subscriber: Subscriber
    failures: int = 0

    def matches(self, event: StatusEvent) -> bool:
        return (event.status in self.statuses
                and (self.subject == EVERY or self.subject in (event.request_id, event.object_id))
                and (self.user is None or self.user == event.user))


class Triggers:
    """The registry (see the module)."""

    def __init__(self, *, max_failures: int = 3, max_triggers: int = 10_000, keep_per_request: int = 256,
                 keep_requests: int = 10_000) -> None:
        self.max_failures = max_failures
        self.max_triggers = max_triggers
        self.keep_per_request = keep_per_request
        self.keep_requests = keep_requests
        self._lock = threading.Lock()
        self._triggers: dict[str, Trigger] = {}
        self._streams: OrderedDict[str, deque[StatusEvent]] = OrderedDict()
        self._seq = 0
        self._serial = 0
        self.dropped: deque[str] = deque(maxlen=1000)

    def register(self, subject: str, statuses: Iterable[str], subscriber: Subscriber, *,
                 user: str | None = None) -> str:
        """A new trigger; returns its id.  ValueError for an empty subject, an
        unknown status (naming it and the known ones) or a full registry."""
        wanted = frozenset(statuses) or frozenset(STATUSES)
        unknown = sorted(wanted - set(STATUSES))
        if unknown:
            raise ValueError(f"unknown status {unknown[0]!r}; known: {', '.join(STATUSES)}")
        if not subject:
            raise ValueError("a trigger needs a subject (a request or object id, or '*')")
        with self._lock:
            if len(self._triggers) >= self.max_triggers:
                raise ValueError(f"the registry holds {self.max_triggers} triggers already")
            self._serial += 1
            tid = f"trigger-{self._serial}"
            self._triggers[tid] = Trigger(tid, subject, wanted, user, subscriber)
            return tid

    def remove(self, trigger_id: str) -> bool:
        """Remove a trigger; False when there was none (idempotent)."""
        with self._lock:
            return self._triggers.pop(trigger_id, None) is not None

    def owner(self, trigger_id: str) -> str | None:
        """The user a trigger was registered for (None: an administrator's or unknown)."""
        t = self._triggers.get(trigger_id)
        return t.user if t is not None else None

    def __contains__(self, trigger_id: str) -> bool:
        return trigger_id in self._triggers

    def __len__(self) -> int:
        return len(self._triggers)

    def fire(self, event: StatusEvent) -> StatusEvent:
        """Stamp ``event`` with the next sequence number, keep it in its
        request's stream, call every matching trigger's subscriber; returns
        the stamped event.  Never raises for a subscriber."""
        with self._lock:
            self._seq += 1
            event = event.model_copy(update={"seq": self._seq})
            stream = self._streams.get(event.request_id)
            if stream is None:
                stream = self._streams[event.request_id] = deque(maxlen=self.keep_per_request)
                while len(self._streams) > self.keep_requests:
                    self._streams.popitem(last=False)
            stream.append(event)
            matching = [t for t in self._triggers.values() if t.matches(event)]
        for t in matching:
            try:
                t.subscriber(event)
            except Exception as exc:  # noqa: BLE001 - a subscriber's failure is its own
                self._failed(t, exc)
            else:
                t.failures = 0
        return event

    def events_since(self, request_id: str, cursor: int = 0) -> list[StatusEvent]:
        """The kept events of ``request_id`` after sequence number ``cursor``, oldest first."""
        with self._lock:
            return [e for e in self._streams.get(request_id, ()) if e.seq > cursor]

    def _failed(self, t: Trigger, exc: Exception) -> None:
        t.failures += 1
        log.info("trigger %s: subscriber failed (%d of %d): %s", t.id, t.failures, self.max_failures, exc)
        if t.failures >= self.max_failures and self.remove(t.id):
            self.dropped.append(t.id)
