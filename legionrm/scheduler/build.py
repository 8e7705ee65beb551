"""The Scheduler's collaborators built from a cluster spec: its admission
gate (resource pools) and its fair-share core.  A fresh object each call:
one per Scheduler.  Raises ConfigError naming the file."""

from __future__ import annotations

from legionrm.models import ClusterSpec
from legionrm.scheduler.fairshare import core_for_cluster
from legionrm.scheduler.pools import RespoolGate, tree_for_cluster
from legionrm.scheduler.ports import OpenGate, PoolGate

__all__ = ["core_for_cluster", "pool_gate"]


def pool_gate(spec: ClusterSpec) -> PoolGate:
    """The Scheduler's admission gate for the cluster: an :class:`OpenGate`
    (admit everything) when no ``[[pool]]`` is configured, else a
    :class:`RespoolGate` over a fresh pool tree, entitled to the cluster's
    total capacity (hosts' cpus, memory and gpus, vaults' storage) with the
    cluster's default pool."""
    tree = tree_for_cluster(spec)
    if tree is None:
        return OpenGate()
    return RespoolGate(tree, spec.capacity(), default_pool=spec.default_pool())
