"""The DUCC core built from a parsed ``[fairshare]``-style document: the one
builder behind ``legionrm simulate`` scenarios and cluster files.

:func:`core_from_doc` checks the ``rm``, ``nodepool``, ``class`` and ``user``
tables (every problem a :class:`ConfigError` naming table and key) and
returns a fresh :class:`DuccCore`; :func:`core_for_cluster` does the same for
a cluster's ``[fairshare]`` table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from legionrm.errors import ConfigError
from legionrm.models import ClusterSpec
from legionrm.scheduler.fairshare.classes import (
    NodepoolSpec,
    ResourceClassSpec,
    RmSettings,
    SharePolicy,
    UserSpec,
    resolve_classes,
    resolve_nodepools,
)
from legionrm.scheduler.fairshare.core import DuccCore
from legionrm.tomlio import MAX_AMOUNT, check_keys, expect, require, tables

RM_KEYS = {
    "quantum_gb": float, "fragmentation_threshold": int, "initialization_cap": int, "expand_by_doubling": bool,
    "prediction": bool, "prediction_fudge_ms": float, "global_allotment_gb": float, "reserve_overage_gb": float,
    "defragmentation": bool, "node_stability": int, "epoch_ms": float, "reserved_dram_gb": float,
}
MIN_QUANTUM_GB = 1 / 1024
"""The smallest share quantum: 1 MB (DUCC counts memory in KB)."""
MAX_QUANTUM_GB = 1e6
MAX_ORDER = 1024
"""The most quanta one machine may offer or one process may ask for (DUCC's
tables are order x order: a 1 TB machine in 1 GB quanta)."""
MAX_SMALL = 10**6
"""The largest count-like setting (initialization caps, stability, fragmentation threshold)."""
MAX_MS = 1e12
"""The longest time in milliseconds (about 30 years)."""
MAX_PRIORITY = 2**31 - 1
RM_BOUNDS: dict[str, tuple[float, float]] = {
    "quantum_gb": (MIN_QUANTUM_GB, MAX_QUANTUM_GB), "fragmentation_threshold": (0, MAX_ORDER),
    "initialization_cap": (0, MAX_SMALL), "prediction_fudge_ms": (0, MAX_MS), "global_allotment_gb": (0, MAX_AMOUNT),
    "reserve_overage_gb": (0, MAX_AMOUNT), "node_stability": (0, MAX_SMALL), "epoch_ms": (0, MAX_MS),
    "reserved_dram_gb": (0, MAX_AMOUNT),
}
"""Each numeric ``rm`` setting's range."""
CLASS_KEYS = {
    "name", "policy", "priority", "weight", "nodepool", "users", "expand_by_doubling", "initialization_cap",
    "prediction", "prediction_fudge_ms", "max_allotment_gb", "default", "abstract", "parent",
}


def number(t: dict, key: str, typ: type, default: Any, file: str, where: str, minimum: float | None = None,
           maximum: float | None = MAX_AMOUNT) -> Any:
    """An optional typed key (:func:`~legionrm.tomlio.expect`) with a lower and an upper bound."""
    v = expect(t, key, typ, default, file=file, where=where)
    if v is not None and not isinstance(v, bool) and minimum is not None and v < minimum:
        raise ConfigError(f"must be >= {minimum:g}, not {v!r}", file=file, table=where, key=key)
    if v is not None and not isinstance(v, bool) and maximum is not None and v > maximum:
        raise ConfigError(f"must be at most {maximum:g}, not {v!r}", file=file, table=where, key=key)
    return v


