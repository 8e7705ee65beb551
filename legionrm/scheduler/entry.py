"""One request and everything the Scheduler knows of it (:class:`Entry`), and
the request states' rules: which state may follow which (:data:`ALLOWED`),
which hold instances, how much history a request keeps.  The
:class:`~legionrm.scheduler.requests.RequestBook` holds the entries; this
module is plain data and its derived views (no lock, no store)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from legionrm.enactor.after import this_run, unstarted, waits
from legionrm.models import (
    FINAL_STATES,
    EnactResult,
    InstanceInfo,
    InstanceRef,
    PlacementFailure,
    RequestEvent,
    RequestInfo,
    RequestState,
    SchedulingRequest,
)
from legionrm.state import StoredRequest

ALLOWED: dict[RequestState, frozenset[RequestState]] = {
    "pending": frozenset({"admitted", "failed", "cancelled"}),
    "admitted": frozenset({"placing", "pending", "failed", "cancelled"}),
    "placing": frozenset({"reserved", "running", "pending", "failed", "cancelled"}),
    "reserved": frozenset({"running", "failed", "cancelled"}),
    "running": frozenset({"completed", "failed", "cancelled", "node_lost", "preempted", "pending"}),  # pending: requeued
    "completed": frozenset(),
    "node_lost": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
    "preempted": frozenset(),
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
    archived: bool = False
    """Read back from the durable history: it left the live book (a copy; changing it changes nothing)."""

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
        """Does any of its objects still run or rest inert (its state in a vault), or wait for its stage?"""
        # newest first: instances end in the order they started, so one still running is found at once
        return any(info.state in ("running", "inert") for info in reversed(self.instances.values())) or (
            self.state == "running" and self._graph() and waits(self.request.objects, this_run(self.history,
                                                                                               self.instances.values())))

    def _graph(self) -> bool:
        return any(o.after for o in self.request.objects)

    def walltime(self, class_name: str) -> float | None:
        """The walltime of the object request that made an instance of ``class_name`` (its class's first)."""
        return next((o.walltime_s for o in self.request.objects if o.class_name == class_name), None)

    def cpus(self) -> float:
        """The cpus this request asks for in all (its size in the queue's priority)."""
        return sum(o.count * o.cpus for o in self.request.objects)

    def failed_work(self) -> bool:
        """Did any of its instances' work fail (a run that failed, or its host lost; a requeued run's
        instances aside), or an object never start?"""
        return any((i.state == "lost" or i.failed) and not i.requeued for i in self.instances.values()) or (
            self._graph() and bool(unstarted(self.request.objects, this_run(self.history, self.instances.values()))))

    def exit_code(self) -> int | None:
        """Its runs' first non-zero exit code, else 0; None before any run's result is known."""
        if not self.instances:  # (no run: nothing to read the history for)
            return None
        codes = [i.result.exit_code for i in this_run(self.history, self.instances.values())  # a requeued run's own
                 if i.result and i.result.exit_code is not None and not i.requeued]
        return next((c for c in codes if c != 0), 0) if codes else None

    def draft(self, **changes: object) -> "Entry":
        """A copy to change and write before this entry becomes it (its lists and maps copied):
        what ``dataclasses.replace`` gives (TypeError for a name no field has), without its call
        of ``__init__`` (a write's hot path)."""
        if not changes.keys() <= _FIELDS:
            raise TypeError(f"Entry.draft: no fields {sorted(changes.keys() - _FIELDS)}")
        new = object.__new__(type(self))
        fields = vars(self)
        copied = {name: fields[name] for name in _ORDER}
        copied.update(history=list(self.history), instances=dict(self.instances), refs=dict(self.refs))
        copied.update(changes)  # (a change of a list or a map too: it replaces the copy)
        vars(new).update(copied)
        return new

    def info(self) -> RequestInfo:
        objs = self.request.objects
        return RequestInfo(
            id=self.id, user=self.user, state=self.state, reason=self.reason,
            classes=tuple(dict.fromkeys(o.class_name for o in objs)), count=sum(o.count for o in objs),
            pool=self.request.pool, submitted=self.submitted, earliest_start=self.earliest_start,
            start=self.request.start,
            instances=tuple(self.instances.values()), failures=self.failures, history=tuple(self.history),
            exit_code=self.exit_code(), qos=self.request.qos, hold=self.request.hold, archived=self.archived,
            after_ok=self.request.after_ok, after_any=self.request.after_any, after_not_ok=self.request.after_not_ok,
            begin_at=self.request.begin_at, requeue=self.request.requeue, array=self.request.array,
            array_index=self.request.array_index,
            on_preempt=self.request.on_preempt,
        )

    def ended(self) -> float:
        """When it reached its last state (its last transition's time)."""
        return self.history[-1].at if self.history else self.submitted

    @classmethod
    def of(cls, item: StoredRequest, archived: bool = False) -> Entry:
        """The entry a stored request describes."""
        return cls(request=item.request, submitted=item.submitted, state=item.state,  # type: ignore[arg-type]
                   reason=item.reason, history=item.history, instances=item.instances, refs=item.refs,
                   failures=item.failures, earliest_start=item.earliest_start, attempts=item.attempts,
                   held=item.held, archived=archived)


_ORDER = tuple(f.name for f in dataclasses.fields(Entry))
_FIELDS = frozenset(_ORDER)
"""Entry's fields (:meth:`Entry.draft` copies them, in their order)."""
