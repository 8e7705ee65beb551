"""Validators for pool creates and updates, in Peloton's order, with its messages.

The chain stops at the first refusal:

1. path (our addition: a create or update names its pool by path, so the
   path is checked first, with ``ValidateResourcePoolPath``'s messages);
2. resource pool (config present, not the root, per resource: known kind,
   not repeated, reservation and share not negative, reservation within
   limit; missing kinds are then filled in as reservation 0, limit 0, share 1);
3. cycle (a pool is not its own parent);
4. parent (exists, unchanged on update, has every kind, child limit within
   the parent's);
5. siblings (name free among the parent's children);
6. children reservations (the parent's children, with this pool's new
   reservation, fit in the parent's reservation);
7. controller limit (percent at most 100).

Each refusal is a :class:`PoolRuleError` whose message is ``"<path>: <Peloton's
text>"`` where Peloton's text prints a pool id we print the pool's path, and
numbers print as Go's ``%v`` would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from legionrm.errors import PoolRuleError
from legionrm.scheduler.pools.config import PoolConfig, ResourceSpec, split_path
from legionrm.scheduler.pools.custom import is_custom
from legionrm.scheduler.pools.vec import KINDS, go_num

if TYPE_CHECKING:
    from legionrm.scheduler.pools.tree import PoolTree, ResourcePool


@dataclass(frozen=True)
class Change:
    """What a create or update asks for.  ``parent_path`` None means "the parent the path implies"."""

    path: str
    id: str
    config: "PoolConfig | None"
    parent_path: str | None
    existing: "ResourcePool | None"


def check_path(path: object, *, pool: str = "") -> None:
    """ValidateResourcePoolPath, plus: no empty pool name inside the path."""
    where = pool or (path if isinstance(path, str) else "")
    if path is None:
        raise PoolRuleError("path cannot be nil", path=where, rule="path")
    if not isinstance(path, str) or path == "":
        raise PoolRuleError("path cannot be empty", path=where, rule="path")
    if not path.startswith("/"):
        raise PoolRuleError("path should begin with /", path=where, rule="path")
    if path != "/" and any(part == "" for part in path[1:].split("/")):
        raise PoolRuleError("path has an empty pool name", path=where, rule="path")


def validate(tree: "PoolTree", change: Change, *, force: bool = False) -> "PoolConfig":
    """Run the chain; return the config with defaults filled in.  Never mutates the tree.

    With ``force`` (Peloton's forced update) the rules are skipped, except what
    the tree cannot do without: a valid path, an existing parent, a free name.
    """

    check_path(change.path)
    path = change.path
    if change.config is None:
        raise PoolRuleError("resource pool config cannot be <nil>", path=path, rule="resource_pool")
    if path == "/" or change.id == "root":
        raise PoolRuleError("cannot override root", path=path, rule="resource_pool")
    parent_path, name = split_path(path)
    if force:
        parent = tree.find(parent_path)
        if parent is None:
            raise PoolRuleError(f"resource pool ({parent_path}) not found", path=path, rule="parent")
        if change.existing is None and name in parent.children:
            raise PoolRuleError(f"resource pool:{name} already exists", path=path, rule="siblings")
        return change.config.with_defaults()
    config = check_resources(change.config, path)
    _cycle(tree, change)
    parent = _parent(tree, change, config, parent_path)
    _siblings(parent, change, name)
    _children_reservations(parent, change, config)
    _controller_limit(config, path)
    return config


def check_resources(config: "PoolConfig", path: str) -> "PoolConfig":
    """ValidateResourcePool's per-resource rules, in list order; returns the config with missing kinds added."""
    seen: set[str] = set()
    for r in config.resources:
        if is_custom(r.kind) and r.reservation != 0:  # a custom kind is capped, never reserved (pools.custom)
            raise PoolRuleError(
                f"resource pool config: custom kind {r.kind} is capped by its limit alone, its reservation must be 0",
                path=path, rule="resource_pool", kind=r.kind, value=r.reservation, bound=0.0,
            )  # fmt: skip
        if r.kind not in KINDS and not is_custom(r.kind):
            raise PoolRuleError(
                f"resource pool config has unknown resource type {r.kind}", path=path, rule="resource_pool", kind=r.kind
            )
        if r.kind in seen:
            raise PoolRuleError(
                f"resource pool config has multiple configurations for resource type {r.kind}",
                path=path,
                rule="resource_pool",
                kind=r.kind,
            )
        seen.add(r.kind)
        if r.reservation < 0:
            raise PoolRuleError(
                f"resource pool config resource values can not be negative {r.kind}: Reservation {go_num(r.reservation)}",
                path=path, rule="resource_pool", kind=r.kind, value=r.reservation, bound=0.0,
            )  # fmt: skip
        if r.share < 0:
            raise PoolRuleError(
                f"resource pool config resource values can not be negative {r.kind}: Share {go_num(r.share)}",
                path=path, rule="resource_pool", kind=r.kind, value=r.share, bound=0.0,
            )  # fmt: skip
        if r.reservation > r.limit:
            raise PoolRuleError(
                f"resource {r.kind}, reservation {go_num(r.reservation)} exceeds limit {go_num(r.limit)}",
                path=path, rule="resource_pool", kind=r.kind, value=r.reservation, bound=r.limit,
            )  # fmt: skip
    return config.with_defaults()


def _cycle(tree: "PoolTree", change: Change) -> None:
    if change.parent_path is None:
        return
    own = {change.path, change.id}
    if change.parent_path in own:
        raise PoolRuleError(
            f"resource pool ID: {change.path} and parent ID: {change.parent_path} cannot be same",
            path=change.path,
            rule="cycle",
        )


def _parent(tree: "PoolTree", change: Change, config: "PoolConfig", implied: str) -> "ResourcePool":
    asked = change.parent_path if change.parent_path is not None else implied
    parent = tree.find(asked) if asked.startswith("/") else tree.find_id(asked)
    if parent is None:
        raise PoolRuleError(f"resource pool ({asked}) not found", path=change.path, rule="parent")
    actual = tree.find(implied)
    if actual is None:  # only reachable when an explicit parent was given for a path whose parent is gone
        raise PoolRuleError(f"resource pool ({implied}) not found", path=change.path, rule="parent")
    if parent is not actual:
        raise PoolRuleError(
            f"parent override not allowed, actual {actual.path}, override {parent.path}",
            path=change.path,
            rule="parent",
        )
    pconf = parent.config
    for r in config.resources:
        pr = pconf.spec(r.kind)
        if pr is None and is_custom(r.kind):  # a parent that does not name a custom kind does not cap it
            continue
        if pr is None:
            raise PoolRuleError(
                f"parent {parent.path} doesn't have resource kind {r.kind}", path=change.path, rule="parent", kind=r.kind
            )
        if r.limit > pr.limit:
            raise PoolRuleError(
                f"resource {r.kind}, limit {go_num(r.limit)} exceeds parent limit {go_num(pr.limit)}",
                path=change.path, rule="parent", kind=r.kind, value=r.limit, bound=pr.limit,
            )  # fmt: skip
    return parent


def _siblings(parent: "ResourcePool", change: Change, name: str) -> None:
    names = set(parent.children)
    if change.existing is not None:
        names.discard(change.existing.name)
    if name in names:
        raise PoolRuleError(f"resource pool:{name} already exists", path=change.path, rule="siblings")


def _children_reservations(parent: "ResourcePool", change: Change, config: "PoolConfig") -> None:
    for r in config.resources:
        if is_custom(r.kind):  # never reserved
            continue
        # Go's order of operations, so that the sum prints as upstream's would:
        # new + (sum over all current children, in creation order) - own old reservation.
        siblings = 0.0
        for c in parent.children.values():
            siblings += (c.config.spec(r.kind) or _zero_spec(r.kind)).reservation
        total = r.reservation + siblings
        if change.existing is not None:
            own = change.existing.config.spec(r.kind)
            if own is not None:
                total -= own.reservation
        pr = parent.config.spec(r.kind)
        if pr is None:
            raise PoolRuleError(
                f"parent {parent.path} doesn't have resource kind {r.kind}", path=change.path, rule="parent", kind=r.kind
            )
        if total > pr.reservation:
            raise PoolRuleError(
                f"Aggregated child reservation {go_num(total)} of kind `{r.kind}` exceed parent `{parent.path}` "
                f"reservations {go_num(pr.reservation)}",
                path=change.path, rule="children_reservations", kind=r.kind, value=total, bound=pr.reservation,
            )  # fmt: skip


def _zero_spec(kind: str) -> ResourceSpec:

    return ResourceSpec(kind, 0.0, 0.0, 1.0)


def _controller_limit(config: "PoolConfig", path: str) -> None:
    pct = config.controller_limit_percent
    if pct is not None and pct > 100:
        raise PoolRuleError(
            "controller limit, max percent cannot be more than 100",
            path=path,
            rule="controller_limit",
            value=pct,
            bound=100.0,
        )
