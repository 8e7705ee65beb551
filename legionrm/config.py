"""The cluster file -> validated models.

Every problem is a :class:`ConfigError` naming the file, the table (with its
index, ``host[3]``) and the key.  The file's ``[fairshare]`` and ``[[pool]]``
tables are checked by the engines' own builders (every rule lives once, in
its engine); nothing built here is kept.
"""

from __future__ import annotations

from importlib import resources as _resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from legionrm.errors import ConfigError
from legionrm.models import (
    AccessPolicy,
    ClassSpec,
    ClusterSpec,
    CollectionSettings,
    HostSpec,
    VaultSpec,
)
from legionrm.scheduler.fairshare import core_for_cluster
from legionrm.scheduler.pools import parse_pools, tree_for_cluster
from legionrm.tomlio import check_keys, expand_names, expect, load_toml, require, tables

_ACCESS_KEYS = ("allow_users", "deny_users", "allow_classes", "deny_classes", "allow_groups")
_ATTR_TYPES = (bool, int, float, str)


def default_cluster_path() -> Path:
    """The example cluster shipped inside the package."""
    return Path(str(_resources.files("legionrm") / "data" / "cluster.toml"))


def _attributes(t: dict[str, Any], *, file: str, where: str) -> dict[str, Any]:
    attrs = expect(t, "attributes", dict, {}, file=file, where=where)
    for key, value in attrs.items():
        if not isinstance(value, _ATTR_TYPES):
            raise ConfigError(
                f"attribute values must be bool, int, float or string, not {type(value).__name__}",
                file=file, table=f"{where}.attributes", key=key,
            )
    return dict(attrs)


def _access(t: dict[str, Any], *, file: str, where: str) -> AccessPolicy:
    acc = expect(t, "access", dict, {}, file=file, where=where)
    check_keys(acc, _ACCESS_KEYS, file=file, where=f"{where}.access")
    out: dict[str, tuple[str, ...]] = {}
    for key in _ACCESS_KEYS:
        names = expect(acc, key, list, [], file=file, where=f"{where}.access")
        if not all(isinstance(n, str) for n in names):
            raise ConfigError("must be a list of strings", file=file, table=f"{where}.access", key=key)
        out[key] = tuple(names)
    return AccessPolicy(**out)


def _policy(t: dict[str, Any], *, file: str, where: str) -> tuple[str | None, dict]:
    policy = expect(t, "policy", str, None, file=file, where=where)
    # a bare name is one of the ready-made policies in legionrm.hostobj.policies
    if policy is not None and (policy.count(":") > 1 or not all(policy.split(":"))):
        raise ConfigError(f"must be 'module:Class' or a ready-made policy name, not {policy!r}",
                          file=file, table=where, key="policy")
    return policy, dict(expect(t, "policy_args", dict, {}, file=file, where=where))


def parse_cluster(doc: dict[str, Any], *, file: str = "<memory>") -> ClusterSpec:
    """Validate a parsed cluster document; raises ConfigError naming the place."""
    check_keys(doc, ("collection", "host", "vault", "class", "fairshare", "pool"), file=file, where="")
    coll = expect(doc, "collection", dict, {}, file=file, where="collection")
    check_keys(coll, CollectionSettings.model_fields, file=file, where="collection")
    try:
        settings = CollectionSettings(**coll)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(err["msg"], file=file, table="collection", key=str(err["loc"][0])) from None

    seen: dict[str, str] = {}

    def claim(name: str, where: str) -> None:
        if name in seen:
            raise ConfigError(f"name {name!r} is already used by {seen[name]}", file=file, table=where, key="name")
        seen[name] = where

    hosts: list[HostSpec] = []
    for i, t in enumerate(tables(doc, "host", file)):
        where = f"host[{i}]"
        check_keys(t, ("name", "count", "nodepool", "attributes", "access", "policy", "policy_args"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        count = expect(t, "count", int, None, file=file, where=where)
        if count is not None and count < 1:
            raise ConfigError(f"must be at least 1, not {count}", file=file, table=where, key="count")
        attrs = _attributes(t, file=file, where=where)
        for cap in ("cpus", "memory_gb", "gpus"):
            v = attrs.get(cap, 0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ConfigError(f"capacity must be a number >= 0, not {v!r}", file=file, table=f"{where}.attributes", key=cap)
        policy, args = _policy(t, file=file, where=where)
        access = _access(t, file=file, where=where)
        pool = expect(t, "nodepool", str, None, file=file, where=where)
        for n in expand_names(name, count):
            claim(n, where)
            hosts.append(HostSpec(name=n, nodepool=pool, attributes=attrs, access=access, policy=policy, policy_args=args))

    vaults: list[VaultSpec] = []
    for i, t in enumerate(tables(doc, "vault", file)):
        where = f"vault[{i}]"
        check_keys(t, ("name", "count", "attributes", "access", "serves", "policy", "policy_args"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        count = expect(t, "count", int, None, file=file, where=where)
        serves = expect(t, "serves", list, [], file=file, where=where)
        policy, args = _policy(t, file=file, where=where)
        attrs = _attributes(t, file=file, where=where)
        access = _access(t, file=file, where=where)
        if serves:
            # exported so planners can pair hosts with vaults from the collection alone
            attrs.setdefault("serves", ",".join(serves))
        for n in expand_names(name, count):
            claim(n, where)
            vaults.append(VaultSpec(name=n, attributes=attrs, access=access, serves=tuple(serves), policy=policy, policy_args=args))

    classes: list[ClassSpec] = []
    for i, t in enumerate(tables(doc, "class", file)):
        where = f"class[{i}]"
        check_keys(t, ("name", "implementation", "host_list", "max_instances", "policy", "policy_args"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        if any(c.name == name for c in classes):
            raise ConfigError(f"class {name!r} is defined twice", file=file, table=where, key="name")
        policy, args = _policy(t, file=file, where=where)
        classes.append(
            ClassSpec(
                name=name,
                implementation=expect(t, "implementation", str, None, file=file, where=where),
                host_list=tuple(expect(t, "host_list", list, [], file=file, where=where)),
                max_instances=expect(t, "max_instances", int, None, file=file, where=where),
                policy=policy,
                policy_args=args,
            )
        )
    fairshare = expect(doc, "fairshare", dict, {}, file=file, where="fairshare")
    check_keys(fairshare, FAIRSHARE_KEYS, file=file, where="fairshare")
    interval = expect(fairshare, "interval_s", float, 10.0, file=file, where="fairshare")
    if interval <= 0:
        raise ConfigError(f"must be > 0, not {interval!r}", file=file, table="fairshare", key="interval_s")
    pools = parse_pools(doc, file=file, allow_default=True)
    spec = ClusterSpec(source=file, collection=settings, hosts=tuple(hosts), vaults=tuple(vaults), classes=tuple(classes),
                       fairshare=fairshare, pools=pools)
    core_for_cluster(spec)  # its classes, nodepools and settings are checked now, not when the scheduler starts
    tree_for_cluster(spec)  # and so are the pools, against the cluster's capacity
    return spec


FAIRSHARE_KEYS = ("interval_s", "rm", "nodepool", "class", "user")


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
