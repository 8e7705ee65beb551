"""Cluster specs cut to what a test uses.

Each actor a boot starts is a Ray worker process importing legionrm (about
2 s of CPU on the 2-core CI machine), and the default cluster file has 18 of
them: 5 host groups, 2 vaults, 7 class objects, the Collection, the Enactor,
the pool owner and the Scheduler.  A test module that places only Workers
boots the file without the class objects it never asks for
(:func:`with_classes`), or the file cut further (:func:`lean_cluster`)."""

from __future__ import annotations

from legionrm.config import load_cluster
from legionrm.models import ClusterSpec


def with_classes(spec: ClusterSpec, *classes: str) -> ClusterSpec:
    """``spec`` with only the class objects named ``classes`` (each must be in it), the rest as it is."""
    missing = set(classes) - {c.name for c in spec.classes}
    assert not missing, f"no class {sorted(missing)} in {spec.source}"
    return spec.model_copy(update={"classes": tuple(c for c in spec.classes if c.name in classes)})


def lean_cluster(nodepools: tuple[str, ...] = ("batch", "bigmem"), classes: tuple[str, ...] = ("Worker",)) -> ClusterSpec:
    """The default cluster file with only the hosts of ``nodepools`` (a host group each), the
    first vault, the classes ``classes`` and no pools of its own (the root admits what the hosts
    hold: the file's pools are sized for all its hosts); its QoS and fair share as they are."""
    spec = with_classes(load_cluster(), *classes)
    return spec.model_copy(update={"hosts": tuple(h for h in spec.hosts if h.nodepool in nodepools),
                                   "vaults": spec.vaults[:1], "pools": ()})
