"""The routes about the system: health, who am I, status, hosts, pools, MIL queries, plans.

``/api/v1/health`` is open; everything else is signed (the door,
:mod:`legionrm.gateway.door`; the table, :mod:`legionrm.gateway.routes`).
Users see the hosts their access allows (the Collection answers their query
as them); an administrator sees them all, the unavailable too.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web

from legionrm.collection.answering import Answering, answering
from legionrm.gateway.door import (
    PLANE,
    SETTINGS,
    answer,
    body_of,
    caller_of,
    status_of,
    user_of,
)
from legionrm.heartbeat import DEGRADED
from legionrm.gateway.routes_requests import request_from
from legionrm.gateway.several.schedulers import on, roster, routed, scheduler_rows, statuses
from legionrm.models import ResourceRecord
from legionrm.models.reservations import BUILTIN_KINDS
from legionrm.models.api import (
    GatewayStatus,
    Health,
    HostList,
    HostRow,
    PlanBody,
    PlanResult,
    PoolList,
    QueryBody,
)
from legionrm.version import __version__


async def health(request: web.Request) -> web.Response:
    return answer(Health(version=__version__))


async def whoami(request: web.Request) -> web.Response:
    return answer(caller_of(request))


async def status(request: web.Request) -> web.Response:
    """The gateway, the default scheduler's summary, every scheduler's queue (as the caller may see them)."""
    r = roster(request)
    got = await statuses(request.app[PLANE], user_of(request), r)
    sched, errors = got[0], []  # the default's (the first)
    if isinstance(sched, BaseException):  # the gateway answers even when the Scheduler does not
        _, code, reason, _ = status_of(sched)
        sched, errors = None, [f"scheduler: {code}: {reason.splitlines()[0] if reason else ''}"]
    silent = await _answering(request) if _is_admin(request) else None
    return answer(GatewayStatus(version=__version__, user=user_of(request), scheduler=sched, errors=tuple(errors),
                                schedulers=scheduler_rows(r, got),
                                answering=silent.as_json() if silent is not None else None))


def _is_admin(request: web.Request) -> bool:
    return "admin" in caller_of(request).roles and not caller_of(request).acting_as


async def _answering(request: web.Request) -> Answering | None:
    """Which resources do not answer, and why: those ``up`` booted (its ``up.json`` in the home)
    beside those the Collection holds and the writes it refused; None when the Collection does not say."""
    plane, user = request.app[PLANE], user_of(request)
    try:
        snap, refused = await asyncio.gather(plane.call(user, "collection", "snapshot", {}),
                                             plane.call(user, "collection", "refused_writes", {}))
    except Exception:  # noqa: BLE001 -- status answers without it (a Collection from before it kept them)
        return None
    try:
        state = json.loads((Path(request.app[SETTINGS]["home"]) / "up.json").read_text())
    except (OSError, ValueError):
        state = {}
    expected = state.get("resources", []) if isinstance(state, dict) else []
    return answering(expected, snap.resource_names(), refused)


def host_row(r: ResourceRecord, pool_of: dict[str, str]) -> HostRow:
    a = r.attributes

    def num(key: str) -> float | None:
        v = a.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    kinds = sorted(k for k in a if k not in BUILTIN_KINDS and num(k) is not None and num("free_" + k) is not None)
    return HostRow(name=r.name, state=str(a.get("state", "unknown")) if r.available else "off",
                   cpus_free=num("free_cpus"), cpus_total=num("cpus"), memory_gb=num("memory_gb"), load=num("load"),
                   gpus_free=num("free_gpus"), gpus_total=num("gpus"),
                   custom={k: (num("free_" + k), num(k) or 0.0) for k in kinds},
                   owner_policy=str(a.get("policy", "")), pool=pool_of.get(r.name, r.nodepool or ""),
                   degraded=str(a.get(DEGRADED) or ""),
                   drained=str(a.get("drain_reason") or "drained") if a.get("drained") else None)


async def hosts(request: web.Request) -> web.Response:
    """Every host the caller may use (an administrator: all, the unavailable too)."""
    admin = _is_admin(request)
    result = await request.app[PLANE].call(user_of(request), "collection", "query",
                                           {"text": "true", "caller": None, "include_unavailable": admin})
    rows = [host_row(r, {}) for r in result.records if r.kind == "host"]
    return answer(HostList(hosts=tuple(sorted(rows, key=lambda h: h.name))))


async def pools(request: web.Request) -> web.Response:
    status = await request.app[PLANE].call(user_of(request), "scheduler", "status", {})
    return answer(PoolList(pools=status.pools))


async def query(request: web.Request) -> web.Response:
    body: QueryBody = await body_of(request, QueryBody)
    return answer(await request.app[PLANE].call(user_of(request), "collection", "query", {
        "text": body.mil, "caller": None, "include_unavailable": body.include_unavailable}))


async def plan(request: web.Request) -> web.Response:
    """The masters and deltas a request would get, not enacted (``get_candidate_placements``),
    and for each host in ``hosts`` why it would or would not be used (``explain``)."""
    body: PlanBody = await body_of(request, PlanBody)
    user = user_of(request)
    req = request_from(body.request, body.toml, {}, None, user)
    to = routed(request, req)  # the scheduler that would place it
    suite, *why = await asyncio.gather(
        on(request, to, "make_schedules", {"request": req}),
        *(on(request, to, "explain", {"request": req, "host": h}) for h in body.hosts))
    return answer(PlanResult(suite=suite, hosts=dict(zip(body.hosts, why))))
