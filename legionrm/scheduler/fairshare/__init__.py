"""The DUCC-style fair-share and nodepool core.

Shares of a memory quantum, scheduling classes (FAIR_SHARE, FIXED_SHARE,
RESERVE) with priority and weight, the nodepool tree and its free-space
tables, job caps and allotments; each cycle runs How Much (weighted fair
share by apportioning qshares), What Of (best fit), preemption in investment
order and defragmentation over every top-level nodepool tree.

Modules, lowest first: ``shares`` (quantum, order, the records), ``classes``
(class, nodepool and user specs, RM settings), ``nodepool`` (tree and
tables), ``jobcaps``, ``context`` (the state one pass works on),
``apportion`` (how much, fair share), ``preemption``, ``whatof``, ``defrag``,
``treepass`` (one pass over one tree; how much for fixed and reserve),
``core`` (:class:`DuccCore`, the whole scheduler as one object), ``checkpoint``
(the core saved to SQLite and loaded back), ``build`` (a core from a parsed document) and ``scenario``
(``legionrm simulate`` files).

May import: :mod:`legionrm.models`, :mod:`legionrm.errors`,
:mod:`legionrm.tomlio`, numpy.  Never another engine, the Legion scheduler
above it, Ray or the command line.  Other parts import this package's names
below, not its modules.
"""

from legionrm.scheduler.fairshare.build import core_for_cluster, core_from_doc
from legionrm.scheduler.fairshare.classes import (
    ClassTable,
    ResourceClass,
    RmSettings,
    SharePolicy,
    UserSpec,
)
from legionrm.scheduler.fairshare.core import CycleResult, DuccCore, Numbering, ShareEvent
from legionrm.scheduler.fairshare.jobcaps import allotment_gb
from legionrm.scheduler.fairshare.nodepool import NodepoolTree
from legionrm.scheduler.fairshare.scenario import Scenario, load_scenario, run
from legionrm.scheduler.fairshare.shares import Share, job_order, reserve_max_order
from legionrm.scheduler.fairshare.treepass import ALLOTMENT

__all__ = [
    "ALLOTMENT", "ClassTable", "CycleResult", "DuccCore", "NodepoolTree", "Numbering", "ResourceClass", "RmSettings",
    "Scenario", "Share", "SharePolicy", "ShareEvent", "UserSpec", "allotment_gb", "core_for_cluster", "core_from_doc",
    "job_order", "load_scenario", "reserve_max_order", "run",
]
