"""The bodies of the gateway's HTTP API (``/api/v1/...``): what users send and get back.

The gateway (:mod:`legionrm.gateway`) validates every body it reads with these
models and answers with them; the Python client (:mod:`legionrm.client`)
parses its answers with the same classes, and ``/api/v1/openapi.json`` is made
from their JSON schemas.  The control plane's own types (a request's
:class:`~legionrm.models.RequestInfo`, a MIL
:class:`~legionrm.models.QueryResult`, a
:class:`~legionrm.models.ScheduleSuite`) travel inside them unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from legionrm.models.base import QueryResult
from legionrm.models.elastic import SchedulerStatus
from legionrm.models.requests import RequestInfo, StatusEvent
from legionrm.models.schedules import SchedulerResponse, ScheduleSuite
from legionrm.protocol import (  # re-exported (__all__)
    API_PREFIX,
    AS_HEADER,
    COVERED,
    MAX_SKEW_S,
    SIGNATURE_LABEL,
)
from legionrm.models.work import AccountRecord


class Body(BaseModel):
    """An API body: unknown fields are refused, so a misspelt key is an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ApiError(Body):
    """Every refusal and error the gateway answers: one code, one line, who said it."""

    code: str
    reason: str
    by: str = "gateway"


class Caller(Body):
    """Who the gateway proved the caller to be (``GET /whoami``)."""

    user: str
    roles: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    acting_as: str | None = None


class SubmitBody(Body):
    """``POST /requests``: a request shaped like a request file (its TOML tables as a
    mapping), or the file's TOML text; ``set`` overrides dotted keys (``object.0.count``);
    ``id`` names the request (else one is made)."""

    request: dict[str, Any] | None = None
    toml: str | None = None
    set: dict[str, str] = Field(default_factory=dict)
    id: str | None = None


class SubmitResult(Body):
    """What a submit got: the request's id, whether it was placed or queued, and the Scheduler's answer."""

    id: str
    ok: bool
    state: str = ""
    response: SchedulerResponse


class RequestList(Body):
    """``GET /requests``: the live and recent requests (``?all=1``: every one kept), oldest first;
    ``?limit=N`` per page, and ``next`` the cursor of the next page (None: this was the last)."""

    requests: tuple[RequestInfo, ...] = ()
    next: str | None = None


class EventList(Body):
    """``GET /requests/{id}/events?cursor=N``: the request's status events after ``cursor``
    (each event's ``seq`` is the next cursor)."""

    events: tuple[StatusEvent, ...] = ()


class CancelBody(Body):
    """``POST /requests/cancel``: these ids, or every request of ``user`` / in ``state`` the caller may cancel."""

    ids: tuple[str, ...] = ()
    user: str | None = None
    state: str | None = None
    reason: str = "cancelled by its user"


class CancelResult(Body):
    cancelled: tuple[RequestInfo, ...] = ()
    refused: dict[str, ApiError] = Field(default_factory=dict)


class LogsResult(Body):
    id: str
    stdout: str = ""
    stderr: str = ""


class HistoryList(Body):
    """``GET /api/v1/history``: finished instances' accounting records, by end time
    (a user's own; an administrator's: everyone's)."""

    records: tuple[AccountRecord, ...] = ()


class QueryBody(Body):
    mil: str
    include_unavailable: bool = False


class PlanBody(Body):
    """``POST /plan`` (Legion's ``get_candidate_placements`` and ``explain``): plan a
    request without enacting it; ``hosts`` also says why each would or would not be used."""

    request: dict[str, Any] | None = None
    toml: str | None = None
    hosts: tuple[str, ...] = ()


class PlanResult(Body):
    suite: ScheduleSuite
    hosts: dict[str, str] = Field(default_factory=dict)


