"""A new schedule when every master fails (Legion: the Enactor reports the
failure to the Scheduler, which may build new schedules).

:func:`enact_with_replans` enacts a plan; when the Enactor answers that every
master failed, it plans afresh with what the failures taught (every resource
that refused a reservation or a start is avoided, through
``ObjectRequest.avoid_hosts`` and the planner's ``avoid`` filter) and enacts
once more, up to ``request.replans`` times.  Pure: the planning and the
enacting are the caller's functions (the Scheduler's planner and Enactor):
the Scheduler decides to plan again, so it lives in the Scheduler.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from legionrm import codes
from legionrm.models import EnactResult, PlacementFailure, SchedulingRequest

P = TypeVar("P")


def refused_by(result: EnactResult) -> set[str]:
    """The resources that refused a placement (reservation or start) in any
    master.  A policy names itself ``"Policy@host"``: the host is taken too."""
    return {name for a in result.attempts for f in a.failures
            if f.stage in ("reserve", "start") and f.resource
            for name in (f.resource, f.resource.rsplit("@", 1)[-1])}


def avoiding(request: SchedulingRequest, hosts: set[str]) -> SchedulingRequest:
    """``request`` with ``hosts`` added to every object request's ``avoid_hosts``."""
    return request.model_copy(update={"objects": tuple(
        o.model_copy(update={"avoid_hosts": tuple(sorted(set(o.avoid_hosts) | hosts))}) for o in request.objects)})


def shunning(request: SchedulingRequest, failures: Iterable[PlacementFailure]) -> dict[str, SchedulingRequest]:
    """The change that keeps the hosts whose owner refused ``request`` for good
    (a reservation or start refused ``lasting``) out of its later plans: the
    book's ``request=`` (nothing when none did).  Such a host is not asked again;
    the request waits for the others."""
    hosts = {name for f in failures if f.lasting and f.stage in ("reserve", "start") and f.resource
             for name in (f.resource, f.resource.rsplit("@", 1)[-1])}
    return {"request": avoiding(request, hosts)} if hosts else {}


def enact_with_replans(
    request: SchedulingRequest,
    plan: P,
    enact: Callable[[P, int], EnactResult],
    make_plan: Callable[[SchedulingRequest], P | None],
    note: Callable[[str], None] = lambda _: None,
) -> tuple[P, EnactResult]:
    """Enact ``plan``; on an all-masters failure, re-plan (``make_plan``
    answers None when no plan can be made) and enact again, at most
    ``request.replans`` times.  A fresh plan that cannot be made, or one that
    would avoid nothing new, ends it.  A failed answer lists every master's
    failure of every plan, oldest first.  ``note`` hears each re-plan.
    ``enact`` gets the plan and its number (0 first): a re-plan's enactment
    must send fresh reservation request ids, or a host that answered the
    first one would answer its (cancelled) token again."""
    result = enact(plan, 0)
    avoided: set[str] = set()
    for n in range(request.replans):
        if result.ok:
            break
        new = refused_by(result) - avoided
        if not new:
            break
        avoided |= new
        fresh = make_plan(avoiding(request, avoided))
        if fresh is None:
            break
        note(f"re-plan {n + 1} after every master failed, avoiding {', '.join(sorted(avoided))}"[:500])
        earlier = result.attempts
        plan, result = fresh, enact(fresh, n + 1)
        if not result.ok:
            result = result.model_copy(update={"attempts": earlier + result.attempts})
    return plan, result


NEVER = frozenset({
    codes.CLASS_UNKNOWN, codes.RESPOOL_UNKNOWN, codes.RESPOOL_NOT_LEAF, codes.RESPOOL_DUPLICATE, codes.RESPOOL_LIMIT,
    codes.DUCC_CLASS_UNKNOWN, codes.DUCC_USER, codes.ACTIVATE_UNKNOWN, codes.REQUEST_TOO_BIG,
})
"""Refusals of the request itself that no amount of waiting can change; with
a plan failure marked ``lasting`` (every host refused for what it is), such
a request fails at once instead of waiting.  A host's own lasting refusal
(its owner's ``lasting = true``) is not asked again: the request waits for
the other hosts (:func:`~legionrm.scheduler.replan.shunning`)."""


def for_good(failures: Iterable[PlacementFailure], grows: Iterable[str] = ()) -> list[PlacementFailure]:
    """The failures of ``failures`` no amount of waiting changes (:data:`NEVER`, or a plan failure
    marked lasting), but for the codes in ``grows`` (an autoscaler's new node may end those)."""
    grows = frozenset(grows)
    return [f for f in failures if f.code in NEVER or (f.lasting and f.stage == "plan" and f.code not in grows)]
