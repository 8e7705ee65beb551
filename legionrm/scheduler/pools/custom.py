"""Custom resource kinds in the pools: a Ray node's custom resources (``tpu``, ``node_a``...).

Peloton's vectors count cpu, memory, disk and gpu (:data:`~legionrm.scheduler.pools.vec.KINDS`).
A pool may also name a custom kind, in a sub-table of its own as it names those
(``[pool.tpu]`` with ``limit = 4``): such a kind is capped, neither reserved
nor shared, so its reservation must be 0 (share and type mean nothing for it),
and a pool that does not name it does not cap it.  A request that asks
``resources = { tpu = n }`` is charged n per instance to its leaf pool
(:class:`CustomLedger`); it is admitted only while, in its leaf and in every
pool above it that names the kind, what is charged there plus what it asks
stays within the limit: ``respool.limit`` when it asks more than a limit
(never), ``respool.entitlement`` when the others' charges leave too little (not now).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from legionrm import codes
from legionrm.models import Refusal, SchedulingRequest
from legionrm.models.reservations import BUILTIN_KINDS, KIND_NAME
from legionrm.scheduler.pools.vec import EPS, KINDS, go_num

if TYPE_CHECKING:
    from legionrm.scheduler.pools.config import PoolConfig
    from legionrm.scheduler.pools.tree import ResourcePool


def is_custom(kind: str) -> bool:
    """Is ``kind`` a custom kind a pool may name (a name as a request's ``resources`` uses, not a built-in)?"""
    return kind not in KINDS and kind not in BUILTIN_KINDS and re.fullmatch(KIND_NAME, kind) is not None


def custom_limits(config: "PoolConfig") -> dict[str, float]:
    """The custom kinds a pool's configuration names, with their limits."""
    return {r.kind: r.limit for r in config.resources if is_custom(r.kind)}


def custom_need(request: SchedulingRequest) -> dict[str, float]:
    """What ``request`` asks of each custom kind, over all its instances."""
    need: dict[str, float] = {}
    for obj in request.objects:
        for kind, n in obj.resources.items():
            need[kind] = need.get(kind, 0.0) + float(n) * obj.count
    return {k: v for k, v in need.items() if v > 0}


def _under(path: str, pool: str) -> bool:
    return pool == "/" or path == pool or path.startswith(pool + "/")


@dataclass
class CustomLedger:
    """What each admitted request holds of the custom kinds, and in which leaf (see the module)."""

    held: dict[str, tuple[str, dict[str, float]]] = field(default_factory=dict)

    def allocation(self, path: str) -> dict[str, float]:
        """The custom kinds charged in the pool ``path`` (its leaves summed)."""
        out: dict[str, float] = {}
        for leaf, need in self.held.values():
            if _under(leaf, path):
                for kind, n in need.items():
                    out[kind] = out.get(kind, 0.0) + n
        return out

    def refusal(self, leaf: "ResourcePool", request_id: str, need: dict[str, float]) -> Refusal | None:
        """Why ``need`` cannot be charged to ``leaf`` now (None: it can): the first pool, from the
        leaf up, whose limit of a kind it would pass."""
        pool: ResourcePool | None = leaf
        while pool is not None:
            limits = custom_limits(pool.config)
            used = self.allocation(pool.path) if limits else {}
            for kind in sorted(set(limits) & set(need)):
                by, lim = f"respool:{pool.path}", limits[kind]
                if need[kind] - lim >= EPS:
                    return Refusal(code=codes.RESPOOL_LIMIT, by=by, reason=(
                        f"request {request_id} needs {kind} {go_num(need[kind])} > {go_num(lim)} (the pool's limit): "
                        f"it can never be admitted in {leaf.path}"))
                if used.get(kind, 0.0) + need[kind] - lim >= EPS:
                    return Refusal(code=codes.RESPOOL_ENTITLEMENT, by=by, reason=(
                        f"{kind}: {go_num(used.get(kind, 0.0))} of {go_num(lim)} charged in {pool.path}, "
                        f"request {request_id} needs {go_num(need[kind])} more"))
            pool = pool.parent
        return None

    def charge(self, request_id: str, leaf: str, need: dict[str, float]) -> None:
        if need:
            self.held[request_id] = (leaf, dict(need))

    def release(self, request_id: str) -> None:
        """Idempotent."""
        self.held.pop(request_id, None)

    def report(self, pool: "ResourcePool") -> dict[str, dict[str, float | None]]:
        """Each custom kind the pool names or holds: its ``allocation`` and ``limit`` (None: not capped here)."""
        limits, used = custom_limits(pool.config), self.allocation(pool.path)
        return {k: {"allocation": used.get(k, 0.0), "limit": limits.get(k)} for k in sorted({*limits, *used})}
