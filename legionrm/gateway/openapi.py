"""``/api/v1/openapi.json``: the API described from the same pydantic models it speaks.

:data:`ROUTES` lists every path with its body and answer models; :func:`openapi`
turns it into an OpenAPI 3.1 document whose schemas are the models' own JSON
schemas, so the description cannot drift from what the gateway validates.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from legionrm.models import QueryResult, RequestInfo
from legionrm.models.api import (
    API_PREFIX,
    ApiError,
    Caller,
    CancelBody,
    CancelResult,
    EventList,
    GatewayStatus,
    HistoryList,
    HostList,
    LogsResult,
    PlanBody,
    PlanResult,
    PoolList,
    QueryBody,
    RequestList,
    SubmitBody,
    SubmitResult,
)
from legionrm.models.priority import PrioReport, ShareReport, UpdateBody
from legionrm.version import __version__

Route = tuple[str, str, type[BaseModel] | None, type[BaseModel] | None, str]
ROUTES: tuple[Route, ...] = (
    ("get", "/health", None, None, "Is the gateway up (open: no signature)"),
    ("get", "/whoami", None, Caller, "Who the signature proves the caller to be"),
    ("post", "/requests", SubmitBody, SubmitResult, "Submit a request (Legion's scheduleObjects)"),
    ("get", "/requests", None, RequestList, "The caller's requests (an administrator: all), ?user=&state="),
    ("get", "/requests/{id}", None, RequestInfo, "One request: its history, instances and the vetoes it met"),
    ("post", "/requests/{id}/cancel", CancelBody, RequestInfo, "Cancel one request"),
    ("post", "/requests/cancel", CancelBody, CancelResult, "Cancel many requests, by id or by user/state"),
    ("get", "/requests/{id}/events", None, EventList, "Its status changes after ?cursor= (show --follow)"),
    ("get", "/requests/{id}/logs", None, LogsResult, "A request's output, as its node's runner kept it (?instance=N)"),
    ("get", "/history", None, HistoryList, "Finished instances' accounting records, ?user=&since=&until=&state="),
    ("post", "/requests/{id}/hold", None, RequestInfo, "Hold a pending request (its owner or an administrator)"),
    ("post", "/requests/{id}/release", None, RequestInfo, "Release a held request (an owner: only their own hold)"),
    ("post", "/requests/{id}/update", UpdateBody, RequestInfo, "Set a pending request's priority or QoS (administrators)"),
    ("post", "/requests/{id}/top", None, RequestInfo, "Put a pending request first (administrators)"),
    ("get", "/share", None, ShareReport, "The fair-share tree: shares, raw and decayed usage, factors (sshare)"),
    ("get", "/prio", None, PrioReport, "Each pending request's priority factors (sprio)"),
    ("post", "/query", QueryBody, QueryResult, "A MIL query, answered as the caller"),
    ("post", "/plan", PlanBody, PlanResult, "Plan without enacting (get_candidate_placements, explain)"),
    ("get", "/hosts", None, HostList, "The hosts the caller may use"),
    ("get", "/pools", None, PoolList, "The resource pools"),
    ("get", "/status", None, GatewayStatus, "The gateway and the Scheduler's summary"),
    ("get", "/users", None, None, "Every user (administrators)"),
    ("delete", "/users/{name}", None, None, "Remove a user: refused from their next call on (administrators)"),
)
SIGNED_HELP = ("Every call but /health and /openapi.json carries an RFC 9421 HTTP Message Signature labelled "
               "'legionrm' (Ed25519, keyid = the user) over @method, @path, @query and Content-Digest "
               "(RFC 9530), with created and nonce parameters.")


@lru_cache(maxsize=1)
def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of this gateway (see the module doc)."""
    models = sorted({m for r in ROUTES for m in (r[2], r[3]) if m is not None} | {ApiError}, key=lambda m: m.__name__)
    _, defs = models_json_schema([(m, "validation") for m in models], ref_template="#/components/schemas/{model}")
    paths: dict[str, dict[str, Any]] = {}
    for method, path, body, result, summary in ROUTES:
        op: dict[str, Any] = {"summary": summary, "responses": {
            "200": {"description": "done", **({"content": _json(result)} if result else {})},
            "default": {"description": "refused or failed: one code and one line", "content": _json(ApiError)}}}
        if body is not None:
            op["requestBody"] = {"required": True, "content": _json(body)}
        params = [p.strip("{}") for p in path.split("/") if p.startswith("{")]
        if params:
            op["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params]
        if path != "/health":
            op["security"] = [{"httpMessageSignature": []}]
        paths.setdefault(API_PREFIX + path, {})[method] = op
    paths[API_PREFIX + "/openapi.json"] = {"get": {"summary": "This description", "responses": {"200": {
        "description": "OpenAPI 3.1"}}}}
    return {"openapi": "3.1.0", "info": {"title": "legionrm gateway", "version": __version__, "description": SIGNED_HELP},
            "paths": paths, "components": {"schemas": defs.get("$defs", {}), "securitySchemes": {
                "httpMessageSignature": {"type": "apiKey", "in": "header", "name": "Signature",
                                         "description": SIGNED_HELP}}}}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}
