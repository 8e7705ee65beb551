"""Peloton-style resource pools: hierarchical admission ahead of scheduling.

A tree of pools, each with a reservation, a limit and a share per resource
kind (cpu, memory, disk, gpu); entitlement is computed top-down (reservation
first, then the rest by share, water-filled, then slack); each leaf keeps
four gang queues (non-preemptible, controller, revocable, pending) and
admits gangs, all tasks or none, within its entitlement.

Modules, lowest first: ``vec`` (resource vectors), ``gang`` (gangs and
queues), ``config`` (a pool's configuration, paths), ``validate`` (Peloton's
validators, in order, with its messages), ``tree`` (the tree: create, update,
delete, lookup), ``entitlement``, ``admission``, ``preempt``, ``respool``
(:class:`ResourcePoolTree`, the one object a scheduler holds), ``custom``
(custom kinds: capped by the pools that name them, charged beside the
vectors), ``spec``
(the ``[[pool]]`` table format and the tree builder), ``gate``
(:class:`RespoolGate`, admission for ``scheduleObjects``), ``file``
(``legionrm pools`` files).

May import: :mod:`legionrm.models`, :mod:`legionrm.errors`,
:mod:`legionrm.tomlio`, numpy.  Never another engine, the Legion scheduler
above it, Ray or the command line.  Other parts import this package's names
below, not its modules.
"""

from legionrm.scheduler.pools.file import run_file
from legionrm.scheduler.pools.gate import RespoolGate, capacity_vector, tree_for_cluster
from legionrm.scheduler.pools.live import changes_between, reconfigured, refused_or_reconfigured, specs_of
from legionrm.scheduler.pools.respool import ResourcePoolTree, gang_from_request
from legionrm.scheduler.pools.spec import build_tree, parse_pools, pool_spec
from legionrm.scheduler.pools.vec import KINDS

__all__ = [
    "KINDS", "ResourcePoolTree", "RespoolGate", "build_tree", "capacity_vector", "gang_from_request", "parse_pools",
    "run_file", "tree_for_cluster", "changes_between", "reconfigured", "refused_or_reconfigured", "specs_of", "pool_spec",
]
