"""Live reconfiguration (administrators): ``POST /reload`` and ``POST /pools``.

``/reload`` takes a cluster file's text, validates it as ``up`` would, plans
the change (:func:`~legionrm.scheduler.several.reload.plan_reload`) and
applies it: the pools through the pool owner, all or nothing through the
Peloton validators, then each scheduler whose nodepools or constraint
changed.  A change that is refused (``reload.refused``: a validator said
no, or it cannot be made live) leaves everything as it was and says why in
one line.  ``/pools`` creates, updates or deletes one pool the same way.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from legionrm import codes
from legionrm.config import parse_cluster
from legionrm.gateway.door import (
    PLANE,
    answer,
    body_of,
    refusal,
    require_admin,
    user_of,
)
from legionrm.gateway.several.schedulers import on, roster
from legionrm.gateway.signatures import Refused
from legionrm.models import PoolChange, PoolSpec, Refusal
from legionrm.models.api import PoolEditBody, ReloadBody, Reloaded
from legionrm.scheduler.pools import pool_spec
from legionrm.scheduler.several import plan_reload
from legionrm.tomlio import loads_toml


async def _pools(request: web.Request) -> list[PoolSpec]:
    return list(await request.app[PLANE].call(user_of(request), "pools", "specs", {}))


async def _reconfigure(request: web.Request, changes: list[PoolChange], default: str | None | bool) -> Refusal | None:
    return await request.app[PLANE].call(user_of(request), "pools", "reconfigure",  # type: ignore[no-any-return]
                                         {"changes": changes, "default_pool": default})


async def reload(request: web.Request) -> web.Response:
    """Apply a cluster file's pools and schedulers to the running system (see the module)."""
    require_admin(request, "reload the system")
    body: ReloadBody = await body_of(request, ReloadBody)
    new = parse_cluster(loads_toml(body.toml, file=body.source), file=body.source)  # ConfigError: 400, one line
    plane = request.app[PLANE]
    running = getattr(plane, "cluster", lambda: None)()
    pools = await _pools(request)
    plan = plan_reload(roster(request), tuple(pools), running, new)
    if plan.refused is not None:
        raise Refused(409, codes.RELOAD_REFUSED, plan.refused)
    if plan.pools or plan.default_pool != next((p.path for p in pools if p.default), None):
        refused = await _reconfigure(request, list(plan.pools), plan.default_pool)
        if refused is not None:
            return refusal(409, refused.code, refused.reason, refused.by or "pools")
    for name, spec in plan.serves.items():
        await on(request, name, "serve", {"spec": spec})
    record = getattr(plane, "record_reload", None)
    if record is not None:
        record(body.toml, plan.roster)
    return answer(Reloaded(changes=tuple(plan.changes)))


async def edit_pool(request: web.Request) -> web.Response:
    """Create, update or delete one pool (``legionrm pools create|update|delete``)."""
    require_admin(request, "change pools")
    body: PoolEditBody = await body_of(request, PoolEditBody)
    table: dict[str, Any] = dict(body.pool)
    if body.op == "delete":
        table = {"path": table.get("path")}
    spec = pool_spec(table, file="pool", where="pool", allow_default=True)  # ConfigError: 400, one line
    current = next((p.path for p in await _pools(request) if p.default), None)
    default: str | None | bool = spec.path if spec.default else (None if body.op == "delete" and current == spec.path
                                                                 else False)
    refused = await _reconfigure(request, [PoolChange(op=body.op, spec=spec)], default)
    if refused is not None:
        return refusal(409, refused.code, refused.reason, refused.by or "pools")
    return answer(Reloaded(changes=(f"pool {body.op} {spec.path}",)))
