"""The routes and helpers about a system's several schedulers and its hosts' drain.

A request goes to the scheduler it (or its class object) names, else the
default (:meth:`~legionrm.scheduler.several.Roster.route`); ``show``,
``cancel``, ``events`` and ``logs`` find a request whichever scheduler
holds it (:func:`find`), and ``list`` asks them all (:func:`each`).
``GET /schedulers`` lists them with their queues; administrators drain and
resume hosts (``POST /hosts/{name}/drain`` and ``/resume``), through the
default scheduler, which reaches the host's actor.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from legionrm import codes
from legionrm.errors import SchedulingError
from legionrm.gateway.door import (
    PLANE,
    answer,
    body_of,
    require_admin,
    status_of,
    user_of,
)
from legionrm.gateway.plane import Unavailable
from legionrm.gateway.signatures import Refused
from legionrm.models import Refusal, SchedulingRequest
from legionrm.models.api import (
    DrainBody,
    HostDrained,
    SchedulerList,
    SchedulerRow,
)
from legionrm.scheduler.several import Roster


def roster(request: web.Request) -> Roster:
    """The system's schedulers, as its control plane knows them (one default when it does not say)."""
    return roster_of(request.app[PLANE])


def roster_of(plane: Any) -> Roster:
    """``plane``'s schedulers (one default when it does not say)."""
    get = getattr(plane, "roster", None)
    return get() if get is not None else Roster()


async def statuses(plane: Any, user: str, r: Roster) -> list[Any]:
    """Each scheduler of ``r``'s status as ``user`` may see it, in roster order (an exception: it did not answer)."""
    return await asyncio.gather(*(plane.call(user, f"scheduler:{n}", "status", {}) for n in r.names),
                                return_exceptions=True)


def scheduler_rows(r: Roster, got: list[Any]) -> tuple[SchedulerRow, ...]:
    """A :class:`SchedulerRow` per scheduler of ``r`` from its status in ``got`` (:func:`statuses`;
    an exception or None: the row says it did not answer)."""
    rows = []
    for spec, status in zip(r.schedulers, got):
        row = SchedulerRow(name=spec.name, default=spec.name == r.default, nodepools=spec.nodepools,
                           constraint=spec.constraint)
        if isinstance(status, BaseException):
            _, code, reason, _ = status_of(status)
            row = row.model_copy(update={"error": f"{code}: {reason.splitlines()[0] if reason else ''}"})
        elif status is None:
            row = row.model_copy(update={"error": "it did not answer"})
        else:
            row = row.model_copy(update={"requests": dict(status.requests), "instances": status.instances})
        rows.append(row)
    return tuple(rows)


async def on(request: web.Request, name: str, method: str, args: dict[str, Any]) -> Any:
    """``method(**args)`` on the scheduler ``name``, as the caller."""
    return await request.app[PLANE].call(user_of(request), f"scheduler:{name}", method, args)


def routed(request: web.Request, req: SchedulingRequest) -> str:
    """The scheduler ``req`` goes to; a 422 ``request.no_scheduler`` when it names none of the system's."""
    to = roster(request).route(req)
    if isinstance(to, Refusal):
        raise Refused(422, to.code, to.reason)
    return to


async def find(request: web.Request, method: str, args: dict[str, Any]) -> Any:
    """``method`` on the scheduler that holds the request ``args`` names: each is asked in
    turn, the default first, until one knows it.  A scheduler that does not answer is
    passed over; when none knows it, what one that answered said (else that none answered)."""
    said: Exception | None = None
    down: Exception | None = None
    for name in roster(request).names:
        try:
            return await on(request, name, method, args)
        except SchedulingError as exc:
            if exc.code != codes.REQUEST_UNKNOWN:
                raise
            said = exc
        except Unavailable as exc:
            down = exc
    raise said or down or AssertionError("a roster is never empty")


async def each(request: web.Request, method: str, args: dict[str, Any]) -> list[tuple[str, Any]]:
    """``method`` on every scheduler at once: (name, its answer or the exception it raised)."""
    names = roster(request).names
    got = await asyncio.gather(*(on(request, n, method, args) for n in names), return_exceptions=True)
    return list(zip(names, got))


async def schedulers(request: web.Request) -> web.Response:
    """Every scheduler, what it serves and its queue (a user sees their own requests in it)."""
    r = roster(request)
    return answer(SchedulerList(schedulers=scheduler_rows(r, await statuses(request.app[PLANE], user_of(request), r))))


async def _set_drain(request: web.Request, reason: str | None) -> web.Response:
    host = request.match_info["name"]
    if not await on(request, roster(request).default, "drain", {"host": host, "reason": reason}):
        raise Refused(404, codes.RESOURCE_UNKNOWN, f"no host {host!r} in this system")
    return answer(HostDrained(host=host, drained=reason))


async def drain(request: web.Request) -> web.Response:
    """Drain a host: it finishes its work and takes no new work (administrators)."""
    require_admin(request, "drain hosts")
    return await _set_drain(request, (await body_of(request, DrainBody)).reason)


async def resume(request: web.Request) -> web.Response:
    """Let a drained host take new work again (administrators)."""
    require_admin(request, "resume hosts")
    return await _set_drain(request, None)
