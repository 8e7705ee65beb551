"""Factories from cluster-file specs to host, vault and class cores.

``legionrm up`` (and the offline tools) read the cluster file into
:class:`~legionrm.models.HostSpec` / ``VaultSpec`` / ``ClassSpec`` and call
these.  ``policy = "module:Class"`` may name either a policy (attached to a
plain host) or an owner's subclass of the resource itself (constructed with
``policy_args`` as keyword arguments).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from legionrm.errors import ConfigError
from legionrm.hostobj.classobj import ClassObject, ClassPolicy, Resolver
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.owners.policy import READY_MADE, Policy, import_object, load_policy
from legionrm.hostobj.resource import CollectionSink
from legionrm.hostobj.vault import VaultObject
from legionrm.models import ClassSpec, HostSpec, Resources, VaultSpec
from legionrm.objstate import StateShelf


def owner_class(path: str | None, base: type, where: str) -> type | None:
    """The resource subclass ``path`` names, or None when it names a policy (or nothing)."""
    if not path:
        return None
    obj = import_object(path, default_module=READY_MADE)
    if isinstance(obj, type) and issubclass(obj, base):
        return obj
    if isinstance(obj, type) and issubclass(obj, (Policy, ClassPolicy)):
        return None
    raise ConfigError(f"{path!r} is neither a {base.__name__} subclass nor a policy", table=where, key="policy")


def build_host(
    spec: HostSpec,
    *,
    clock: Callable[[], float] = time.time,
    sink: CollectionSink | None = None,
    secret: bytes | None = None,
    cls: type[HostObject] = HostObject,
    **extra: Any,
) -> HostObject:
    """A host core from its spec.  ``cls`` is the base class to build (a real
    node passes RayNodeHost); an owner subclass named by ``spec.policy`` wins.
    Raises ConfigError for a bad policy or policy_args."""
    where = f"host {spec.name}"
    common = dict(
        attributes=spec.attributes, access=spec.access, nodepool=spec.nodepool, clock=clock, sink=sink, secret=secret, **extra
    )
    owner = owner_class(spec.policy, HostObject, where)
    if owner is not None and not issubclass(owner, cls):  # an owner's HostObject on a Ray node: its hooks, the node's work
        owner = type(owner.__name__, (owner, cls), {"__module__": owner.__module__, "__doc__": owner.__doc__})
    if owner is not None:
        try:
            return owner(spec.name, spec.capacity(), **common, **spec.policy_args)
        except TypeError as exc:
            raise ConfigError(f"bad policy_args for {spec.policy}: {exc}", table=where, key="policy_args") from None
    policy = load_policy(spec.policy, spec.policy_args) if spec.policy else None
    return cls(spec.name, spec.capacity(), policy=policy, **common)


def build_vault(
    spec: VaultSpec,
    *,
    clock: Callable[[], float] = time.time,
    sink: CollectionSink | None = None,
    secret: bytes | None = None,
    shelf: StateShelf | None = None,
) -> VaultObject:
    """A vault core from its spec (capacity from the ``storage_gb`` attribute,
    a per-user quota of stored state from ``quota_gb``); ``shelf`` keeps the
    objects' states (default: in memory)."""
    where = f"vault {spec.name}"
    cap = Resources(storage_gb=float(spec.attributes.get("storage_gb", 0)))
    quota = spec.attributes.get("quota_gb")
    common = dict(
        attributes=spec.attributes, access=spec.access, serves=spec.serves, clock=clock, sink=sink, secret=secret,
        shelf=shelf, quota_gb=float(quota) if quota is not None else None,
    )
    owner = owner_class(spec.policy, VaultObject, where)
    if owner is not None:
        try:
            return owner(spec.name, cap, **common, **spec.policy_args)
        except TypeError as exc:
            raise ConfigError(f"bad policy_args for {spec.policy}: {exc}", table=where, key="policy_args") from None
    policy = load_policy(spec.policy, spec.policy_args) if spec.policy else None
    return VaultObject(spec.name, cap, policy=policy, **common)


def build_class(spec: ClassSpec, *, hosts: Resolver | None = None, vaults: Resolver | None = None) -> ClassObject:
    """A class core from its spec; ``spec.policy`` names a ClassPolicy or a ClassObject subclass."""
    where = f"class {spec.name}"
    common = dict(
        hosts=hosts, vaults=vaults, implementation=spec.implementation, host_list=spec.host_list, max_instances=spec.max_instances,
        implementations=spec.implementations,
    )
    if not spec.policy:
        return ClassObject(spec.name, **common)
    obj = import_object(spec.policy, key="policy")
    try:
        if isinstance(obj, type) and issubclass(obj, ClassObject):
            return obj(spec.name, **common, **spec.policy_args)
        if isinstance(obj, type) and issubclass(obj, ClassPolicy):
            return ClassObject(spec.name, policy=obj(**spec.policy_args), **common)
    except TypeError as exc:
        raise ConfigError(f"bad policy_args for {spec.policy}: {exc}", table=where, key="policy_args") from None
    raise ConfigError(f"{spec.policy!r} is neither a ClassObject subclass nor a ClassPolicy", table=where, key="policy")
