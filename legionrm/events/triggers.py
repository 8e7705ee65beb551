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

The streams live in memory.  A restarted Scheduler has its requests back
from its store, with each one's history: :func:`past_events` reads a
request's past out of it (its transitions, its instances' starts and ends)
and :meth:`Triggers.seed` puts that in its stream, ahead of any live event,
so ``events_since`` (``legionrm show ID --follow``) still gives an old
request's past.  Nothing is written anywhere else.  A trace replay, which
nobody follows, keeps no streams (:attr:`Triggers.streams`): an event no
trigger hears is then not even built (:meth:`Triggers.wants`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable, Iterable, get_args

from legionrm.models import EventStatus, InstanceInfo, RequestInfo, RequestState, StatusEvent

log = logging.getLogger(__name__)

STATUSES: tuple[str, ...] = get_args(EventStatus)
EVERY = "*"
"""The subject of a trigger on everything its user may see."""

STATUS_OF: dict[RequestState, EventStatus] = {
    "pending": "pending", "admitted": "admitted", "placing": "placing", "reserved": "reserved",
    "running": "started", "completed": "ended", "failed": "failed", "cancelled": "cancelled",
    "node_lost": "failed",  # its work failed with its host (the instance's own event is host_lost)
    "preempted": "preempted",
}
"""The event a request's move into each state fires."""

INSTANCE_STATUS: dict[str, EventStatus] = {"ended": "ended", "stopped": "ended", "lost": "host_lost"}
"""The event an instance's end fires, by how it ended."""

LATE: frozenset[str] = frozenset({"running", "completed", "failed", "cancelled", "node_lost", "preempted"})
"""A request's transitions its instances' events come before (at the same time)."""

Subscriber = Callable[[StatusEvent], object]


def past_events(info: RequestInfo) -> list[StatusEvent]:
    """A request's status events as its book recorded them (unstamped, oldest
    first): each transition of its history; each instance's start and end;
    an object's moves, read from its copies (a copy left ``inert``:
    ``deactivated``; a copy ``moved`` by an activation: ``deactivated`` then,
    as its next copy starts, ``activated``; one moved by a migration:
    ``migrated`` as its next copy starts), each of the object.  Events at the
    same time are in the order the book fires them."""
    def ev(at: float, status: EventStatus, reason: str, object_id: str | None = None) -> StatusEvent:
        return StatusEvent(at=at, request_id=info.id, user=info.user, status=status, object_id=object_id,
                           reason=reason)

    # at one time: a request's way in, its instances' starts, their ends, then its running or its end
    out = [(h.at, 3 if h.state in LATE else 0, ev(h.at, STATUS_OF[h.state], h.reason)) for h in info.history]
    before: dict[str, InstanceInfo] = {}  # an object's id -> its last copy so far (copies in start order)
    for i in sorted(info.instances, key=lambda i: i.started_at):
        oid = i.object_id or i.id
        prev = before.get(oid)
        before[oid] = i
        if prev is None or prev.state != "moved":
            out.append((i.started_at, 1, ev(i.started_at, "started", f"on {i.host}", i.id)))
        else:  # the next copy of a moved object: its activation or its migration
            kind: EventStatus = "migrated" if prev.reason.startswith("migrat") else "activated"
            out.append((i.started_at, 1, ev(i.started_at, kind, prev.reason, oid)))
        if i.ended_at is None:
            continue
        if i.state in INSTANCE_STATUS:
            out.append((i.ended_at, 2, ev(i.ended_at, INSTANCE_STATUS[i.state], i.reason, i.id)))
        elif i.state == "inert" or (i.state == "moved" and not i.reason.startswith("migrat")):
            out.append((i.ended_at, 2, ev(i.ended_at, "deactivated", f"in {i.vault}" if i.vault else "", oid)))
    return [e for _, _, e in sorted(out, key=lambda t: (t[0], t[1]))]  # stable within a rank


def replayed(events: Iterable[StatusEvent]) -> list[StatusEvent]:
    """``events`` (:func:`past_events`) stamped as a clocked registry stamps
    them (the millisecond of each, or one past the one before): the stream of
    a request that left the live book, with about the numbers it was fired with."""
    seq, out = 0, []
    for e in events:
        seq = max(seq + 1, int(e.at * 1000))
        out.append(e.model_copy(update={"seq": seq}))
    return out


@dataclass
class Trigger:
    id: str
    subject: str
    statuses: frozenset[str]
    user: str | None
    subscriber: Subscriber
    failures: int = 0
    instances: bool = True
    """Does it hear its subject's instances' events too (False: only requests' own, ``object_id`` None)?"""

    def matches(self, event: StatusEvent) -> bool:
        return (event.status in self.statuses and (self.instances or event.object_id is None)
                and (self.subject == EVERY or self.subject in (event.request_id, event.object_id))
                and (self.user is None or self.user == event.user))


class Triggers:
    """The registry (see the module)."""

    def __init__(self, *, max_failures: int = 3, max_triggers: int = 10_000, keep_per_request: int = 256,
                 keep_requests: int = 10_000, clocked: bool = False) -> None:
        """``clocked``: an event's sequence number is the millisecond of its
        time (``at``), or one past the last number if that is not more; a
        cursor then keeps its meaning across a restart, whose rebuilt past
        gets about the numbers it had (a follower neither repeats nor skips).
        Else numbers count from 1."""
        self.clocked = clocked
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
        self.streams = True
        """Keep each request's stream (for ``events_since``); False (a trace replay, which nobody
        follows): only the triggers hear events, and :meth:`wants` says which are heard at all."""
        self._heard: frozenset[tuple[str, bool]] = frozenset()  # (status, of an instance) some trigger hears

    def register(self, subject: str, statuses: Iterable[str], subscriber: Subscriber, *,
                 user: str | None = None, instances: bool = True) -> str:
        """A new trigger; returns its id (``instances=False``: it hears only requests' own events, not
        their instances').  ValueError for an empty subject, an unknown status (naming it and the
        known ones) or a full registry."""
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
            self._triggers[tid] = Trigger(tid, subject, wanted, user, subscriber, instances=instances)
            self._rehear()
            return tid

    def remove(self, trigger_id: str) -> bool:
        """Remove a trigger; False when there was none (idempotent)."""
        with self._lock:
            gone = self._triggers.pop(trigger_id, None) is not None
            self._rehear()
            return gone

    def _rehear(self) -> None:
        """(Under the lock.)  What the triggers hear, for :meth:`wants`."""
        self._heard = frozenset((s, inst) for t in self._triggers.values() for s in t.statuses
                                for inst in ((False, True) if t.instances else (False,)))

    def wants(self, status: str, instance: bool) -> bool:
        """Would an event of ``status`` (``instance``: of an instance) be kept or heard?  Always
        while streams are kept; else only when some trigger hears such events.  An event nobody
        would keep nor hear need not be built nor fired: it changes nothing."""
        return self.streams or (status, instance) in self._heard

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
            event = event.replaced(seq=self._next(event.at))  # (a copy without validation: only its seq is new)
            matching = self._keep(event)
        self._call(matching, event)
        return event

    def fire_many(self, events: list[StatusEvent]) -> list[StatusEvent]:
        """:meth:`fire` each of ``events`` in order, under one hold of the lock: events made for
        this call that nobody else holds yet (a request's instances that started together), so
        each is stamped in place.  Returns them, stamped."""
        heard = []
        with self._lock:
            for event in events:
                event.__dict__["seq"] = self._next(event.at)  # (its own: nothing holds it yet)
                heard.append(self._keep(event))
        for matching, event in zip(heard, events):
            self._call(matching, event)
        return events

    def _keep(self, event: StatusEvent) -> list[Trigger]:
        """(Under the lock.)  Keep the stamped ``event`` in its request's stream; the triggers that hear it."""
        if self.streams:
            stream = self._streams.get(event.request_id)
            if stream is None:
                stream = self._streams[event.request_id] = deque(maxlen=self.keep_per_request)
                while len(self._streams) > self.keep_requests:
                    self._streams.popitem(last=False)
            stream.append(event)
        return [t for t in self._triggers.values() if t.matches(event)] if self._triggers else []

    def _call(self, matching: list[Trigger], event: StatusEvent) -> None:
        """Call each matching trigger's subscriber (outside the lock); a failure is its trigger's own."""
        for t in matching:
            try:
                t.subscriber(event)
            except Exception as exc:  # noqa: BLE001 - a subscriber's failure is its own
                self._failed(t, exc)
            else:
                t.failures = 0

    def seed(self, events: Iterable[StatusEvent]) -> int:
        """Put past events (:func:`past_events`, oldest first) in their
        requests' streams, stamped with the next sequence numbers, calling no
        subscriber: after a restart, before any live event.  A request that
        has a stream already is left as it is.  Returns how many were kept."""
        kept = 0
        with self._lock:
            fresh: set[str] = set()
            ordered = sorted(events, key=lambda e: e.at) if self.clocked else events  # stable: each request's order
            for e in ordered:
                if e.request_id in self._streams and e.request_id not in fresh:
                    continue
                if e.request_id not in fresh:
                    fresh.add(e.request_id)
                    self._streams[e.request_id] = deque(maxlen=self.keep_per_request)
                    while len(self._streams) > self.keep_requests:
                        fresh.discard(self._streams.popitem(last=False)[0])
                    if e.request_id not in self._streams:  # evicted at once: older than all kept
                        continue
                self._streams[e.request_id].append(e.model_copy(update={"seq": self._next(e.at)}))
                kept += 1
        return kept

    def _next(self, at: float) -> int:
        """The next sequence number (under the lock)."""
        self._seq = max(self._seq + 1, int(at * 1000)) if self.clocked else self._seq + 1
        return self._seq

    def has_stream(self, request_id: str) -> bool:
        """Does the registry keep events of ``request_id``?"""
        return request_id in self._streams

    def forget(self, request_id: str) -> bool:
        """Drop the events kept of ``request_id`` (it left the live book); False when none were kept."""
        with self._lock:
            return self._streams.pop(request_id, None) is not None

    def events_since(self, request_id: str, cursor: int = 0) -> list[StatusEvent]:
        """The kept events of ``request_id`` after sequence number ``cursor``, oldest first."""
        with self._lock:
            return [e for e in self._streams.get(request_id, ()) if e.seq > cursor]

    def _failed(self, t: Trigger, exc: Exception) -> None:
        t.failures += 1
        log.info("trigger %s: subscriber failed (%d of %d): %s", t.id, t.failures, self.max_failures, exc)
        if t.failures >= self.max_failures and self.remove(t.id):
            self.dropped.append(t.id)