def core_from_doc(doc: dict[str, Any], file: str, prefix: str = "", defaults: RmSettings | None = None) -> DuccCore:
    """A DUCC core (no machines) from the ``rm``, ``nodepool``, ``class`` and
    ``user`` tables of ``doc``; ``prefix`` names where ``doc`` sits in the file
    (``"fairshare."``) for error messages; ``defaults`` are the settings for
    keys absent from ``rm``.  Raises ConfigError naming table and key."""
    rm = doc.get("rm", {})
    if not isinstance(rm, dict):
        raise ConfigError(f"must be a table [{prefix}rm]", file=file, table=f"{prefix}rm")
    check_keys(rm, RM_KEYS, file=file, where=f"{prefix}rm")
    kw = {}
    for key, typ in RM_KEYS.items():
        if key in rm:
            lo, hi = RM_BOUNDS.get(key, (None, None))
            kw[key] = number(rm, key, typ, None, file, f"{prefix}rm", minimum=lo, maximum=hi)
    settings = dataclasses.replace(defaults or RmSettings(), **kw)

    pools = []
    for i, t in enumerate(tables(doc, "nodepool", file)):
        w = f"{prefix}nodepool[{i}]"
        check_keys(t, {"name", "parent", "search_order", "quantum_gb"}, file=file, where=w)
        pools.append(NodepoolSpec(
            name=require(t, "name", str, file=file, where=w), parent=expect(t, "parent", str, None, file=file, where=w),
            search_order=number(t, "search_order", int, 100, file, w, minimum=-MAX_PRIORITY, maximum=MAX_PRIORITY),
            quantum_gb=number(t, "quantum_gb", float, None, file, w, minimum=MIN_QUANTUM_GB, maximum=MAX_QUANTUM_GB),
        ))

    resolve_nodepools(pools, file=file, where=[f"{prefix}nodepool[{i}]" for i in range(len(pools))])
    pool_names = {p.name for p in pools} or {"default"}

    classes = []
    for i, t in enumerate(tables(doc, "class", file)):
        w = f"{prefix}class[{i}]"
        check_keys(t, CLASS_KEYS, file=file, where=w)
        users = expect(t, "users", list, None, file=file, where=w)
        if users is not None and not all(isinstance(u, str) for u in users):
            raise ConfigError("must be a list of user names", file=file, table=w, key="users")
        pol = expect(t, "policy", str, None, file=file, where=w)
        if pol is not None and pol.upper() not in SharePolicy.__members__:
            raise ConfigError(f"unknown policy {pol!r} (known: FAIR_SHARE, FIXED_SHARE, RESERVE)", file=file, table=w, key="policy")
        classes.append(ResourceClassSpec(
            name=require(t, "name", str, file=file, where=w), policy=pol.upper() if pol else None,
            priority=number(t, "priority", int, None, file, w, minimum=-MAX_PRIORITY, maximum=MAX_PRIORITY),
            weight=number(t, "weight", float, None, file, w, minimum=0),
            nodepool=expect(t, "nodepool", str, None, file=file, where=w),
            users=tuple(users) if users is not None else None,
            expand_by_doubling=expect(t, "expand_by_doubling", bool, None, file=file, where=w),
            initialization_cap=number(t, "initialization_cap", int, None, file, w, minimum=0, maximum=MAX_SMALL),
            prediction=expect(t, "prediction", bool, None, file=file, where=w),
            prediction_fudge_ms=number(t, "prediction_fudge_ms", float, None, file, w, minimum=0, maximum=MAX_MS),
            max_allotment_gb=number(t, "max_allotment_gb", float, None, file, w, minimum=0),
            default=expect(t, "default", bool, False, file=file, where=w),
            abstract=expect(t, "abstract", bool, False, file=file, where=w),
            parent=expect(t, "parent", str, None, file=file, where=w), where=w,
        ))
    users = []
    for i, t in enumerate(tables(doc, "user", file)):
        w = f"{prefix}user[{i}]"
        check_keys(t, {"name", "max_allotment_gb"}, file=file, where=w)
        users.append(UserSpec(require(t, "name", str, file=file, where=w), number(t, "max_allotment_gb", float, None, file, w, minimum=0)))


    first_pool = pools[0].name if pools else "default"
    for p in pools:
        if p.parent is None:
            first_pool = p.name
            break
    resolve_classes(classes, settings, pool_names, file=file, default_pool=first_pool)
    return DuccCore(settings, pools, classes, users)


def core_for_cluster(spec: ClusterSpec) -> DuccCore:
    """A fresh DUCC core for the cluster's elastic cycle, from its ``[fairshare]``
    table (``rm`` settings, ``nodepool``, ``class`` and ``user`` tables as in a
    ``legionrm simulate`` scenario).  Without classes there is one default
    FAIR_SHARE class, ``normal``.  DUCC's hidden per-class cap is off: it is an
    artefact of DUCC's int arithmetic, not a policy.  Raises ConfigError."""
    doc = dict(spec.fairshare)
    doc.setdefault("class", [{"name": "normal", "policy": "FAIR_SHARE", "default": True}])
    return core_from_doc(doc, spec.source, "fairshare.", defaults=RmSettings(ducc_class_cap=False))
