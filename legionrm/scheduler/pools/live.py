"""Live changes to a running system's pools: create, update and delete, all or nothing.

:func:`changes_between` turns the pools a system runs and the pools a cluster
file now asks for into :class:`~legionrm.models.PoolChange`\\ s (deletes
deepest first, then creates and updates parents first);
:func:`reconfigured` applies them to a copy of a gate, each through the
Peloton validators (:mod:`legionrm.scheduler.pools.validate`) or, for a
delete, the tree's busy rule, and returns the copy: the first refusal raises
(its one-line message names the pool and the rule) and the running gate is
left exactly as it was.  Admitted work keeps its allocations in the copy.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping

from legionrm import codes
from legionrm.errors import AdmissionError, PoolRuleError, PoolValidationError
from legionrm.models import PoolChange, PoolSpec, Refusal, Resources
from legionrm.scheduler.pools.gate import RespoolGate, capacity_vector
from legionrm.scheduler.pools.spec import build_tree, pool_config
from legionrm.scheduler.pools.vec import as_dict


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


def changes_between(old: Iterable[PoolSpec], new: Iterable[PoolSpec]) -> list[PoolChange]:
    """What turns the pools ``old`` into ``new``: every pool of ``old`` not in
    ``new`` deleted (children first), every pool of ``new`` created or, where
    its configuration differs (kinds left out count as their defaults), updated
    (parents first).  Which pool is the default is not a change here."""
    before, after = {p.path: p for p in old}, {p.path: p for p in new}
    out = [PoolChange(op="delete", spec=before[p]) for p in sorted(set(before) - set(after), key=_depth, reverse=True)]
    for path in sorted(after, key=_depth):
        if path not in before:
            out.append(PoolChange(op="create", spec=after[path]))
        elif pool_config(after[path]).with_defaults() != pool_config(before[path]).with_defaults():
            out.append(PoolChange(op="update", spec=after[path]))
    return out


def reconfigured(gate: Any, changes: Iterable[PoolChange], capacity: Resources | Mapping[str, float] | None = None,
                 default_pool: str | None | bool = False) -> RespoolGate:
    """A new gate: ``gate`` (a :class:`RespoolGate`, or any gate of a system
    without pools, replaced by a tree over ``capacity``) with ``changes``
    applied; ``default_pool`` (False: keep the gate's) becomes its default.
    ``gate`` is never changed.  Raises PoolValidationError (a refused change)
    or AdmissionError (a default pool that is not a leaf)."""
    if isinstance(gate, RespoolGate):
        new = copy.deepcopy(gate)
    else:
        cap = as_dict(capacity_vector(capacity or {}))
        new = RespoolGate(build_tree((), cap), cap)
    tree = new.tree
    for ch in changes:
        if ch.op == "create":
            tree.create(ch.spec.path, pool_config(ch.spec))
        elif ch.op == "update":
            tree.update(ch.spec.path, pool_config(ch.spec))
        else:
            tree.delete(ch.spec.path)
    default = new.default_pool if default_pool is False else default_pool if isinstance(default_pool, str) else None
    if default is not None and tree.find(default) is None:
        raise PoolRuleError(f"resource pool ({default}) not found", path=default, rule="default")
    if default is not None and not tree.get(default).is_leaf:
        raise AdmissionError(f"default pool {default} is not a leaf node")
    new.default_pool = default
    tree.compute_entitlement(capacity_vector(new.capacity))
    return new


def refused_or_reconfigured(gate: Any, changes: Iterable[PoolChange], capacity: Resources | Mapping[str, float] | None,
                            default_pool: str | None | bool = False) -> RespoolGate | Refusal:
    """:func:`reconfigured`, with a refusal as a value: ``reload.refused`` by ``pools``, its one line the validator's."""
    try:
        return reconfigured(gate, changes, capacity, default_pool)
    except (PoolValidationError, AdmissionError) as exc:
        return Refusal(code=codes.RELOAD_REFUSED, by="pools", reason=str(exc).splitlines()[0])


def specs_of(gate: Any) -> tuple[PoolSpec, ...]:
    """The pools ``gate`` holds as :class:`PoolSpec`\\ s (none for a gate without pools), parents first."""
    if not isinstance(gate, RespoolGate):
        return ()
    out = []
    for pool in sorted(gate.tree.pools(), key=lambda p: _depth(p.path)):
        if pool.is_root:
            continue
        c = pool.config
        out.append(PoolSpec.model_validate({
            "path": pool.path, "default": pool.path == gate.default_pool,
            "controller_limit_percent": c.controller_limit_percent, "slack_limit_percent": c.slack_limit_percent,
            "resources": [{"kind": r.kind, "reservation": r.reservation, "limit": r.limit, "share": r.share,
                           "type": r.type.value} for r in c.resources]}))
    return tuple(out)

