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

from typing import Any, Callable, Iterable, TypeVar

from legionrm import codes
from legionrm.heartbeat import OWNER_MARK
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


def shunning(request: SchedulingRequest, failures: Iterable[PlacementFailure],
             snapshot: Callable[[], Any] | None = None) -> dict[str, SchedulingRequest]:
    """The change that keeps the hosts whose owner refused ``request`` for good
    (a reservation or start refused ``lasting``) out of its later plans: the
    book's ``request=`` (nothing when none did).  Such a host is not asked again
    while its ``owner_mark`` (read from ``snapshot()``, the Collection's) stays
    what it was: the request remembers it in ``vetoed``, with the request, so it
    is written before it is acted on and a restarted scheduler keeps it; the
    request waits for the others (:func:`lifted` asks such a host again)."""
    lasting = [f for f in failures if f.lasting and f.stage in ("reserve", "start") and f.resource]
    names = {name for f in lasting for name in (f.resource, f.resource.rsplit("@", 1)[-1])}
    if not names:
        return {}
    snap = snapshot() if snapshot is not None else None
    marks = {h: mark_of(snap, h) for h in {f.resource.rsplit("@", 1)[-1] for f in lasting}}
    return {"request": avoiding(request, names).model_copy(update={"vetoed": {**request.vetoed, **marks}})}


def mark_of(snap: Any, host: str) -> str:
    """``host``'s ``owner_mark`` in the Collection's snapshot ``snap`` ("" when it has none, or is not there)."""
    try:
        return str(snap.record(host).attributes.get(OWNER_MARK, "")) if snap is not None else ""
    except (KeyError, LookupError):
        return ""


def lifted(request: SchedulingRequest, snapshot: Callable[[], Any]) -> SchedulingRequest | None:
    """``request`` with the lasting vetoes that no longer hold lifted: each host of ``vetoed``
    whose ``owner_mark`` changed since (its owner's policy changed, or an administrator resumed
    it) leaves ``vetoed`` and ``avoid_hosts`` (as ``Policy@host`` too), so it is asked again.
    None when none was lifted (or none is kept); a host not in the snapshot keeps its veto."""
    if not request.vetoed:
        return None
    snap = snapshot()
    gone = {h for h, mark in request.vetoed.items() if (now := mark_of(snap, h)) and now != mark}
    if not gone:
        return None
    return request.model_copy(update={"vetoed": {h: m for h, m in request.vetoed.items() if h not in gone},
                                      "objects": tuple(o.model_copy(update={"avoid_hosts": tuple(
                                          n for n in o.avoid_hosts if n.rsplit("@", 1)[-1] not in gone)})
                                          for o in request.objects)})


def lift_vetoes(book: Any, entry: Any, snapshot: Callable[[], Any]) -> SchedulingRequest:
    """The request of ``entry`` (of the request book ``book``) to attempt now: with the vetoes
    :func:`lifted` lifts written first (``book.amend``), so the host is asked again."""
    request = lifted(entry.request, snapshot)
    if request is not None:
        book.amend(entry, request=request)
    now: SchedulingRequest = entry.request
    return now


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
