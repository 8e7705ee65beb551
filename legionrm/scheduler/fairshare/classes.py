"""Scheduling classes, nodepool and user specs, and the RM settings.

A class is a set of rules: policy (FAIR_SHARE, FIXED_SHARE, RESERVE),
priority (order of evaluation, lower first), weight (FAIR_SHARE split among
classes of one priority), nodepool, user whitelist, and the expansion rules
(expand-by-doubling, initialization cap, prediction, prediction fudge), which
only FAIR_SHARE classes may set; other policies use the global values.

:func:`resolve_classes` applies inheritance (``parent``: the child copies
every key it does not set, except ``abstract`` and ``default``), drops
abstract classes, fills the per-policy defaults and enforces the rules:
exactly one default class per policy in use, one policy per priority.
Every violation is a :class:`ConfigError` naming the class table and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from legionrm.errors import ConfigError


class SharePolicy(str, Enum):
    FAIR_SHARE = "FAIR_SHARE"
    FIXED_SHARE = "FIXED_SHARE"
    RESERVE = "RESERVE"


DEFAULT_PRIORITY = {SharePolicy.FAIR_SHARE: 10, SharePolicy.FIXED_SHARE: 5, SharePolicy.RESERVE: 1}
DEFAULT_WEIGHT = 100


@dataclass(frozen=True)
class RmSettings:
    """Global RM settings; defaults are DUCC's code defaults (key absent)."""

    quantum_gb: float = 15.0
    fragmentation_threshold: int = 2
    initialization_cap: int = 2
    expand_by_doubling: bool = True
    prediction: bool = True
    prediction_fudge_ms: float = 60000.0
    global_allotment_gb: float | None = None  # None: unlimited
    reserve_overage_gb: float = 0.0
    defragmentation: bool = True
    node_stability: int = 5
    epoch_ms: float = 40000.0  # OR publish rate x state publish ratio (RmJob defaults 10 s x 4)
    reserved_dram_gb: float = 0.0
    # DUCC's hidden class cap: INT_MAX / quantum-in-KB processes per class.
    ducc_class_cap: bool = True

    def class_cap(self, quantum_gb: float) -> int:
        if not self.ducc_class_cap:
            return 2**62
        return (2**31 - 1) // max(1, round(quantum_gb * (1 << 20)))


@dataclass(frozen=True)
class NodepoolSpec:
    name: str
    parent: str | None = None
    search_order: int = 100
    quantum_gb: float | None = None


@dataclass(frozen=True)
class UserSpec:
    name: str
    max_allotment_gb: float | None = None


@dataclass(frozen=True)
class ResourceClassSpec:
    """A class as written: ``None`` means "not set here" (inherit or default)."""

    name: str
    policy: SharePolicy | str | None = None
    priority: int | None = None
    weight: float | None = None
    nodepool: str | None = None
    users: tuple[str, ...] | None = None
    expand_by_doubling: bool | None = None
    initialization_cap: int | None = None
    prediction: bool | None = None
    prediction_fudge_ms: float | None = None
    max_allotment_gb: float | None = None
    default: bool = False
    abstract: bool = False
    parent: str | None = None
    where: str = ""  # the table it came from, for messages


@dataclass(frozen=True)
class ResourceClass:
    """A resolved, concrete class with every rule decided."""

    name: str
    policy: SharePolicy
    priority: int
    weight: float
    nodepool: str
    users: frozenset[str] | None
    expand_by_doubling: bool
    initialization_cap: int
    prediction: bool
    prediction_fudge_ms: float
    max_allotment_gb: float | None
    default: bool

    @property
    def preemptable(self) -> bool:
        return self.policy is SharePolicy.FAIR_SHARE

    def admits(self, user: str) -> bool:
        return self.users is None or user in self.users


_INHERITED = (
    "policy", "priority", "weight", "nodepool", "users", "expand_by_doubling", "initialization_cap",
    "prediction", "prediction_fudge_ms", "max_allotment_gb",
)


@dataclass
class ClassTable:
    """Resolved classes, by name, with the default class of each policy."""

    classes: dict[str, ResourceClass]
    defaults: dict[SharePolicy, str] = field(default_factory=dict)

    def groups(self) -> list[list[ResourceClass]]:
        """Classes grouped by priority, best (lowest) first; within a group by weight desc, name."""
        by_pri: dict[int, list[ResourceClass]] = {}
        for c in self.classes.values():
            by_pri.setdefault(c.priority, []).append(c)
        return [sorted(by_pri[p], key=lambda c: (-c.weight, c.name)) for p in sorted(by_pri)]


def _policy(value: object, spec: ResourceClassSpec, file: str) -> SharePolicy:
    try:
        return SharePolicy(str(value).upper())
    except ValueError:
        raise ConfigError(
            f"unknown policy {value!r} (known: FAIR_SHARE, FIXED_SHARE, RESERVE)",
            file=file, table=spec.where or f"class {spec.name}", key="policy",
        ) from None


