"""A scheduling request's life: its states, the history of its transitions,
and the views ``list`` / ``show`` give of it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from legionrm.models.base import Frozen
from legionrm.models.reservations import InstanceRef
from legionrm.models.schedules import PlacementFailure
from legionrm.models.work import FAILED_ENDS, WorkResult

RequestState = Literal["pending", "admitted", "placing", "reserved", "running", "completed", "failed", "cancelled",
                       "node_lost", "preempted"]
"""``pending -> admitted -> placing -> running -> completed | failed | cancelled``;
a request with a future start goes ``placing -> reserved -> running`` (its
hosts reserved ahead, its instances started at its start time); one whose
host was lost ends ``node_lost`` (or, with ``requeue``, goes back to ``pending``).
A running request preempted (issue 26) ends ``preempted`` (``on_preempt = "cancel"``)
or goes back to ``pending`` with a ``preempted`` event in its history."""

FINAL_STATES: tuple[RequestState, ...] = ("completed", "failed", "cancelled", "node_lost", "preempted")

InstanceState = Literal["running", "ended", "lost", "stopped", "inert", "moved"]
"""``inert``: deactivated, its persistent state in a vault; ``moved``: this
copy stopped and the object runs (or rests) as another instance."""


class RequestEvent(Frozen):
    """One transition: when, into which state, and why."""

    at: float
    state: RequestState
    reason: str = ""


EventStatus = Literal["pending", "admitted", "placing", "reserved", "started", "ended", "failed", "cancelled",
                     "host_lost", "migrated", "deactivated", "activated", "preempted"]
"""What a trigger may wait for: a request's transitions (``running`` is
``started``, ``completed`` is ``ended``) and its instances' (``started``,
``ended``, ``host_lost``) and objects' (``migrated``, ``deactivated``,
``activated``: the object's first instance id names it)."""


class StatusEvent(Frozen):
    """One status change of a request or of one of its instances (``object_id``)."""

    seq: int = 0
    """Its place in the order of every event the Scheduler fired (a cursor)."""
    at: float
    request_id: str
    user: str
    status: EventStatus
    object_id: str | None = None
    reason: str = ""


class InstanceInfo(Frozen):
    """An instance of a request as the Scheduler last saw it."""

    id: str
    host: str
    state: InstanceState = "running"
    started_at: float = 0.0
    ended_at: float | None = None
    reason: str = ""
    object_id: str | None = None
    """The object this instance is a copy of (None: itself; a re-activated or
    migrated object keeps the id of its first instance)."""
    vault: str | None = None
    """Where an inert object's persistent state is."""
    saved_bytes: int | None = None
    result: WorkResult | None = None
    """A run's end and figures (runner work only), once its host gave them."""
    requeued: bool = False
    """Of an earlier run of its request, which went back to the queue (its host was lost): it no longer
    decides how the request ends."""
    name: str | None = None
    """The object request it is an instance of (its ``name``, else its class;
    set for requests that use ``after``: :mod:`legionrm.scheduler.stages`)."""

    @property
    def failed(self) -> bool:
        """Did this instance's work fail (its run ended failed, timed out, or with its node)?"""
        return self.result is not None and self.result.state in FAILED_ENDS


ObjectState = Literal["running", "inert"]
StatusKind = Literal["deactivated", "activated", "migrated"]


class ObjectStatus(Frozen):
    """Where an object is: running as ``instance`` on ``host``, or inert with
    its persistent state (``saved_bytes``) in ``vault``."""

    object_id: str
    request_id: str
    user: str
    class_name: str
    state: ObjectState
    instance: InstanceRef | None = None
    host: str | None = None
    vault: str | None = None
    saved_bytes: int | None = None
    message: str = ""


class StatusChange(Frozen):
    """One change of an object's status, as recorded (what triggers hook)."""

    at: float
    kind: StatusKind
    object_id: str
    user: str
    instance_id: str | None = None
    """The active copy after the change (None when deactivated)."""
    host: str | None = None
    from_host: str | None = None
    vault: str | None = None
    detail: str = ""


class RequestInfo(Frozen):
    """What ``legionrm list`` and ``show`` print of one request."""

    id: str
    user: str
    state: RequestState
    reason: str = ""
    classes: tuple[str, ...] = ()
    count: int = 0
    pool: str = "/"
    submitted: float = 0.0
    earliest_start: float | None = None
    """For a pending request: no earlier than this can it start (the first
    walltime end among what runs); None when nothing running has a walltime."""
    start: float | None = None
    """The start time the request asked for (None: as soon as possible)."""
    reserved_start: float | None = None
    """For a pending request at the top of the queue: the start the queue
    reserved for it (EASY backfill: no later work may delay it)."""
    instances: tuple[InstanceInfo, ...] = ()
    failures: tuple[PlacementFailure, ...] = ()
    history: tuple[RequestEvent, ...] = Field(default_factory=tuple)
    exit_code: int | None = None
    """The work's exit code: the first non-zero of its instances' runs, else 0
    (``128 + signal`` for a run a signal ended); None until a run's result is known."""
    qos: str | None = None
    """The QoS it chose (None: its class's default)."""
    hold: str | None = None
    """``user`` or ``admin`` while held."""
    on_preempt: str | None = None
    """What preemption does to it: ``requeue`` or ``cancel`` (None: ``requeue``).
    Who preempted it, and why, is in its history (a ``preempted`` event)."""
    archived: bool = False
    """It finished and left the live book: this is what the durable history keeps of it."""
    after_ok: tuple[str, ...] = ()
    after_any: tuple[str, ...] = ()
    after_not_ok: tuple[str, ...] = ()
    """The requests it waits for (see :class:`~legionrm.models.SchedulingRequest`)."""
    begin_at: float | None = None
    """It does not start before this time."""
    requeue: bool = False
    """It goes back to the queue when its host is lost."""
    array: str | None = None
    """The array spec of an array's task, or of an array's summary (``show``/``list`` of the array's own id)."""
    array_index: int | None = None
    """A task's index in its array (None: not a task, or the array's summary)."""
    array_counts: dict[str, int] = Field(default_factory=dict)
    """An array's summary: how many of its tasks are in each state."""


class HeldReservation(Frozen):
    """An open reservation as a resource sees it, for the auditor."""

    token_id: str
    user: str
    expires_at: float
    holders: tuple[str, ...] = ()
    issuer: str = ""  # the scheduler (its holder's enactor) that asked for it: only that one audits it


class ResourceAudit(Frozen):
    """What a host or vault holds now, for the auditor: its use against its
    capacity (one number per dimension), its running instances (hosts) and
    its open reservations."""

    name: str
    kind: str = "host"
    now: float
    used: tuple[float, ...]
    capacity: tuple[float, ...]
    instances: tuple[InstanceRef, ...] = ()
    reservations: tuple[HeldReservation, ...] = ()


class AuditFinding(Frozen):
    """One disagreement the auditor found: a code, what it is about, what was seen."""

    code: str
    subject: str
    detail: str
    repaired: str = ""
    """What ``audit --repair`` did about it (empty: nothing, or no repair was asked)."""
