"""A scheduling request's life: its states, the history of its transitions,
and the views ``list`` / ``show`` give of it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from legionrm.models.base import Frozen
from legionrm.models.reservations import InstanceRef
from legionrm.models.schedules import PlacementFailure

RequestState = Literal["pending", "admitted", "placing", "reserved", "running", "completed", "failed", "cancelled"]
"""``pending -> admitted -> placing -> running -> completed | failed | cancelled``;
a request with a future start goes ``placing -> reserved -> running`` (its
hosts reserved ahead, its instances started at its start time)."""

FINAL_STATES: tuple[RequestState, ...] = ("completed", "failed", "cancelled")

InstanceState = Literal["running", "ended", "lost", "stopped"]


class RequestEvent(Frozen):
    """One transition: when, into which state, and why."""

    at: float
    state: RequestState
    reason: str = ""


EventStatus = Literal["pending", "admitted", "placing", "reserved", "started", "ended", "failed", "cancelled",
                     "host_lost", "migrated"]
"""What a trigger may wait for: a request's transitions (``running`` is
``started``, ``completed`` is ``ended``) and its instances' (``started``,
``ended``, ``host_lost``, ``migrated``)."""


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
    instances: tuple[InstanceInfo, ...] = ()
    failures: tuple[PlacementFailure, ...] = ()
    history: tuple[RequestEvent, ...] = Field(default_factory=tuple)


class HeldReservation(Frozen):
    """An open reservation as a resource sees it, for the auditor."""

    token_id: str
    user: str
    expires_at: float
    holders: tuple[str, ...] = ()


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
