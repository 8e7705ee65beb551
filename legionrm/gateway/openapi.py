"""``/api/v1/openapi.json``: the API described from the same table and pydantic models it serves.

:func:`openapi` turns the route table (:data:`legionrm.gateway.routes.ROUTES`:
each path with its body and answer models) into an OpenAPI 3.1 document whose
schemas are the models' own JSON schemas, so the description cannot drift from
what the gateway routes and validates.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from legionrm.models.api import ApiError
from legionrm.version import __version__

SIGNED_HELP = ("Every call but /health and /openapi.json carries an RFC 9421 HTTP Message Signature labelled "
               "'legionrm' (Ed25519, keyid = the user) over @method, @path, @query and Content-Digest "
               "(RFC 9530), with created and nonce parameters.")


class Described(Protocol):
    """What the description needs of a route (:class:`legionrm.gateway.routes.Route`)."""

    method: str
    url_path: str
    body: type[BaseModel] | None
    result: type[BaseModel] | None
    summary: str
    signed: bool
    status: int


@lru_cache(maxsize=4)
def openapi(routes: Sequence[Described]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes`` (see the module doc)."""
    models = sorted({m for r in routes for m in (r.body, r.result) if m is not None} | {ApiError},
                    key=lambda m: m.__name__)
    _, defs = models_json_schema([(m, "validation") for m in models], ref_template="#/components/schemas/{model}")
    paths: dict[str, dict[str, Any]] = {}
    for r in routes:
        op: dict[str, Any] = {"summary": r.summary, "responses": {
            str(r.status): {"description": "done", **({"content": _json(r.result)} if r.result else {})},
            "default": {"description": "refused or failed: one code and one line", "content": _json(ApiError)}}}
        if r.body is not None:
            op["requestBody"] = {"required": True, "content": _json(r.body)}
        params = [p.strip("{}") for p in r.url_path.split("/") if p.startswith("{")]
        if params:
            op["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params]
        if r.signed:
            op["security"] = [{"httpMessageSignature": []}]
        paths.setdefault(r.url_path, {})[r.method.lower()] = op
    return {"openapi": "3.1.0", "info": {"title": "legionrm gateway", "version": __version__, "description": SIGNED_HELP},
            "paths": paths, "components": {"schemas": defs.get("$defs", {}), "securitySchemes": {
                "httpMessageSignature": {"type": "apiKey", "in": "header", "name": "Signature",
                                         "description": SIGNED_HELP}}}}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}
