"""The cluster file -> validated models.

Every problem is a :class:`ConfigError` naming the file, the table (with its
index, ``host[3]``) and the key.  The file's ``[fairshare]``, ``[[pool]]`` and
``[[qos]]`` tables are checked by the engines' own builders (every rule lives once, in
its engine); nothing built here is kept.
"""

from __future__ import annotations

import math
from importlib import resources as _resources
from pathlib import Path
from typing import Any

from legionrm.errors import ConfigError
from legionrm.hostobj import build_class, build_host, build_vault
from legionrm.mil import parse as parse_mil
from legionrm.models import (
    AccessPolicy,
    ClassSpec,
    ClusterSpec,
    CollectionSettings,
    AutoscalerSpec,
    HostSpec,
    RayNodeRule,
    ImplementationSpec,
    QueueSpec,
    EnactorSpec,
    RunnerSpec,
    SchedulerSpec,
    VaultSpec,
)
from legionrm.scheduler.fairshare import core_for_cluster
from legionrm.scheduler.pools import parse_pools, tree_for_cluster
from legionrm.scheduler.priority import site_settings
from legionrm.scheduler.priority.settings import SITE_KEYS
from legionrm.tomlio import (
    kind_amounts,
    MAX_AMOUNT,
    MAX_EXPANDED,
    MAX_INT,
    MAX_TEXT,
    Budget,
    bounded,
    check_keys,
    count_of,
    expand_names,
    expect,
    load_toml,
    model,
    require,
    reraise,
    tables,
)

_ACCESS_KEYS = ("allow_users", "deny_users", "allow_classes", "deny_classes", "allow_groups")
_ATTR_TYPES = (bool, int, float, str)
MAX_ATTRIBUTES = 1000
"""The most attributes one host or vault may export."""
MAX_NAMES = 10_000
"""The longest list of names (access lists, ``serves``, ``host_list``)."""
MAX_INTERVAL_S = 86_400.0
"""The longest heartbeat or fair-share interval: a day."""
CAPACITY = {"cpus": float, "memory_gb": float, "gpus": int}
"""The host attributes read as capacity: numbers from 0 to :data:`~legionrm.tomlio.MAX_AMOUNT` (gpus whole)."""


def default_cluster_path() -> Path:
    """The example cluster shipped inside the package."""
    return Path(str(_resources.files("legionrm") / "data" / "cluster.toml"))


def _attributes(t: dict[str, Any], *, file: str, where: str) -> dict[str, Any]:
    attrs = expect(t, "attributes", dict, {}, file=file, where=where)
    if len(attrs) > MAX_ATTRIBUTES:
        raise ConfigError(f"more than {MAX_ATTRIBUTES} attributes", file=file, table=where, key="attributes")
    for key, value in attrs.items():
        if not isinstance(value, _ATTR_TYPES):
            raise ConfigError(
                f"attribute values must be bool, int, float or string, not {type(value).__name__}",
                file=file, table=f"{where}.attributes", key=key,
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"must be a finite number, not {value!r}", file=file, table=f"{where}.attributes", key=key)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise ConfigError(f"number out of range (at most {MAX_INT} in size)", file=file, table=f"{where}.attributes", key=key)
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise ConfigError(f"longer than {MAX_TEXT} characters", file=file, table=f"{where}.attributes", key=key)
    return dict(attrs)


def _names(t: dict[str, Any], key: str, *, file: str, where: str) -> tuple[str, ...]:
    """An optional list of strings (at most :data:`MAX_NAMES`)."""
    names = expect(t, key, list, [], file=file, where=where)
    if not all(isinstance(n, str) for n in names):
        bad = next(n for n in names if not isinstance(n, str))
        raise ConfigError(f"must be a list of strings, not one holding {type(bad).__name__}", file=file, table=where, key=key)
    if len(names) > MAX_NAMES:
        raise ConfigError(f"more than {MAX_NAMES} names", file=file, table=where, key=key)
    return tuple(names)


