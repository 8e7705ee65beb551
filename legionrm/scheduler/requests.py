"""The life of a request: states, transitions with time and reason, the
instances it owns.

``pending -> admitted -> placing -> running -> completed | failed | cancelled``
(a request with a future start goes ``placing -> reserved -> running``: its
hosts are reserved ahead and its instances start at its start time; a request that cannot run now goes back from ``admitted`` or ``placing`` to
``pending``; a pending request may be cancelled or fail outright).  Every
transition is appended to the request's history; a transition the table
does not allow raises :class:`SchedulingError`, so a bug cannot silently
resurrect a finished request.

:class:`RequestBook` is plain data with a lock; the Scheduler drives it.
Every change is written to its store first and made in memory only once
the write succeeded (:meth:`RequestBook.save` raises
:class:`~legionrm.state.StoreFault` otherwise, and the entry is as it was).
Every change it records is also told, as a
:class:`~legionrm.models.StatusEvent`, to its ``listener`` (the Scheduler's
trigger registry): the one place status events come from.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable

from legionrm.errors import SchedulingError
from legionrm.events.triggers import INSTANCE_STATUS, STATUS_OF
from legionrm.models import (
    FINAL_STATES,
    EventStatus,
    InstanceInfo,
    EnactResult,
    InstanceRef,
    PlacementFailure,
    RequestEvent,
    RequestInfo,
    RequestState,
    SchedulingRequest,
    StatusEvent,
    WorkResult,
)
from legionrm.state import RequestStore

ALLOWED: dict[RequestState, frozenset[RequestState]] = {
    "pending": frozenset({"admitted", "failed", "cancelled"}),
    "admitted": frozenset({"placing", "pending", "failed", "cancelled"}),
    "placing": frozenset({"reserved", "running", "pending", "failed", "cancelled"}),
    "reserved": frozenset({"running", "failed", "cancelled"}),
    "running": frozenset({"completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
"""Which state may follow which (final states have no successor)."""

LIVE_STATES: tuple[RequestState, ...] = ("admitted", "placing", "reserved", "running")
"""The states a request may hold instances in (a final one has given them all back)."""

HISTORY_LIMIT = 64
"""Transitions kept per request: a request re-planned many times keeps its
first transitions and its latest ones, never an unbounded list."""


@dataclass
class Entry:
    """One request and everything the Scheduler knows of it."""

    request: SchedulingRequest
    submitted: float
    state: RequestState = "pending"
    reason: str = ""
    history: list[RequestEvent] = field(default_factory=list)
    instances: dict[str, InstanceInfo] = field(default_factory=dict)
    refs: dict[str, InstanceRef] = field(default_factory=dict)
    failures: tuple[PlacementFailure, ...] = ()
    earliest_start: float | None = None
    attempts: int = 0
    held: EnactResult | None = None
    """A reserved request's advance reservations (placements and tokens)."""

    @property
    def id(self) -> str:
        return self.request.request_id

    @property
    def user(self) -> str:
        return self.request.identity.user

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def live_instances(self) -> list[str]:
        return [i for i, info in self.instances.items() if info.state == "running"]

    def holds_objects(self) -> bool:
        """Does any of its objects still run or rest inert (its state in a vault)?"""
        return any(info.state in ("running", "inert") for info in self.instances.values())

    def walltime(self, class_name: str) -> float | None:
        """The walltime of the object request that made an instance of ``class_name`` (its class's first)."""
        return next((o.walltime_s for o in self.request.objects if o.class_name == class_name), None)

    def cpus(self) -> float:
        """The cpus this request asks for in all (its size in the queue's priority)."""
        return sum(o.count * o.cpus for o in self.request.objects)

    def failed_work(self) -> bool:
        """Did any of its instances' work fail (a run that failed, or its host lost)?"""
        return any(i.state == "lost" or i.failed for i in self.instances.values())

    def exit_code(self) -> int | None:
        """Its runs' first non-zero exit code, else 0; None before any run's result is known."""
        codes = [i.result.exit_code for i in self.instances.values() if i.result and i.result.exit_code is not None]
        return next((c for c in codes if c != 0), 0) if codes else None

    def draft(self, **changes: object) -> "Entry":
        """A copy to change and write before this entry becomes it (its lists and maps copied)."""
        return dataclasses.replace(self, **{"history": list(self.history), "instances": dict(self.instances),
                                            "refs": dict(self.refs), **changes})

    def info(self) -> RequestInfo:
        objs = self.request.objects
        return RequestInfo(
            id=self.id, user=self.user, state=self.state, reason=self.reason,
            classes=tuple(dict.fromkeys(o.class_name for o in objs)), count=sum(o.count for o in objs),
            pool=self.request.pool, submitted=self.submitted, earliest_start=self.earliest_start,
            start=self.request.start,
            instances=tuple(self.instances.values()), failures=self.failures, history=tuple(self.history),
            exit_code=self.exit_code(), qos=self.request.qos, hold=self.request.hold,
        )