class HostRow(Body):
    """One line of ``legionrm hosts``."""

    name: str
    state: str
    cpus_free: float | None = None
    cpus_total: float | None = None
    memory_gb: float | None = None
    gpus_free: float | None = None
    gpus_total: float | None = None
    custom: dict[str, tuple[float | None, float]] = Field(default_factory=dict)
    """Each custom resource kind (a Ray node's custom resources): name -> (free, total)."""
    load: float | None = None
    owner_policy: str = ""
    pool: str = ""
    degraded: str = ""
    """Why the host cannot write its state file now (it answers, grants nothing new); empty when it can."""
    drained: str | None = None  # why an administrator drained it (None: it takes new work)


class HostList(Body):
    hosts: tuple[HostRow, ...] = ()


class SchedulerRow(Body):
    """One line of ``legionrm schedulers``: a scheduler, what it serves, its queue."""

    name: str
    default: bool = False
    nodepools: tuple[str, ...] = ()
    constraint: str = "true"
    requests: dict[str, int] = Field(default_factory=dict)  # state -> how many (the caller's own, for a user)
    instances: int = 0
    error: str | None = None  # it did not answer: why


class SchedulerList(Body):
    schedulers: tuple[SchedulerRow, ...] = ()


class DrainBody(Body):
    """``POST /hosts/{name}/drain``: why (shown by ``hosts``)."""

    reason: str = Field(..., min_length=1, max_length=500)


class HostDrained(Body):
    host: str
    drained: str | None = None


class ReloadBody(Body):
    """``POST /reload``: a cluster file's text (and its name, for the messages)."""

    toml: str = Field(..., max_length=4 << 20)
    source: str = Field("cluster", max_length=4096)


class PoolEditBody(Body):
    """``POST /pools``: one pool created, updated (its ``[[pool]]`` table) or deleted (its ``path``)."""

    op: Literal["create", "update", "delete"]
    pool: dict[str, Any]


class Reloaded(Body):
    """What a reload (or one pool's change) changed, one line each (none: nothing to do)."""

    changes: tuple[str, ...] = ()


class PoolList(Body):
    pools: dict[str, dict[str, Any]] = Field(default_factory=dict)


class GatewayStatus(Body):
    """``GET /status``: the gateway's own facts and the Scheduler's summary as the caller may see it."""

    version: str
    user: str
    scheduler: SchedulerStatus | None = None  # the default scheduler's
    errors: tuple[str, ...] = ()
    schedulers: tuple[SchedulerRow, ...] = ()  # every scheduler and its queue (as ``legionrm schedulers``)
    answering: dict[str, Any] | None = None
    """For an administrator: how many of the resources ``up`` booted answer, and why the others do
    not (``{"total", "not_answering", "refusals"}``, :class:`legionrm.collection.answering.Answering`)."""


class Health(Body):
    """``GET /health`` (open): the gateway answers, and its version."""

    ok: bool = True
    version: str


class UserRow(Body):
    """One user as ``user list`` shows them."""

    name: str
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    os_user: str
    """The OS account their work runs as (by default the account of their own name)."""


class UserList(Body):
    users: tuple[UserRow, ...] = ()


class UserAddBody(Body):
    """``POST /users`` (administrators): ``legionrm user add NAME [--group G]... [--role R]... [--os-user A]``."""

    name: str = Field(min_length=1, max_length=64)
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ("user",)
    os_user: str | None = Field(None, min_length=1, max_length=64)


class UserAdded(Body):
    """The user added, and where the gateway wrote their credentials file (0600, in the service's
    home: the administrator hands it to the user; the key itself never crosses the wire)."""

    user: UserRow
    credentials: str


class UserRemoved(Body):
    removed: str


__all__ = [
    "API_PREFIX",
    "AS_HEADER",
    "COVERED",
    "MAX_SKEW_S",
    "SIGNATURE_LABEL",
    "ApiError",
    "Body",
    "Caller",
    "CancelBody",
    "CancelResult",
    "GatewayStatus",
    "HostList",
    "HostRow",
    "LogsResult",
    "PlanBody",
    "PlanResult",
    "PoolList",
    "QueryBody",
    "QueryResult",
    "RequestList",
    "SubmitBody",
    "SubmitResult",
    "Health",
    "UserAddBody",
    "UserAdded",
    "UserList",
    "UserRemoved",
    "UserRow",
]
