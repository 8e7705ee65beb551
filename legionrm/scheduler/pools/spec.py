"""The ``[[pool]]`` table format -> :class:`~legionrm.models.PoolSpec`, and
the one tree builder: cluster files and ``legionrm pools`` files both go
through :func:`parse_pools` and :func:`build_tree`.

Shape errors are ConfigErrors naming file, table and key; the pool rules
(limits, reservations, kinds) are the validators' to check when the tree is
built.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from legionrm.errors import ConfigError
from legionrm.models import PoolResourceSpec, PoolSpec
from legionrm.scheduler.pools.config import PoolConfig, ReservationType, ResourceSpec
from legionrm.scheduler.pools.respool import ResourcePoolTree
from legionrm.scheduler.pools.vec import KINDS, vec
from legionrm.tomlio import (
    MAX_AMOUNT,
    bounded,
    check_keys,
    expect,
    model,
    require,
    table_count,
    tables,
)

NUM = (float, int)
MAX_POOLS = 10_000
"""The most ``[[pool]]`` tables one file may hold."""


POOL_KEYS = ("path", "controller_limit_percent", "slack_limit_percent")


def pool_spec(table: dict[str, Any], *, file: str, where: str, allow_default: bool = False) -> PoolSpec:
    """One ``[[pool]]`` table -> :class:`PoolSpec`; the one parser of the pool
    table format, shared by ``legionrm pools`` files and cluster files.

    ``allow_default`` accepts ``default = true`` (cluster files).  Shape errors
    are ConfigErrors naming file, table and key; the pool rules (limits,
    reservations, kinds) are the validators' to check when the tree is built.
    """
    scalar_keys = set(POOL_KEYS) | ({"default"} if allow_default else set())
    for key, value in table.items():
        if key not in scalar_keys and not isinstance(value, dict):
            raise ConfigError(
                f"unknown key (known: {', '.join(sorted(scalar_keys))}, and a sub-table per kind: {', '.join(KINDS)})",
                file=file, table=where, key=key,
            )  # fmt: skip
    path = require(table, "path", str, file=file, where=where)
    kinds = [(key, sub) for key, sub in table.items() if isinstance(sub, dict)]
    specs = [resource_spec(key, sub, file=file, where=f"{where}.{key}") for key, sub in kinds]
    return model(PoolSpec, dict(
        path=path,
        resources=tuple(specs),
        # the validators refuse a controller limit past 100, with Peloton's message
        controller_limit_percent=bounded(table, "controller_limit_percent", float, None, file=file, where=where,
                                         lo=0, hi=MAX_AMOUNT),
        slack_limit_percent=bounded(table, "slack_limit_percent", float, None, file=file, where=where, lo=0, hi=100),
        default=expect(table, "default", bool, False, file=file, where=where) if allow_default else False,
    ), file=file, where=where)


RESERVATION_TYPES = {"ELASTIC": "ELASTIC", "STATIC": "STATIC", "UNKNOWN_TYPE": "ELASTIC"}
"""Accepted ``type`` values; upstream treats anything but STATIC (its UNKNOWN_TYPE too) as ELASTIC."""


def resource_spec(kind: str, sub: dict[str, Any], *, file: str, where: str) -> PoolResourceSpec:
    """One kind sub-table (``[pool.cpu]``) -> :class:`PoolResourceSpec`; shape errors are ConfigErrors."""
    check_keys(sub, ("reservation", "limit", "share", "type"), file=file, where=where)
    kind_type = expect(sub, "type", str, "ELASTIC", file=file, where=where)
    if kind_type.upper() not in RESERVATION_TYPES:
        raise ConfigError(f"must be ELASTIC or STATIC, not {kind_type!r}", file=file, table=where, key="type")
    # finite numbers up to MAX_AMOUNT here; a negative reservation or share is the validator's to refuse
    return model(PoolResourceSpec, dict(
        kind=kind,  # an unknown kind is the validator's to refuse, with its message
        reservation=bounded(sub, "reservation", float, 0.0, file=file, where=where, hi=MAX_AMOUNT),
        limit=bounded(sub, "limit", float, 0.0, file=file, where=where, lo=-MAX_AMOUNT, hi=MAX_AMOUNT),
        share=bounded(sub, "share", float, 1.0, file=file, where=where, hi=MAX_AMOUNT),
        type=RESERVATION_TYPES[kind_type.upper()],
    ), file=file, where=where)


def parse_pools(doc: dict[str, Any], *, file: str, allow_default: bool = False) -> tuple[PoolSpec, ...]:
    """Every ``[[pool]]`` table of a parsed document, in file order (see :func:`pool_spec`).

    With ``allow_default``, more than one pool marked ``default`` is a ConfigError.
    """
    out = tuple(
        pool_spec(t, file=file, where=f"pool[{i}]", allow_default=allow_default)
        for i, t in enumerate(table_count(tables(doc, "pool", file), "pool", file=file, limit=MAX_POOLS))
    )
    marked = [i for i, p in enumerate(out) if p.default]
    if len(marked) > 1:
        raise ConfigError(f"only one pool may be the default; pool[{marked[0]}] already is",
                          file=file, table=f"pool[{marked[1]}]", key="default")  # fmt: skip
    return out


def pool_config(spec: PoolSpec) -> PoolConfig:
    """The tree's :class:`PoolConfig` for a :class:`PoolSpec`."""
    return PoolConfig(
        resources=tuple(
            ResourceSpec(kind=r.kind, reservation=r.reservation, limit=r.limit, share=r.share, type=ReservationType(r.type))
            for r in spec.resources
        ),
        controller_limit_percent=spec.controller_limit_percent,
        slack_limit_percent=spec.slack_limit_percent,
    )


def build_tree(specs: Iterable[PoolSpec], capacity: Mapping[str, float], **tree_args: Any) -> ResourcePoolTree:
    """A :class:`ResourcePoolTree` holding ``specs`` under a root whose
    reservation and limit are ``capacity`` (pool kinds: cpu, memory MB, disk MB, gpu).

    Pools are created parents first (file order within a depth), each through
    the validators: the first refusal raises PoolRuleError and nothing is
    returned.  ``tree_args`` go to the tree (``preemption``, ``dequeue_limit``).
    """
    tree = ResourcePoolTree(**tree_args)
    tree.set_capacity(vec(capacity))  # children of the root are validated against the cluster, as in a running system
    ordered = sorted(enumerate(specs), key=lambda p: (p[1].path.count("/") if p[1].path != "/" else 0, p[0]))
    for _, spec in ordered:
        tree.create(spec.path, pool_config(spec))
    return tree


