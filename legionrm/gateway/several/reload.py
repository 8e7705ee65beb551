"""Live reconfiguration (administrators): ``POST /reload`` and ``POST /pools``.

``/reload`` takes a cluster file's text, validates it as ``up`` would, and
changes the running system to it, all or nothing, in three phases:

1. plan (:func:`~legionrm.scheduler.several.reload.plan_reload`, pure): what
   changes, and whether each change can be made live (else ``reload.refused``
   in one line);
2. check: each scheduler says whether it can take the new site policy (no
   request it holds is in a QoS the file drops) and each actor that carries a
   changed host or vault whether it can take the new policy; nothing changes;
3. apply, in order (:func:`~legionrm.scheduler.several.steps.all_or_nothing`):
   the pools through the pool owner (all or nothing through the Peloton
   validators), the site policy on each scheduler, the hosts' and vaults'
   policies and access lists (through the default scheduler, which reaches
   their actors), then each scheduler whose nodepools or constraint changed.
   When a step fails, it and every step before it are set back to what they
   were (``reload.rolled_back``; ``reload.partial`` when that fails too).

``/pools`` creates, updates or deletes one pool the same way.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

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
from legionrm.models import ClusterSpec, PoolChange, PoolSpec, Refusal
from legionrm.models.api import PoolEditBody, ReloadBody, Reloaded
from legionrm.scheduler.pools import changes_between, pool_spec
from legionrm.scheduler.several import ReloadPlan, Roster, plan_reload
from legionrm.scheduler.several.steps import Step, all_or_nothing
from legionrm.tomlio import loads_toml


async def _pools(request: web.Request) -> list[PoolSpec]:
    return list(await request.app[PLANE].call(user_of(request), "pools", "specs", {}))


async def _reconfigure(request: web.Request, changes: list[PoolChange], default: str | None | bool) -> Refusal | None:
    return await request.app[PLANE].call(user_of(request), "pools", "reconfigure",  # type: ignore[no-any-return]
                                         {"changes": changes, "default_pool": default})


async def reload(request: web.Request) -> web.Response:
    """Change the running system to a cluster file, all or nothing (see the module)."""
    require_admin(request, "reload the system")
    body: ReloadBody = await body_of(request, ReloadBody)
    new = parse_cluster(loads_toml(body.toml, file=body.source), file=body.source)  # ConfigError: 400, one line
    plane = request.app[PLANE]
    running = getattr(plane, "cluster", lambda: None)()
    pools, names = await _pools(request), roster(request)
    plan = plan_reload(names, tuple(pools), running, new, await on(request, names.default, "bound_nodes", {}))
    if plan.refused is not None:
        raise Refused(409, codes.RELOAD_REFUSED, plan.refused)
    for check in _checks(request, plan, names):
        refused = await check()
        if refused is not None:
            return refusal(409, refused.code, refused.reason, refused.by or "reload")
    assert running is not None  # (the plan refuses without it)
    failed = await all_or_nothing(_steps(request, plan, names, pools, running, new))
    if failed is not None:
        return refusal(409, failed.code, failed.reason, failed.by or "reload")
    record = getattr(plane, "record_reload", None)
    if record is not None:
        record(body.toml, plan.roster)
    return answer(Reloaded(changes=tuple(plan.changes)))


def _checks(request: web.Request, plan: ReloadPlan, names: Roster) -> list[Callable[[], Awaitable[Refusal | None]]]:
    """What only the actors can tell, asked of them before anything changes (each: None or a refusal)."""
    out = [lambda n=n: on(request, n, "reconfigure_site", {"site": plan.site, "check": True}) for n in names.names
           if plan.site is not None]
    if plan.owners:
        out.append(lambda: on(request, names.default, "reconfigure_owners",
                              {"changes": list(plan.owners), "check": True, "cluster": None}))
    return out


def _steps(request: web.Request, plan: ReloadPlan, names: Roster, pools_before: list[PoolSpec],
           running: ClusterSpec, new: ClusterSpec) -> list[Step]:
    """The plan's changes in the order they are applied, each with what sets it back."""
    default_before = next((p.path for p in pools_before if p.default), None)
    steps = []

    async def pools_back() -> Refusal | None:  # to the pools as they were, from the pools as they are now
        now = await _pools(request)
        back = changes_between(now, pools_before)
        if not back and default_before == next((p.path for p in now if p.default), None):
            return None
        return await _reconfigure(request, back, default_before)

    if plan.pools or plan.default_pool != default_before:
        steps.append(Step("pools", lambda: _reconfigure(request, list(plan.pools), plan.default_pool), pools_back))
    for n in names.names if plan.site is not None else ():
        steps.append(Step(f"scheduler {n}'s site policy",
                          lambda n=n: on(request, n, "reconfigure_site", {"site": plan.site, "check": False}),
                          lambda n=n: on(request, n, "reconfigure_site", {"site": plan.site_before, "check": False})))
    if plan.owners or plan.rules:
        def owners(changes: tuple[Any, ...], cluster: ClusterSpec) -> Any:
            return lambda: on(request, names.default, "reconfigure_owners",
                              {"changes": list(changes), "check": False, "cluster": cluster})
        steps.append(Step("hosts' and vaults' policies", owners(plan.owners, new), owners(plan.owners_before, running)))
    before = {s.name: s for s in names.schedulers}
    for n, spec in plan.serves.items():
        steps.append(Step(f"scheduler {n}'s nodepools", lambda n=n, spec=spec: on(request, n, "serve", {"spec": spec}),
                          lambda n=n: on(request, n, "serve", {"spec": before[n]})))
    return steps


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