def _access(t: dict[str, Any], *, file: str, where: str) -> AccessPolicy:
    acc = expect(t, "access", dict, {}, file=file, where=where)
    check_keys(acc, _ACCESS_KEYS, file=file, where=f"{where}.access")
    out: dict[str, tuple[str, ...]] = {}
    for key in _ACCESS_KEYS:
        out[key] = _names(acc, key, file=file, where=f"{where}.access")
    return model(AccessPolicy, out, file=file, where=f"{where}.access")


def _policy(t: dict[str, Any], *, file: str, where: str) -> tuple[str | None, dict]:
    policy = expect(t, "policy", str, None, file=file, where=where)
    # a bare name is one of the ready-made policies in legionrm.hostobj.policies
    if policy is not None and (policy.count(":") > 1 or not all(policy.split(":"))):
        raise ConfigError(f"must be 'module:Class' or a ready-made policy name, not {policy!r}",
                          file=file, table=where, key="policy")
    return policy, dict(expect(t, "policy_args", dict, {}, file=file, where=where))


def _import_path(t: dict[str, Any], key: str, *, file: str, where: str) -> str | None:
    """An optional ``"module:Class"`` (checked for its shape only: it is imported where it runs)."""
    path = expect(t, key, str, None, file=file, where=where)
    if path is not None:
        mod, sep, attr = path.partition(":")
        if not (sep and mod and attr.isidentifier() and all(p.isidentifier() for p in mod.split("."))):
            raise ConfigError(f"must be 'module:Class', not {path!r}", file=file, table=where, key=key)
    return path


def _implementations(t: dict[str, Any], *, file: str, where: str) -> tuple[ImplementationSpec, ...]:
    """A class's ``implementations = [{arch, os, entry, requirements}, ...]``
    (entry ``"module:Class"``; arch and os ``"*"`` for any; requirements MIL)."""
    items = expect(t, "implementations", list, [], file=file, where=where)
    out = []
    for j, item in enumerate(items):
        at = f"{where}.implementations[{j}]"
        if not isinstance(item, dict):
            raise ConfigError("must be a table {arch, os, entry, requirements}", file=file, table=at)
        check_keys(item, ("arch", "os", "entry", "requirements"), file=file, where=at)
        if _import_path(item, "entry", file=file, where=at) is None:
            raise ConfigError("an implementation needs entry = 'module:Class'", file=file, table=at, key="entry")
        spec = model(ImplementationSpec, dict(item), file=file, where=at)
        try:
            parse_mil(spec.mil())
        except Exception as exc:
            raise ConfigError(f"bad requirements: {exc}", file=file, table=at, key="requirements") from None
        out.append(spec)
    return tuple(out)


def _check_builds(build: Any, spec: Any, *, file: str, where: str) -> None:
    """Build the core ``legionrm up`` would build for ``spec`` and drop it, so a
    policy that does not import, is not a policy, or refuses its
    ``policy_args`` is refused now, naming file, table and key, before any actor
    exists.  Only specs naming a policy are built."""
    if spec.policy is None:
        return
    try:
        build(spec)
    except ConfigError as exc:
        raise reraise(exc, file=file, table=where, key="policy") from None
    except Exception as exc:  # noqa: BLE001 -- an owner's constructor refusing its arguments, any way it likes
        raise ConfigError(f"{spec.policy} refused its policy_args: {type(exc).__name__}: {exc}",
                          file=file, table=where, key="policy_args") from None

