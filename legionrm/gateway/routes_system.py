"""The routes about the system: who am I, status, hosts, pools, MIL queries, plans, users.

``/api/v1/health`` and ``/api/v1/openapi.json`` are open; everything else is
signed (the door in :mod:`legionrm.gateway.app`).  Users see the hosts their
access allows (the Collection answers their query as them); administrators
list and remove users (a removed user is refused from their next call on).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web

from legionrm import codes
from legionrm.auth.errors import UnknownPrincipalError
from legionrm.collection.answering import Answering, answering
from legionrm.gateway.door import (
    PLANE,
    PRINCIPALS,
    SETTINGS,
    answer,
    body_of,
    caller_of,
    refusal,
    require_admin,
    status_of,
    user_of,
)
from legionrm.gateway.openapi import openapi
from legionrm.gateway.routes_requests import request_from
from legionrm.gateway.routes_schedulers import on, routed
from legionrm.models import ResourceRecord
from legionrm.models.api import (
    API_PREFIX,
    GatewayStatus,
    HostList,
    HostRow,
    PlanBody,
    PlanResult,
    PoolList,
    QueryBody,
)
from legionrm.version import __version__


def add(app: web.Application) -> None:
    r = app.router
    r.add_get(f"{API_PREFIX}/health", health)
    r.add_get(f"{API_PREFIX}/openapi.json", describe)
    r.add_get(f"{API_PREFIX}/whoami", whoami)
    r.add_get(f"{API_PREFIX}/status", status)
    r.add_get(f"{API_PREFIX}/hosts", hosts)
    r.add_get(f"{API_PREFIX}/pools", pools)
    r.add_post(f"{API_PREFIX}/query", query)
    r.add_post(f"{API_PREFIX}/plan", plan)
    r.add_get(f"{API_PREFIX}/users", users)
    r.add_delete(f"{API_PREFIX}/users/{{name}}", remove_user)


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True, "version": __version__})


async def describe(request: web.Request) -> web.Response:
    return web.json_response(openapi())


async def whoami(request: web.Request) -> web.Response:
    return answer(caller_of(request))


async def status(request: web.Request) -> web.Response:
    errors: list[str] = []
    try:
        sched = await request.app[PLANE].call(user_of(request), "scheduler", "status", {})
    except Exception as exc:  # noqa: BLE001 -- the gateway answers even when the Scheduler does not
        _, code, reason, _ = status_of(exc)
        sched, errors = None, [f"scheduler: {code}: {reason.splitlines()[0] if reason else ''}"]
    silent = await _answering(request) if _is_admin(request) else None
    return answer(GatewayStatus(version=__version__, user=user_of(request), scheduler=sched, errors=tuple(errors),
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

    return HostRow(name=r.name, state=str(a.get("state", "unknown")) if r.available else "off",
                   cpus_free=num("free_cpus"), cpus_total=num("cpus"), memory_gb=num("memory_gb"), load=num("load"),
                   owner_policy=str(a.get("policy", "")), pool=pool_of.get(r.name, r.nodepool or ""),
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


async def users(request: web.Request) -> web.Response:
    require_admin(request, "list users")
    return web.json_response({"users": [{"name": u.name, "groups": list(u.groups), "roles": list(u.roles)}
                                        for u in request.app[PRINCIPALS].fresh().list_users()]})


async def remove_user(request: web.Request) -> web.Response:
    require_admin(request, "remove users")
    name = request.match_info["name"]
    if name == caller_of(request).user:
        return refusal(409, codes.USER_SELF, "an administrator cannot remove themselves")
    try:
        request.app[PRINCIPALS].fresh().remove_user(name)
    except UnknownPrincipalError as exc:
        return refusal(404, codes.USER_UNKNOWN, str(exc))
    return web.json_response({"removed": name})
