"""The one table of the gateway's routes: method, path, handler, body model, answer model.

:func:`add` registers every row on the aiohttp router, :func:`open_paths` gives
the door the rows it lets through unsigned, and :mod:`legionrm.gateway.openapi`
describes the same rows, so a route cannot be served without being described
(or described without being served).  The handlers live by area:
:mod:`~legionrm.gateway.routes_requests`, :mod:`~legionrm.gateway.routes_system`,
:mod:`~legionrm.gateway.routes_users`, and for several schedulers and live changes
:mod:`legionrm.gateway.several`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from pydantic import BaseModel

from legionrm.gateway import routes_requests as rq
from legionrm.gateway import routes_system as sy
from legionrm.gateway import routes_users as us
from legionrm.gateway.several import reload as rl
from legionrm.gateway.several import schedulers as sc
from legionrm.gateway.openapi import openapi
from legionrm.models import QueryResult, RequestInfo
from legionrm.models.priority import PrioReport, ShareReport, UpdateBody
from legionrm.models.api import (
    API_PREFIX,
    Caller,
    CancelBody,
    CancelResult,
    DrainBody,
    EventList,
    GatewayStatus,
    Health,
    HistoryList,
    HostDrained,
    HostList,
    LogsResult,
    PlanBody,
    PlanResult,
    PoolEditBody,
    PoolList,
    QueryBody,
    ReloadBody,
    Reloaded,
    RequestList,
    SchedulerList,
    SubmitBody,
    SubmitResult,
    UserAddBody,
    UserAdded,
    UserList,
    UserRemoved,
)


@dataclass(frozen=True)
class Route:
    """One route: ``method`` and ``path`` (under ``/api/v1``), its handler, the model its body must
    be (None: no body), the model it answers with, one line saying what it does, and whether the
    door lets it through unsigned."""

    method: str
    path: str
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    body: type[BaseModel] | None
    result: type[BaseModel] | None
    summary: str
    signed: bool = True
    status: int = 200

    @property
    def url_path(self) -> str:
        return API_PREFIX + self.path


async def describe(request: web.Request) -> web.Response:
    return web.json_response(openapi(ROUTES))


ROUTES: tuple[Route, ...] = (
    Route("GET", "/health", sy.health, None, Health, "Is the gateway up (open: no signature)", signed=False),
    Route("GET", "/openapi.json", describe, None, None, "This description (open: no signature)", signed=False),
    Route("GET", "/whoami", sy.whoami, None, Caller, "Who the signature proves the caller to be"),
    Route("POST", "/requests", rq.submit, SubmitBody, SubmitResult, "Submit a request (Legion's scheduleObjects)",
          status=201),
    Route("GET", "/requests", rq.list_requests, None, RequestList,
          "The caller's requests (an administrator: all), ?user=&state="),
    Route("POST", "/requests/cancel", rq.cancel_many, CancelBody, CancelResult,
          "Cancel many requests, by id or by user/state"),
    Route("GET", "/requests/{id}", rq.show, None, RequestInfo, "One request: its history, instances and the vetoes it met"),
    Route("POST", "/requests/{id}/cancel", rq.cancel_one, CancelBody, RequestInfo, "Cancel one request"),
    Route("GET", "/requests/{id}/events", rq.events, None, EventList, "Its status changes after ?cursor= (show --follow)"),
    Route("GET", "/requests/{id}/logs", rq.logs, None, LogsResult,
          "A request's output, as its node's runner kept it (?instance=N)"),
    Route("GET", "/history", rq.history, None, HistoryList,
          "Finished instances' accounting records, ?user=&since=&until=&state="),
    Route("POST", "/requests/{id}/hold", rq.queue_verb("hold"), None, RequestInfo,
          "Hold a pending request (its owner or an administrator)"),
    Route("POST", "/requests/{id}/release", rq.queue_verb("release"), None, RequestInfo,
          "Release a held request (an owner: only their own hold)"),
    Route("POST", "/requests/{id}/update", rq.update, UpdateBody, RequestInfo,
          "Set a pending request's priority or QoS (administrators)"),
    Route("POST", "/requests/{id}/top", rq.queue_verb("top"), None, RequestInfo,
          "Put a pending request first (administrators)"),
    Route("GET", "/share", rq.share, None, ShareReport,
          "The fair-share tree: shares, raw and decayed usage, factors (sshare)"),
    Route("GET", "/prio", rq.prio, None, PrioReport, "Each pending request's priority factors (sprio)"),
    Route("POST", "/query", sy.query, QueryBody, QueryResult, "A MIL query, answered as the caller"),
    Route("POST", "/plan", sy.plan, PlanBody, PlanResult, "Plan without enacting (get_candidate_placements, explain)"),
    Route("GET", "/hosts", sy.hosts, None, HostList, "The hosts the caller may use"),
    Route("GET", "/pools", sy.pools, None, PoolList, "The resource pools"),
    Route("POST", "/pools", rl.edit_pool, PoolEditBody, Reloaded,
          "Create, update or delete one pool, through the pool validators (administrators)"),
    Route("POST", "/reload", rl.reload, ReloadBody, Reloaded,
          "Apply a cluster file's pools and schedulers without a restart, all or nothing (administrators)"),
    Route("GET", "/schedulers", sc.schedulers, None, SchedulerList, "The system's schedulers, what each serves, its queue"),
    Route("POST", "/hosts/{name}/drain", sc.drain, DrainBody, HostDrained,
          "Drain a host: it finishes its work and takes no new work (administrators)"),
    Route("POST", "/hosts/{name}/resume", sc.resume, None, HostDrained,
          "Let a drained host take new work again (administrators)"),
    Route("GET", "/status", sy.status, None, GatewayStatus, "The gateway and the Scheduler's summary"),
    Route("GET", "/users", us.users, None, UserList, "Every user (administrators)"),
    Route("POST", "/users", us.add_user, UserAddBody, UserAdded,
          "Add a user and write their credentials file in the service's home (administrators)", status=201),
    Route("DELETE", "/users/{name}", us.remove_user, None, UserRemoved,
          "Remove a user: refused from their next call on (administrators)"),
)


def add(app: web.Application) -> None:
    """Every route of :data:`ROUTES` on ``app``'s router."""
    for r in ROUTES:
        app.router.add_route(r.method, r.url_path, r.handler)


def open_paths() -> frozenset[str]:
    """The paths the door lets through without a signature."""
    return frozenset(r.url_path for r in ROUTES if not r.signed)
