"""What the Scheduler confirms itself: the objects a request asks to
activate (which run already, which it cannot find), and Legion's step 6,
the Enactor's fully reserved schedule.  Pure."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable, Iterable, Mapping

from legionrm import codes
from legionrm.errors import SchedulingError
from legionrm.models import (
    EnactResult,
    InstanceRef,
    PlacementFailure,
    Refusal,
    ScheduleProposal,
    SchedulerResponse,
    SchedulingRequest,
)
from legionrm.models.schedules import start_problem


Activator = Callable[[str], "InstanceRef | PlacementFailure"]
"""Activates one object that is not running (an inert one, or one that moved):
its running copy, or why not."""


def activation(names: Iterable[str], running: Mapping[str, InstanceRef], by: str,
               activator: Activator | None = None) -> tuple[list[InstanceRef], list[PlacementFailure]]:
    """The objects ``names`` asks to activate: those ``running`` already
    (activating one is a no-op and the response lists it); each other one
    through ``activator`` (an inert object is placed anew and restored), in
    order; without an activator, an ``activate.unknown`` failure for each
    (by scheduler ``by``).  Any failure sinks the whole request before
    anything is admitted, planned or reserved (objects activated before it
    stay active)."""
    active: list[InstanceRef] = []
    failed: list[PlacementFailure] = []
    for n in names:
        got = running.get(n)
        if got is None and activator is not None:
            if failed:
                continue  # the request is sunk already: activate nothing more
            got = activator(n)
        if isinstance(got, InstanceRef):
            active.append(got)
        else:
            failed.append(got if isinstance(got, PlacementFailure) else PlacementFailure(
                key=n, resource=by, code=codes.ACTIVATE_UNKNOWN, stage="plan", lasting=True,
                reason=f"no object {n!r} that runs or rests inert is known to scheduler {by!r}"))
    return active, failed


def validate_request(request: SchedulingRequest, now: float | None = None) -> None:
    """Raise SchedulingError for a request that asks for nothing, or (given the
    clock's ``now``) whose start is too far in the past or the future."""
    if not request.objects and not request.activate:
        raise SchedulingError(f"request {request.request_id!r} asks for nothing (no objects, nothing to activate)")
    if now is not None and (why := start_problem(request.start, now)) is not None:
        raise SchedulingError(f"request {request.request_id!r}: {why}")


_KEY = attrgetter("key")


def check_proposal(keys: frozenset[str] | None, proposal: ScheduleProposal, scheduler: str) -> bool | Refusal:
    """True when ``proposal`` places exactly ``keys`` (the placement keys of
    the request this scheduler is enacting); a Refusal by ``scheduler`` when
    no such request is being enacted (``approval.unknown_request``: a stale or
    foreign enactment) or the placements differ (``approval.keys``).  Pool
    admission was charged before planning."""
    if keys is None:
        return Refusal(code=codes.APPROVAL_UNKNOWN_REQUEST, by="scheduler",
                       reason=f"scheduler {scheduler!r} is not scheduling request {proposal.request_id!r}")
    got = frozenset(map(_KEY, proposal.placements))  # (read in C: twice per enactment, once per placement)
    if got != keys or len(got) != len(proposal.placements):
        missing, extra = sorted(keys - got), sorted(got - keys)
        return Refusal(code=codes.APPROVAL_KEYS, by="scheduler",
                       reason=f"the schedule does not place exactly the request's instances "
                              f"(missing {missing}, not asked for {extra})")
    return True


def refused_at_door(request: SchedulingRequest, refusal: Refusal, key: str = "*") -> SchedulerResponse:
    """The answer to a request refused before it is queued (by its door, or at submit)."""
    fail = PlacementFailure(key=key, resource=refusal.by or "scheduler", code=refusal.code, reason=refusal.reason,
                            stage="plan", lasting=True)
    return SchedulerResponse(request_id=request.request_id, ok=False, failures=(fail,), state="refused",
                             message=f"{refusal.code}: {refusal.reason}")


def succeeded(entry: Any, instances: list[InstanceRef], masters: int, result: EnactResult | None,
              prefix: str) -> SchedulerResponse:
    """The answer to an attempt that started ``instances`` for the book's ``entry``."""
    where = ", ".join(f"{i.instance_id}@{i.host}" for i in instances)
    return SchedulerResponse(request_id=entry.id, ok=True, instances=tuple(instances), masters=masters,
                             enact=result, message=(prefix + where).rstrip(": "), state=entry.state)

