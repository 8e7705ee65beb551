"""The resource pool tree: nodes, and create / update / delete / lookup.

Pools are addressed by path (``/``, ``/infra``, ``/infra/batch``) and by an
id the tree assigns (``respool-1``, ...; the root's id is ``root``).  Every
create and update runs the validators of :mod:`~legionrm.scheduler.pools.validate` in
Peloton's order and only then touches the tree, so a refused change leaves
the tree exactly as it was.

Each node holds its derived limits as resource vectors (reservation, limit,
share, static mask, controller limit, slack limit), its demand and slack
demand, its six allocation accounts, its three entitlements and, on leaves,
its four gang queues.  Non-leaf demand and allocation are the sums of their
children and are refreshed by :meth:`PoolTree.aggregate` (the entitlement
cycle calls it first).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator

import numpy as np

from legionrm.errors import PoolBusyError, PoolNotFoundError, PoolRuleError
from legionrm.scheduler.pools.config import (
    DEFAULT_SLACK_LIMIT_PERCENT,
    ROOT_ID,
    PoolConfig,
    ReservationType,
    ResourceSpec,
    split_path,
)
from legionrm.scheduler.pools.gang import (
    ACCOUNTS,
    ADMISSION_ORDER,
    TOTAL,
    GangQueue,
    QueueType,
)
from legionrm.scheduler.pools.validate import Change, check_path, validate
from legionrm.scheduler.pools.vec import KIND_INDEX, KINDS, Vec, le, zeros


@dataclass(eq=False)
class ResourcePool:
    """One node of the tree.  Mutated only through :class:`PoolTree` and the admission core."""

    id: str
    name: str
    parent: "ResourcePool | None"
    config: PoolConfig
    children: dict[str, "ResourcePool"] = field(default_factory=dict)
    # derived from config
    reservation: Vec = field(default_factory=zeros)
    limit: Vec = field(default_factory=zeros)
    share: Vec = field(default_factory=zeros)
    static: np.ndarray = field(default_factory=lambda: np.zeros(len(KINDS), dtype=bool))
    controller_limit: Vec | None = None
    slack_limit: Vec = field(default_factory=zeros)
    # state
    demand: Vec = field(default_factory=zeros)
    slack_demand: Vec = field(default_factory=zeros)
    alloc: np.ndarray = field(default_factory=lambda: zeros(len(ACCOUNTS)))
    entitlement: Vec = field(default_factory=zeros)
    slack_entitlement: Vec = field(default_factory=zeros)
    non_slack_entitlement: Vec = field(default_factory=zeros)
    queues: dict[QueueType, GangQueue] = field(default_factory=lambda: {q: GangQueue() for q in ADMISSION_ORDER})
    invalid_tasks: set[str] = field(default_factory=set)
    over_allocation_count: int = 0

    def __post_init__(self) -> None:
        self.apply_config(self.config)

    @property
    def path(self) -> str:
        if self.parent is None:
            return "/"
        base = self.parent.path
        return f"{base}{self.name}" if base == "/" else f"{base}/{self.name}"

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def is_root(self) -> bool:
        return self.parent is None

    def apply_config(self, config: PoolConfig) -> None:
        """Set the config and recompute the derived vectors (reservation, limits, shares)."""
        self.config = config
        res, lim, share = zeros(), zeros(), zeros()
        static = np.zeros(len(KINDS), dtype=bool)
        for r in config.resources:
            i = KIND_INDEX.get(r.kind)
            if i is None:
                continue
            res[i], lim[i], share[i] = r.reservation, r.limit, r.share
            static[i] = r.type == ReservationType.STATIC
        self.reservation, self.limit, self.share, self.static = res, lim, share, static
        cpct = config.controller_limit_percent
        self.controller_limit = None if cpct is None else res * (cpct / 100.0)
        spct = DEFAULT_SLACK_LIMIT_PERCENT if config.slack_limit_percent is None else config.slack_limit_percent
        slack = res * (spct / 100.0)
        slack[KIND_INDEX["cpu"]] = 0.0  # revocable cpu comes from cluster slack, never from the pool
        self.slack_limit = slack

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def __repr__(self) -> str:
        return f"ResourcePool({self.path!r}, id={self.id!r})"


class PoolTree:
    """The tree of pools: structure, lookup and validated changes.

    Not thread-safe; the scheduler actor owns one and calls it from one thread.
    """

    def __init__(self) -> None:
        self.root = ResourcePool(id=ROOT_ID, name="root", parent=None, config=PoolConfig(policy="PriorityFIFO"))
        self._by_id: dict[str, ResourcePool] = {ROOT_ID: self.root}
        self._seq = 0

    # --- lookup -----------------------------------------------------------

    def find(self, path: str) -> ResourcePool | None:
        """The pool at a valid ``path``, or None."""
        if path == "/":
            return self.root
        node = self.root
        for name in path.strip("/").split("/"):
            node = node.children.get(name)  # type: ignore[assignment]
            if node is None:
                return None
        return node

    def find_id(self, pool_id: str) -> ResourcePool | None:
        """The pool with this id, or None."""
        return self._by_id.get(pool_id)

    def get(self, ref: "str | ResourcePool") -> ResourcePool:
        """The pool with this path (starts with ``/``) or id; PoolNotFoundError otherwise."""
        if isinstance(ref, ResourcePool):
            if self._by_id.get(ref.id) is not ref:
                raise PoolNotFoundError(f"resource pool ({ref.path}) not found")
            return ref
        if ref.startswith("/"):

            check_path(ref)
            node = self.find(ref)
        else:
            node = self._by_id.get(ref)
        if node is None:
            raise PoolNotFoundError(f"resource pool ({ref}) not found")
        return node

    def lookup_id(self, path: str) -> str:
        """Peloton's LookupResourcePoolID: validate the path, return the pool's id."""

        check_path(path)
        return self.get(path).id

    def __contains__(self, ref: str) -> bool:
        try:
            self.get(ref)
        except Exception:
            return False
        return True

    def pools(self, leaf_only: bool = False) -> list[ResourcePool]:
        """All pools in pre-order, children by name (a deterministic order)."""
        out: list[ResourcePool] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            if not leaf_only or node.is_leaf:
                out.append(node)
            stack.extend(node.children[n] for n in sorted(node.children, reverse=True))
        return out

    def __iter__(self) -> Iterator[ResourcePool]:
        return iter(self.pools())

    def __len__(self) -> int:
        return len(self._by_id)

    # --- changes ----------------------------------------------------------

    def _new_id(self) -> str:
        self._seq += 1
        while f"respool-{self._seq}" in self._by_id:
            self._seq += 1
        return f"respool-{self._seq}"

    def create(self, path: str, config: PoolConfig | None, *, id: str | None = None, force: bool = False) -> ResourcePool:
        """Create the pool at ``path`` under its (existing) parent.

        Runs every validator unless ``force``; raises PoolRuleError and leaves
        the tree unchanged on refusal.  Not idempotent: a second create of the
        same path is refused by the sibling rule.
        """

        pool_id = id or self._new_id()
        change = Change(path=path, id=pool_id, config=config, parent_path=None, existing=None)
        normalized = validate(self, change, force=force)
        if pool_id in self._by_id:  # only an explicit id can clash (upstream draws a fresh UUID)
            raise PoolRuleError(f"resource pool id {pool_id} is already used by {self._by_id[pool_id].path}",
                                path=path, rule="resource_pool")  # fmt: skip
        parent_path, name = split_path(path)
        parent = self.find(parent_path)
        assert parent is not None  # validated
        node = ResourcePool(id=pool_id, name=name, parent=parent, config=normalized)
        parent.children[name] = node
        self._by_id[pool_id] = node
        return node

    def update(
        self, ref: "str | ResourcePool", config: PoolConfig | None, *, parent: str | None = None, force: bool = False
    ) -> ResourcePool:
        """Replace the config of an existing pool (its place in the tree never changes).

        ``parent`` (a path or id) may be given to mirror Peloton's API; naming the
        pool itself or another parent is refused.  Idempotent for the same config,
        except where upstream's float order in the reservation sum refuses it
        (new + all children - own old: 0.1 + 0.2 - 0.1 > 0.2).
        """

        node = self.get(ref)
        change = Change(path=node.path, id=node.id, config=config, parent_path=parent, existing=node)
        normalized = validate(self, change, force=force)
        node.apply_config(normalized)
        return node

    def delete(self, ref: "str | ResourcePool") -> None:
        """Delete a leaf pool that holds no work.

        Refused (PoolBusyError, with the upstream handler's texts after the
        path: ``resource pool is not leaf``, ``resource pool is busy``) for the
        root, a non-leaf, or a pool whose total allocation or demand is above 0
        (by EPS, as upstream's ``LessThanOrEqual``) or that has any queued gang.
        Upstream checks only allocation and non-revocable demand; we also count
        queued revocable gangs so none is lost.
        """
        node = self.get(ref)
        if node.is_root:
            raise PoolBusyError("cannot delete root")
        if not node.is_leaf:
            raise PoolBusyError(f"{node.path}: resource pool is not leaf")
        if not le(node.alloc[TOTAL], zeros()) or not le(node.demand, zeros()) or node.queued():
            raise PoolBusyError(f"{node.path}: resource pool is busy")
        assert node.parent is not None
        del node.parent.children[node.name]
        del self._by_id[node.id]

    # --- cycle helpers ----------------------------------------------------

    def set_capacity(self, capacity: Vec) -> None:
        """Make the root's reservation and limit the cluster capacity, for every kind."""
        specs = []
        for i, k in enumerate(KINDS):
            old = self.root.config.spec(k)
            share = old.share if old is not None else 0.0
            specs.append(ResourceSpec(k, float(capacity[i]), float(capacity[i]), share))
        self.root.apply_config(replace(self.root.config, resources=tuple(specs)))

    def aggregate(self) -> None:
        """Set each non-leaf's demand, slack demand and allocation to the sum of its children's."""
        for node in reversed(self.pools()):  # reversed pre-order: children before parents
            if node.children:
                kids = list(node.children.values())
                node.demand = np.sum([c.demand for c in kids], axis=0)
                node.slack_demand = np.sum([c.slack_demand for c in kids], axis=0)
                node.alloc = np.sum([c.alloc for c in kids], axis=0)
