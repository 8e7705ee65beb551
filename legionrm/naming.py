"""Ray names: the namespace, every legionrm actor's name, and the one
named-actor lookup.

One of the Ray shells (with ``*/actor.py``, ``system/``,
``hostobj/ray_node.py`` and ``cli/``): the only modules that import ray.
"""

from __future__ import annotations

from typing import Any

import ray
import ray.util

from legionrm.errors import SystemNotRunningError

NAMESPACE = "legionrm"
"""Every legionrm actor, and every instance actor, lives in this namespace."""

COLLECTION = "collection"
SCHEDULER = "scheduler"
ENACTOR = "enactor"
POOLS = "pools"


HEAD_RESOURCE = "node:__internal_head__"
"""Ray's own resource on the head node: the control plane asks for a sliver of
it, so no control-plane actor lands on a worker node that may go away."""


def control_plane(name: str, *, detached: bool, restarts: int = 0) -> dict[str, Any]:
    """Ray options for a control-plane actor: named in :data:`NAMESPACE`, on
    the head node, no cpus, detached when asked, restarted up to
    ``restarts`` times (only actors that rebuild their state on restart)."""
    opts: dict[str, Any] = dict(name=name, namespace=NAMESPACE, num_cpus=0, resources={HEAD_RESOURCE: 0.001},
                                max_restarts=restarts)
    if detached:
        opts["lifetime"] = "detached"
    return opts


def scheduler_name(name: str) -> str:
    """The actor of the scheduler ``name`` (a ``[[scheduler]]`` table; ``default`` without one)."""
    return f"{SCHEDULER}:{name}"


def host_name(host: str) -> str:
    """The actor of one host object (a real Ray node, or a host of its own)."""
    return f"host:{host}"


def group_name(group: str) -> str:
    """The actor of one host group (many simulated hosts in one process)."""
    return f"hostgroup:{group}"


def vault_name(vault: str) -> str:
    return f"vault:{vault}"


def class_name(cls: str) -> str:
    return f"class:{cls}"


def instance_name(instance_id: str) -> str:
    """The Ray actor of a running instance, so a program can reach it with
    ``ray.get_actor(instance_name(id), namespace=NAMESPACE)``."""
    return f"legionrm-instance-{instance_id}"


def instance_actor_names(prefix: str = "") -> list[str]:
    """The live named instance actors in :data:`NAMESPACE` whose instance id
    starts with ``prefix`` (``"ray-a~"``: those of host ``ray-a``; ``""``: all).
    They are detached (they outlive their host's actor), so whatever stops a
    system must stop them by name.  Needs Ray initialised."""
    return named_actors(instance_name(prefix))


def named_actors(head: str) -> list[str]:
    """The live named actors in :data:`NAMESPACE` whose name starts with ``head``
    (``host_name("ray-")``: the Ray-node hosts, those bound after ``up`` too).  Needs Ray initialised."""
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a.get("namespace") == NAMESPACE and str(a.get("name", "")).startswith(head))


def kill_named(names: list[str]) -> int:
    """Kill each live actor named in :data:`NAMESPACE` (no restart); returns how many."""
    killed = 0
    for name in names:
        handle = named_actor(name)
        if handle is not None:
            try:
                ray.kill(handle, no_restart=True)
                killed += 1
            except Exception:  # gone meanwhile
                pass
    return killed


def named_actor(name: str) -> Any | None:
    """The live actor named ``name`` in :data:`NAMESPACE`, or None.  Needs Ray
    initialised; never blocks on the actor itself."""
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None


def require_actor(name: str) -> Any:
    """Like :func:`named_actor`, but a missing actor is a
    :class:`SystemNotRunningError` telling the user how to start one."""
    handle = named_actor(name)
    if handle is None:
        raise SystemNotRunningError(f"no legionrm actor {name!r} is running; start a system with `legionrm up`")
    return handle