def resolve_classes(
    specs: list[ResourceClassSpec], settings: RmSettings, pools: set[str], *, file: str = "", default_pool: str | None = None
) -> ClassTable:
    """Inheritance, defaults and the class rules; raises ConfigError on any violation.

    A policy with exactly one concrete class makes that class its default
    when none is marked (a convenience; DUCC insists on the mark).
    """
    by_name: dict[str, ResourceClassSpec] = {}
    for s in specs:
        where = s.where or f"class {s.name}"
        if s.name in by_name:
            raise ConfigError(f"duplicate class {s.name!r}", file=file, table=where, key="name")
        by_name[s.name] = s

    def flat(s: ResourceClassSpec, seen: tuple[str, ...]) -> ResourceClassSpec:
        where = s.where or f"class {s.name}"
        if s.parent is None:
            return s
        if s.parent not in by_name:
            raise ConfigError(f"unknown parent class {s.parent!r}", file=file, table=where, key="parent")
        if s.parent in seen:
            raise ConfigError(f"class inheritance cycle {' -> '.join(seen + (s.parent,))}", file=file, table=where, key="parent")
        p = flat(by_name[s.parent], seen + (s.parent,))
        return replace(s, **{k: getattr(p, k) for k in _INHERITED if getattr(s, k) is None})

    out: dict[str, ResourceClass] = {}
    for s in specs:
        f = flat(s, (s.name,))
        where = s.where or f"class {s.name}"
        if s.abstract:
            if s.default:
                raise ConfigError("an abstract class cannot be the default", file=file, table=where, key="default")
            continue
        if f.policy is None:
            raise ConfigError("is required", file=file, table=where, key="policy")
        pol = f.policy if isinstance(f.policy, SharePolicy) else _policy(f.policy, s, file)
        pool = f.nodepool if f.nodepool is not None else default_pool
        if pool is None:
            raise ConfigError("is required", file=file, table=where, key="nodepool")
        if pool not in pools:
            raise ConfigError(f"unknown nodepool {pool!r}", file=file, table=where, key="nodepool")
        if pol is not SharePolicy.FAIR_SHARE and f.weight is not None and s.weight is not None:
            raise ConfigError("weight applies to FAIR_SHARE classes only", file=file, table=where, key="weight")
        fair = pol is SharePolicy.FAIR_SHARE
        for key in ("expand_by_doubling", "initialization_cap", "prediction", "prediction_fudge_ms"):
            if not fair and getattr(s, key) is not None:
                raise ConfigError(f"{key} applies to FAIR_SHARE classes only", file=file, table=where, key=key)
        weight = f.weight if (fair and f.weight is not None) else DEFAULT_WEIGHT
        if weight <= 0:
            raise ConfigError("must be > 0", file=file, table=where, key="weight")
        icap = f.initialization_cap if fair and f.initialization_cap is not None else settings.initialization_cap
        if icap < 0:
            raise ConfigError("must be >= 0", file=file, table=where, key="initialization_cap")
        out[s.name] = ResourceClass(
            name=s.name,
            policy=pol,
            priority=f.priority if f.priority is not None else DEFAULT_PRIORITY[pol],
            weight=float(weight),
            nodepool=pool,
            users=frozenset(f.users) if f.users is not None else None,
            expand_by_doubling=f.expand_by_doubling if fair and f.expand_by_doubling is not None else settings.expand_by_doubling,
            initialization_cap=int(icap),
            prediction=f.prediction if fair and f.prediction is not None else settings.prediction,
            prediction_fudge_ms=float(f.prediction_fudge_ms) if fair and f.prediction_fudge_ms is not None else settings.prediction_fudge_ms,
            max_allotment_gb=f.max_allotment_gb,
            default=s.default,
        )

    # one policy per priority
    seen_pri: dict[int, ResourceClass] = {}
    for c in out.values():
        prev = seen_pri.setdefault(c.priority, c)
        if prev.policy is not c.policy:
            where = by_name[c.name].where or f"class {c.name}"
            raise ConfigError(
                f"policy {c.policy.value} mixed with {prev.policy.value} (class {prev.name!r}) at priority {c.priority}",
                file=file, table=where, key="priority",
            )
    # exactly one default per policy in use
    defaults: dict[SharePolicy, str] = {}
    for pol in SharePolicy:
        members = sorted(c.name for c in out.values() if c.policy is pol)
        if not members:
            continue
        marked = [n for n in members if out[n].default]
        if len(marked) > 1:
            where = by_name[marked[1]].where or f"class {marked[1]}"
            raise ConfigError(f"a second default {pol.value} class (first: {marked[0]!r})", file=file, table=where, key="default")
        if not marked:
            if len(members) > 1:
                raise ConfigError(
                    f"no default class for policy {pol.value} (mark one of {', '.join(members)} with default = true)",
                    file=file, table="class", key="default",
                )
            marked = members
        defaults[pol] = marked[0]
    return ClassTable(classes=out, defaults=defaults)


def resolve_nodepools(specs: list[NodepoolSpec], *, file: str = "", where: list[str] | None = None) -> list[NodepoolSpec]:
    """Check the pool tree: unique names, known parents, no cycles, quantum only on top-level pools."""
    names: dict[str, int] = {}
    for i, p in enumerate(specs):
        w = where[i] if where else f"nodepool {p.name}"
        if p.name in names:
            raise ConfigError(f"duplicate nodepool {p.name!r}", file=file, table=w, key="name")
        names[p.name] = i
    for i, p in enumerate(specs):
        w = where[i] if where else f"nodepool {p.name}"
        if p.parent is not None and p.parent not in names:
            raise ConfigError(f"unknown parent nodepool {p.parent!r}", file=file, table=w, key="parent")
        if p.parent is not None and p.quantum_gb is not None:
            raise ConfigError("only a top-level nodepool may set the quantum", file=file, table=w, key="quantum_gb")
        if p.quantum_gb is not None and p.quantum_gb <= 0:
            raise ConfigError("must be > 0", file=file, table=w, key="quantum_gb")
        seen = {p.name}
        cur = p
        while cur.parent is not None:
            if cur.parent in seen:
                raise ConfigError(f"nodepool parent cycle through {cur.parent!r}", file=file, table=w, key="parent")
            seen.add(cur.parent)
            cur = specs[names[cur.parent]]
    return specs