class RequestBook:
    """Every request a Scheduler was given, by id.  Thread-safe.

    With a ``store``, every change is written to it before the book or the
    entry shows it (so before the Scheduler acts on it; a write that fails
    raises :class:`~legionrm.state.StoreFault` and changes nothing), and the
    book starts with what the store holds: a restarted Scheduler knows every
    request it had."""

    def __init__(self, clock: Callable[[], float], store: RequestStore | None = None,
                 listener: Callable[[StatusEvent], object] | None = None) -> None:
        self.clock = clock
        self.store = store
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}
        self._by_instance: dict[str, str] = {}
        self._by_state: dict[str, dict[str, Entry]] = {}  # state -> its requests: a pass reads only the live ones
        self.listener = listener
        """Told of every transition and every instance start and end (see the module)."""
        for item in store.load() if store is not None else ():
            entry = Entry(request=item.request, submitted=item.submitted, state=item.state,  # type: ignore[arg-type]
                          reason=item.reason, history=item.history, instances=item.instances, refs=item.refs,
                          failures=item.failures, earliest_start=item.earliest_start, attempts=item.attempts,
                          held=item.held)
            self._entries[entry.id] = entry
            self._by_state.setdefault(entry.state, {})[entry.id] = entry
            self._by_instance.update({iid: entry.id for iid in entry.instances})

    def tell(self, entry: Entry, status: EventStatus, reason: str, object_id: str | None = None) -> None:
        """Tell the listener of one status change of ``entry`` (or of its instance ``object_id``)."""
        if self.listener is not None:
            self.listener(StatusEvent(at=self.clock(), request_id=entry.id, user=entry.user, status=status,
                                      object_id=object_id, reason=reason))

    def save(self, entry: Entry) -> None:
        """Write ``entry`` as it is now to the store (no store: nothing)."""
        if self.store is not None:
            self.store.put(request=entry.request, submitted=entry.submitted, state=entry.state, reason=entry.reason,
                           history=entry.history, instances=entry.instances, refs=entry.refs,
                           failures=entry.failures, earliest_start=entry.earliest_start, attempts=entry.attempts,
                           held=entry.held)

    def _commit(self, entry: Entry, draft: Entry) -> None:
        """Write ``draft`` (what ``entry`` is to become), then make ``entry`` it."""
        self.save(draft)
        self._index(entry, draft.state)
        vars(entry).update(vars(draft))

    # --- reading ------------------------------------------------------------

    def get(self, request_id: str) -> Entry | None:
        return self._entries.get(request_id)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._entries

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def in_state(self, state: RequestState) -> list[Entry]:
        """The requests in ``state`` now (read from an index, not a scan of every request)."""
        with self._lock:
            return list(self._by_state.get(state, {}).values())

    def owner_of(self, instance_id: str) -> Entry | None:
        rid = self._by_instance.get(instance_id)
        return self._entries.get(rid) if rid is not None else None

    def running_instances(self) -> list[InstanceRef]:
        with self._lock:
            live = [e for st in LIVE_STATES for e in self._by_state.get(st, {}).values()]
            return [e.refs[i] for e in live for i in e.live_instances() if i in e.refs]

    def next_end(self) -> float | None:
        """The first time a running instance's walltime ends: no waiting
        request can start before capacity frees (None: nothing running has a
        walltime, so only an end nobody scheduled can free room)."""
        ends = [ref.started_at + wall for ref in self.running_instances()
                if (e := self.owner_of(ref.instance_id)) is not None and (wall := e.walltime(ref.class_name)) is not None]
        return min(ends, default=None)

    def list(self, user: str | None = None, state: str | None = None) -> list[RequestInfo]:
        """Requests, oldest first, optionally of one user and in one state."""
        with self._lock:
            return [e.info() for e in sorted(self._entries.values(), key=lambda e: (e.submitted, e.id))
                    if (user is None or e.user == user) and (state is None or e.state == state)]

    # --- writing ------------------------------------------------------------

    def add(self, request: SchedulingRequest) -> Entry:
        """A new request, pending.  A repeated id is a SchedulingError."""
        with self._lock:
            if request.request_id in self._entries:
                raise SchedulingError(f"request id {request.request_id!r} was already scheduled")
            now = self.clock()
            entry = Entry(request=request, submitted=now)
            entry.history.append(RequestEvent(at=now, state="pending", reason="submitted"))
            self.save(entry)  # a write that fails leaves no trace: the id stays free
            self._entries[request.request_id] = entry
            self._by_state.setdefault("pending", {})[entry.id] = entry
            self.tell(entry, "pending", "submitted")
            return entry

    def move(self, entry: Entry, state: RequestState, reason: str = "", **changes: object) -> None:
        """Record a transition, with ``changes`` to the entry's other fields
        (``failures``, ``earliest_start``) written with it.  A no-op when
        already in ``state`` with the same reason, so a re-planned pending
        request does not fill its history (its ``changes`` are only noted in memory)."""
        with self._lock:
            if entry.state == state and entry.reason == reason:
                vars(entry).update(changes)
                return
            if entry.state != state and state not in ALLOWED[entry.state]:
                raise SchedulingError(f"request {entry.id!r} cannot go from {entry.state} to {state}")
            draft = entry.draft(state=state, reason=reason, **changes)
            if state == "pending" and self._retry_of(entry, reason):
                # the same "not now" as before: the attempt leaves no trace in the history
                while draft.history[-1].state != "pending":
                    draft.history.pop()
                self._commit(entry, draft)
                return
            self._event(draft, state, reason)
            self._commit(entry, draft)
            self.tell(entry, STATUS_OF[state], reason)

    def _event(self, draft: Entry, state: RequestState, reason: str) -> None:
        draft.history.append(RequestEvent(at=self.clock(), state=state, reason=reason))
        if len(draft.history) > HISTORY_LIMIT:
            del draft.history[HISTORY_LIMIT // 2]

    def cancel(self, entry: Entry, reason: str) -> list[InstanceRef] | None:
        """End a live request's running instances (``stopped``) and cancel it,
        in one write; returns the instances to stop now (None, and no change,
        when it already ended)."""
        with self._lock:
            if entry.final:
                return None
            live, now = entry.live_instances(), self.clock()
            draft = entry.draft(state="cancelled", reason=reason)
            for iid in live:
                draft.instances[iid] = draft.instances[iid].model_copy(
                    update={"state": "stopped", "ended_at": now, "reason": reason})
            self._event(draft, "cancelled", reason)
            self._commit(entry, draft)
            for iid in live:
                self.tell(entry, INSTANCE_STATUS["stopped"], reason, iid)
            self.tell(entry, STATUS_OF["cancelled"], reason)
            return [entry.refs[i] for i in live if i in entry.refs]

    def finish(self, entry: Entry, state: RequestState, reason: str, **changes: object) -> bool:
        """Move a live request to a final ``state`` (with ``changes``); False
        (and no change) when it already ended (a cancel and an end can race)."""
        with self._lock:
            if entry.final:
                return False
            self.move(entry, state, reason, **changes)
            return True

    def _index(self, entry: Entry, state: RequestState) -> None:
        """Move ``entry`` to ``state``'s index (before its state changes)."""
        if entry.state != state:
            self._by_state.get(entry.state, {}).pop(entry.id, None)
            self._by_state.setdefault(state, {})[entry.id] = entry

    @staticmethod
    def _retry_of(entry: Entry, reason: str) -> bool:
        """Does going back to pending for ``reason`` repeat the last pending
        (only an attempt's admitted / placing since)?"""
        for event in reversed(entry.history):
            if event.state == "pending":
                return event.reason == reason
            if event.state not in ("admitted", "placing"):
                return False
        return False

    def attach(self, entry: Entry, instances: Iterable[InstanceRef], state: RequestState | None = None,
               reason: str = "", **changes: object) -> None:
        """The request's instances started; with ``state``, the request moves
        there (with ``changes``) in the same write."""
        refs = list(instances)
        with self._lock:
            draft = entry.draft(**changes)
            moved = state is not None and state != entry.state
            if moved:
                assert state is not None
                if state not in ALLOWED[entry.state]:
                    raise SchedulingError(f"request {entry.id!r} cannot go from {entry.state} to {state}")
                draft.state, draft.reason = state, reason
                self._event(draft, state, reason)
            for ref in refs:
                draft.refs[ref.instance_id] = ref
                draft.instances[ref.instance_id] = InstanceInfo(id=ref.instance_id, host=ref.host,
                                                                started_at=ref.started_at)
            self._commit(entry, draft)
            self._by_instance.update({ref.instance_id: entry.id for ref in refs})
            for ref in refs:
                self.tell(entry, "started", f"on {ref.host}", ref.instance_id)
            if moved:
                self.tell(entry, STATUS_OF[entry.state], reason)

    def current(self, object_id: str) -> tuple[Entry, InstanceInfo] | None:
        """The copy an object is now (running or inert), found by the object's
        id or the id of any instance it ever was; None when unknown or gone."""
        with self._lock:
            entry = self.owner_of(object_id)
            if entry is None:
                return None
            oid = entry.instances[object_id].object_id or object_id
            return next(((entry, i) for i in entry.instances.values() if (i.object_id or i.id) == oid
                         and i.state in ("running", "inert")), None)

    def set_instance(self, entry: Entry, info: InstanceInfo, ref: InstanceRef | None = None) -> None:
        """Write one instance's info (and its ref: a new copy of an object is attached)."""
        with self._lock:
            draft = entry.draft()
            draft.instances[info.id] = info
            if ref is not None:
                draft.refs[ref.instance_id] = ref
            self._commit(entry, draft)
            if ref is not None:
                self._by_instance[ref.instance_id] = entry.id

    def end_instance(self, instance_id: str, state: str, reason: str, result: WorkResult | None = None
                     ) -> Entry | None:
        """Mark one instance ended (with its run's ``result``, when known);
        returns its request, or None when the instance is unknown or had
        already ended (idempotent)."""
        with self._lock:
            entry = self.owner_of(instance_id)
            if entry is None:
                return None
            info = entry.instances[instance_id]
            if info.state != "running":
                return None
            draft = entry.draft()
            draft.instances[instance_id] = info.model_copy(
                update={"state": state, "ended_at": self.clock(), "reason": reason, "result": result})
            self._commit(entry, draft)
            self.tell(entry, INSTANCE_STATUS.get(state, "ended"), reason, instance_id)
            return entry


    def set_result(self, entry: Entry, instance_id: str, result: WorkResult) -> None:
        """Keep an ended instance's run result (it came after the instance ended: a stop)."""
        with self._lock:
            info = entry.instances.get(instance_id)
            if info is not None and info.result is None:
                draft = entry.draft()
                draft.instances[instance_id] = info.model_copy(update={"result": result})
                self._commit(entry, draft)