def parse_cluster(doc: dict[str, Any], *, file: str = "<memory>") -> ClusterSpec:
    """Validate a parsed cluster document; raises ConfigError naming the place."""
    check_keys(doc, ("collection", "host", "vault", "class", "fairshare", "pool", "runner", "qos", "queue", "scheduler",
                     "ray_node", "autoscaler", "enactor"), file=file, where="")
    coll = expect(doc, "collection", dict, {}, file=file, where="collection")
    check_keys(coll, CollectionSettings.model_fields, file=file, where="collection")
    bounded(coll, "heartbeat_interval_s", float, None, file=file, where="collection", lo=0, lo_open=True, hi=MAX_INTERVAL_S)
    bounded(coll, "stale_after", int, None, file=file, where="collection", lo=1, hi=1000)
    settings = model(CollectionSettings, coll, file=file, where="collection")
    budget = Budget("hosts and vaults", file=file, limit=MAX_EXPANDED)

    seen: dict[str, str] = {}

    def claim(name: str, where: str) -> None:
        if name in seen:
            raise ConfigError(f"name {name!r} is already used by {seen[name]}", file=file, table=where, key="name")
        seen[name] = where

    hosts: list[HostSpec] = []
    for i, t in enumerate(tables(doc, "host", file)):
        where = f"host[{i}]"
        check_keys(t, ("name", "count", "nodepool", "attributes", "access", "policy", "policy_args", "resources"),
                   file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        count = count_of(t, file=file, where=where)
        budget.take(count or 1, where=where)
        attrs = _attributes(t, file=file, where=where)
        for cap, typ in CAPACITY.items():
            _capacity(attrs, cap, typ, file=file, where=where)
        policy, args = _policy(t, file=file, where=where)
        access = _access(t, file=file, where=where)
        pool = expect(t, "nodepool", str, None, file=file, where=where)
        kinds = kind_amounts(t, file=file, where=where)  # custom resource kinds, counted as cpus are
        first = len(hosts)
        for n in expand_names(name, count):
            claim(n, where)
            hosts.append(model(HostSpec, dict(name=n, nodepool=pool, attributes=attrs, access=access, policy=policy,
                                              policy_args=args, resources=kinds), file=file, where=where))
        _check_builds(build_host, hosts[first], file=file, where=where)

    vaults: list[VaultSpec] = []
    for i, t in enumerate(tables(doc, "vault", file)):
        where = f"vault[{i}]"
        check_keys(t, ("name", "count", "attributes", "access", "serves", "policy", "policy_args"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        count = count_of(t, file=file, where=where)
        budget.take(count or 1, where=where)
        serves = _names(t, "serves", file=file, where=where)
        policy, args = _policy(t, file=file, where=where)
        attrs = _attributes(t, file=file, where=where)
        _capacity(attrs, "storage_gb", float, file=file, where=where)
        access = _access(t, file=file, where=where)
        if serves:
            # exported so planners can pair hosts with vaults from the collection alone
            attrs.setdefault("serves", ",".join(serves))
        first = len(vaults)
        for n in expand_names(name, count):
            claim(n, where)
            vaults.append(model(VaultSpec, dict(name=n, attributes=attrs, access=access, serves=serves, policy=policy,
                                                policy_args=args), file=file, where=where))
        _check_builds(build_vault, vaults[first], file=file, where=where)

    classes: list[ClassSpec] = []
    for i, t in enumerate(tables(doc, "class", file)):
        where = f"class[{i}]"
        check_keys(t, ("name", "implementation", "implementations", "host_list", "max_instances", "policy", "policy_args",
                       "qos", "scheduler"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        if any(c.name == name for c in classes):
            raise ConfigError(f"class {name!r} is defined twice", file=file, table=where, key="name")
        policy, args = _policy(t, file=file, where=where)
        classes.append(model(ClassSpec, dict(
            name=name,
            implementation=_import_path(t, "implementation", file=file, where=where),
            implementations=_implementations(t, file=file, where=where),
            host_list=_names(t, "host_list", file=file, where=where),
            max_instances=bounded(t, "max_instances", int, None, file=file, where=where, lo=0),
            policy=policy,
            policy_args=args,
            qos=expect(t, "qos", str, None, file=file, where=where),
            scheduler=expect(t, "scheduler", str, None, file=file, where=where),
        ), file=file, where=where))
        _check_builds(build_class, classes[-1], file=file, where=where)
    fairshare = expect(doc, "fairshare", dict, {}, file=file, where="fairshare")
    check_keys(fairshare, FAIRSHARE_KEYS, file=file, where="fairshare")
    bounded(fairshare, "interval_s", float, 10.0, file=file, where="fairshare", lo=0, lo_open=True, hi=MAX_INTERVAL_S)
    pools = parse_pools(doc, file=file, allow_default=True)
    runner = expect(doc, "runner", dict, {}, file=file, where="runner")
    check_keys(runner, RunnerSpec.model_fields, file=file, where="runner")
    queue = expect(doc, "queue", dict, {}, file=file, where="queue")
    check_keys(queue, QueueSpec.model_fields, file=file, where="queue")
    bounded(queue, "history_keep_s", float, None, file=file, where="queue", lo=0, hi=366 * 86_400.0)
    bounded(queue, "history_keep", int, None, file=file, where="queue", lo=0, hi=10_000_000)
    enactor = expect(doc, "enactor", dict, {}, file=file, where="enactor")
    check_keys(enactor, EnactorSpec.model_fields, file=file, where="enactor")
    bounded(enactor, "deadline_s", float, None, file=file, where="enactor", lo=0, lo_open=True, hi=600.0)
    schedulers = _schedulers(doc, hosts, classes, file=file)
    spec = model(ClusterSpec, dict(source=file, collection=settings, hosts=tuple(hosts), vaults=tuple(vaults),
                                   classes=tuple(classes), fairshare=fairshare, pools=pools,
                                   qos=tuple(tables(doc, "qos", file)), schedulers=schedulers,
                                   runner=model(RunnerSpec, runner, file=file, where="runner"),
                                   queue=model(QueueSpec, queue, file=file, where="queue"),
                                   enactor=model(EnactorSpec, enactor, file=file, where="enactor"),
                                   ray_nodes=_ray_nodes(doc, file=file),
                                   autoscaler=_autoscaler(doc, file=file)),
                 file=file, where="")
    core_for_cluster(spec)  # its classes, nodepools and settings are checked now, not when the scheduler starts
    tree_for_cluster(spec)  # and so are the pools, against the cluster's capacity
    site_settings(spec)  # and the QoS tables, the shares and the priority weights
    return spec


RAY_NODE_KEYS = ("ip", "hostname", "labels", "nodepool", "attributes", "access", "policy", "policy_args")


def _ray_nodes(doc: dict[str, Any], *, file: str) -> tuple[RayNodeRule, ...]:
    """The ``[[ray_node]]`` tables: which Ray nodes (by ``ip``, ``hostname`` or
    ``labels``, shell patterns) are what hosts (nodepool, attributes, access,
    an owner's policy or host object subclass and its ``policy_args``)."""
    rules: list[RayNodeRule] = []
    for i, t in enumerate(tables(doc, "ray_node", file)):
        where = f"ray_node[{i}]"
        check_keys(t, RAY_NODE_KEYS, file=file, where=where)
        labels = expect(t, "labels", dict, {}, file=file, where=where)
        if not all(isinstance(v, str) for v in labels.values()):
            raise ConfigError("label patterns must be strings", file=file, table=f"{where}.labels")
        if not any(k in t for k in ("ip", "hostname", "labels")):
            raise ConfigError("give the nodes it is for: ip, hostname or labels", file=file, table=where)
        policy, args = _policy(t, file=file, where=where)
        rules.append(model(RayNodeRule, dict(
            ip=expect(t, "ip", str, None, file=file, where=where),
            hostname=expect(t, "hostname", str, None, file=file, where=where), labels=labels,
            nodepool=expect(t, "nodepool", str, None, file=file, where=where),
            attributes=_attributes(t, file=file, where=where), access=_access(t, file=file, where=where),
            policy=policy, policy_args=args), file=file, where=where))
        _check_builds(build_host, rules[-1].host(f"ray-node-{i}"), file=file, where=where)
    return tuple(rules)


def _autoscaler(doc: dict[str, Any], *, file: str) -> AutoscalerSpec:
    t = expect(doc, "autoscaler", dict, {}, file=file, where="autoscaler")
    check_keys(t, AutoscalerSpec.model_fields, file=file, where="autoscaler")
    expect(t, "enabled", bool, None, file=file, where="autoscaler")
    bounded(t, "max_bundles", int, None, file=file, where="autoscaler", lo=1, hi=100_000)
    return model(AutoscalerSpec, t, file=file, where="autoscaler")


FAIRSHARE_KEYS = ("interval_s", "rm", "nodepool", "class", "user", *SITE_KEYS)
MAX_SCHEDULERS = 64
"""The most ``[[scheduler]]`` tables (each is an actor)."""


def _schedulers(doc: dict[str, Any], hosts: list[HostSpec], classes: list[ClassSpec], *,
                file: str) -> tuple[SchedulerSpec, ...]:
    """The ``[[scheduler]]`` tables: unique names, nodepools some host is in, a
    constraint that parses; a class may name only one of them."""
    out: list[SchedulerSpec] = []
    pools = {h.nodepool for h in hosts if h.nodepool}
    found = tables(doc, "scheduler", file)
    if len(found) > MAX_SCHEDULERS:
        raise ConfigError(f"more than {MAX_SCHEDULERS} schedulers", file=file, table=f"scheduler[{MAX_SCHEDULERS}]")
    for i, t in enumerate(found):
        where = f"scheduler[{i}]"
        for key in ("history_keep_s", "history_keep"):
            if key in t:  # a [scheduler] table of before several schedulers
                raise ConfigError("belongs in the [queue] table ([[scheduler]] tables are schedulers)", file=file,
                                  table=where, key=key)
        check_keys(t, ("name", "nodepools", "constraint"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        if any(s.name == name for s in out):
            raise ConfigError(f"scheduler {name!r} is defined twice", file=file, table=where, key="name")
        nodepools = _names(t, "nodepools", file=file, where=where)
        for p in nodepools:
            if p not in pools:
                raise ConfigError(f"no host is in nodepool {p!r} (hosts' nodepools: {', '.join(sorted(pools)) or 'none'})",
                                  file=file, table=where, key="nodepools")
        constraint = expect(t, "constraint", str, "true", file=file, where=where)
        try:
            parse_mil(constraint)
        except Exception as exc:
            raise ConfigError(f"bad constraint: {exc}", file=file, table=where, key="constraint") from None
        out.append(model(SchedulerSpec, dict(name=name, nodepools=nodepools, constraint=constraint), file=file,
                         where=where))
    names = {s.name for s in out} or {SchedulerSpec().name}
    for i, c in enumerate(classes):
        if c.scheduler is not None and c.scheduler not in names:
            raise ConfigError(f"no scheduler {c.scheduler!r} (schedulers: {', '.join(sorted(names))})", file=file,
                              table=f"class[{i}]", key="scheduler")
    return tuple(out)


def _capacity(attrs: dict[str, Any], key: str, typ: type, *, file: str, where: str) -> None:
    """A capacity attribute (absent: 0): a number from 0 to MAX_AMOUNT; an int where ``typ`` is int."""
    v = attrs.get(key, 0)
    ok = not isinstance(v, bool) and isinstance(v, int if typ is int else (int, float))
    if not ok or not 0 <= v <= MAX_AMOUNT:
        what = "a whole number" if typ is int else "a number"
        raise ConfigError(f"capacity must be {what} from 0 to {MAX_AMOUNT:g}, not {v!r}", file=file,
                          table=f"{where}.attributes", key=key)


def host_groups(spec: ClusterSpec, max_group: int = 2000) -> dict[str, list[HostSpec]]:
    """Hosts sharded into host groups (one ``HostGroupActor`` each): by
    nodepool, a failure domain, and split past ``max_group`` hosts.  Each
    host's attributes gain ``host_group`` so schedules can route batched calls."""
    pools: dict[str, list[HostSpec]] = {}
    for h in spec.hosts:
        pools.setdefault(h.nodepool or "default", []).append(h)
    out: dict[str, list[HostSpec]] = {}
    for pool, hosts in pools.items():
        for k in range(0, len(hosts), max_group):
            name = pool if len(hosts) <= max_group else f"{pool}-{k // max_group + 1}"
            out[name] = [h.model_copy(update={"attributes": {**h.attributes, "host_group": name}}) for h in hosts[k:k + max_group]]
    return out


def load_cluster(path: str | Path | None = None) -> ClusterSpec:
    """Load a cluster file (the bundled example when ``path`` is None)."""
    p = Path(path) if path is not None else default_cluster_path()
    return parse_cluster(load_toml(p), file=str(p))
