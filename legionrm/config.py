"""TOML files -> validated models.

Every loader here reports problems as :class:`ConfigError` naming the file,
the table (with its index, ``host[3]``) and the key, so a person can go
straight to the line.  The small helpers at the top are shared by every
scenario loader (cluster, simulate, place, pools).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from legionrm.errors import ConfigError, caret_at

if TYPE_CHECKING:
    from legionrm.scheduler.fairshare.core import DuccCore
    from legionrm.scheduler.pools.respool import ResourcePoolTree
    from legionrm.scheduler.scheduler import PoolGate

# --- shared helpers ----------------------------------------------------------


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file.  A missing or unreadable file, or a syntax error, is a
    ConfigError; a syntax error shows the line with a caret under the column."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(p)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}{_toml_caret(text, str(exc))}", file=str(p)) from None


def _toml_caret(text: str, message: str) -> str:
    """The source line and a caret for tomllib's "(at line L, column C)", or ""."""
    m = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if m is None:
        return ""
    return "\n" + caret_at(text, int(m.group(1)), int(m.group(2)))


def tables(doc: dict[str, Any], name: str, file: str) -> list[dict[str, Any]]:
    """The array of tables ``[[name]]`` (empty when absent)."""
    value = doc.get(name, [])
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ConfigError(f"must be an array of tables [[{name}]]", file=file, table=name)
    return value


def check_keys(table: dict[str, Any], allowed: Iterable[str], *, file: str, where: str) -> None:
    """Refuse keys a table does not know (a typo must not pass silently)."""
    allowed = set(allowed)
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key (known: {', '.join(sorted(allowed))})", file=file, table=where, key=key
            )


def require(table: dict[str, Any], key: str, typ: type | tuple[type, ...], *, file: str, where: str) -> Any:
    """A key that must be present with the given type."""
    if key not in table:
        raise ConfigError("is required", file=file, table=where, key=key)
    return expect(table, key, typ, None, file=file, where=where)


def expect(
    table: dict[str, Any], key: str, typ: type | tuple[type, ...], default: Any, *, file: str, where: str
) -> Any:
    """An optional key with a type; ints are accepted where floats are asked."""
    if key not in table:
        return default
    value = table[key]
    types = typ if isinstance(typ, tuple) else (typ,)
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in types)
        raise ConfigError(f"must be {names}, not {type(value).__name__} {value!r}", file=file, table=where, key=key)
    return value


def expand_names(name: str, count: int | None) -> list[str]:
    """``count`` expands ``name`` to ``name1 … nameN``; no count is the name alone."""
    if count is None:
        return [name]
    return [f"{name}{i}" for i in range(1, count + 1)]


# --- the cluster file --------------------------------------------------------

from importlib import resources as _resources  # noqa: E402  (kept beside its only user)

from pydantic import ValidationError  # noqa: E402

from legionrm.models import (  # noqa: E402
    AccessPolicy,
    ClassSpec,
    ClusterSpec,
    CollectionSettings,
    HostSpec,
    VaultSpec,
)

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
    from legionrm.scheduler.pools.file import parse_pools

    pools = parse_pools(doc, file=file, allow_default=True)
    spec = ClusterSpec(source=file, collection=settings, hosts=tuple(hosts), vaults=tuple(vaults), classes=tuple(classes),
                       fairshare=fairshare, pools=pools)
    fairshare_core(spec)  # its classes, nodepools and settings are checked now, not when the scheduler starts
    pool_tree(spec)  # and so are the pools, against the cluster's capacity
    return spec


FAIRSHARE_KEYS = ("interval_s", "rm", "nodepool", "class", "user")


def fairshare_core(spec: ClusterSpec) -> "DuccCore":
    """A fresh DUCC core for the cluster's elastic cycle, from its ``[fairshare]``
    table (``rm`` settings, ``nodepool``, ``class`` and ``user`` tables as in a
    ``legionrm simulate`` scenario).  Without classes there is one default
    FAIR_SHARE class, ``normal``.  DUCC's hidden per-class cap is off: it is an
    artefact of DUCC's int arithmetic, not a policy.  Raises ConfigError."""
    from legionrm.scheduler.fairshare.classes import RmSettings
    from legionrm.scheduler.fairshare.scenario import core_from_doc

    doc = dict(spec.fairshare)
    doc.setdefault("class", [{"name": "normal", "policy": "FAIR_SHARE", "default": True}])
    return core_from_doc(doc, spec.source, "fairshare.", defaults=RmSettings(ducc_class_cap=False))


def pool_tree(spec: ClusterSpec) -> "ResourcePoolTree | None":
    """The cluster's ``[[pool]]`` tables as a fresh resource-pool tree under a
    root entitled to :meth:`ClusterSpec.capacity`; None when no pool is
    configured.  The tables go through the one parser and tree builder of
    :mod:`legionrm.scheduler.pools.file`.  A pool the validators refuse, or a
    ``default`` pool with children, is a ConfigError naming the file."""
    if not spec.pools:
        return None
    from legionrm.errors import PoolValidationError
    from legionrm.scheduler.pools.gate import capacity_vector
    from legionrm.scheduler.pools.file import build_tree
    from legionrm.scheduler.pools.vec import as_dict

    try:
        tree = build_tree(spec.pools, as_dict(capacity_vector(spec.capacity())))
    except PoolValidationError as exc:
        raise ConfigError(str(exc), file=spec.source, table="pool") from None
    default = spec.default_pool()
    if default is not None and not tree.get(default).is_leaf:
        i = next(i for i, p in enumerate(spec.pools) if p.default)
        raise ConfigError(f"the default pool {default} has child pools; it must be a leaf",
                          file=spec.source, table=f"pool[{i}]", key="default")
    return tree


def pool_gate(spec: ClusterSpec) -> "PoolGate":
    """The Scheduler's admission gate for the cluster: an ``OpenGate`` (admit
    everything) when no ``[[pool]]`` is configured, else a ``RespoolGate``
    over a fresh pool tree, entitled to the cluster's total capacity (hosts'
    cpus, memory and gpus, vaults' storage) with the cluster's default pool.
    A new gate each call: one per Scheduler.  Raises ConfigError."""
    from legionrm.scheduler.pools.gate import RespoolGate
    from legionrm.scheduler.scheduler import OpenGate

    tree = pool_tree(spec)
    if tree is None:
        return OpenGate()
    return RespoolGate(tree, spec.capacity(), default_pool=spec.default_pool())


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
