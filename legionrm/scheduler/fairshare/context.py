"""The state one scheduling pass works on: :class:`CycleContext`.

Shared by the pass (:mod:`~legionrm.scheduler.fairshare.treepass`) and the
steps it calls (what of, preemption, defragmentation), which mutate jobs,
shares and the free-space tables only through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from legionrm.scheduler.fairshare.classes import ClassTable, RmSettings, UserSpec
from legionrm.scheduler.fairshare.jobcaps import (
    allotment_gb,
    allotment_limit_q,
    non_preemptable_used_q,
)
from legionrm.scheduler.fairshare.nodepool import NodePool, PoolTables
from legionrm.scheduler.fairshare.shares import Job, Machine, Share


@dataclass(eq=False)
class CycleContext:
    """One pass over one top-level tree: its settings, classes, pools, free-space
    tables, jobs and machines, and what the pass has done (evictions,
    allocations)."""

    settings: RmSettings
    classes: ClassTable
    top: NodePool
    pools: dict[str, NodePool]
    tables: PoolTables
    jobs: dict[str, Job]
    machines: dict[str, Machine]
    jobs_by_class: dict[str, list[Job]]
    users: dict[str, UserSpec]
    needy: list[str]
    next_share_id: Callable[[], int]
    evictions: list[tuple[str, int, str]] = field(default_factory=list)
    allocations: list[int] = field(default_factory=list)
    preemptables: dict[str, set[str]] = field(default_factory=dict)
    picked: set[str] = field(default_factory=set)

    @property
    def quantum_gb(self) -> float:
        return self.top.quantum_gb

    def tree_has_pool(self, name: str) -> bool:
        return self.pools[name].top is self.top

    def new_share(self, job: Job, machine: str, order: int, fixed: bool, whole: bool = False) -> Share:
        m = self.machines[machine]
        if whole:
            order = m.order
        s = Share(id=self.next_share_id(), job=job.id, machine=machine, order=order, pending=True, fixed=fixed)
        m.shares[s.id] = s
        job.shares[s.id] = s
        self.tables.rearrange(machine, order, whole=whole)
        self.allocations.append(s.id)
        return s

    def reassign_share(self, s: Share, owner: Job, to: Job) -> None:
        """Hand a pending share to ``to``; it takes ``to``'s preemptability with it."""
        del owner.shares[s.id]
        s.job = to.id
        s.fixed = not self.classes.classes[to.cls].preemptable
        to.shares[s.id] = s

    def cancel_share(self, s: Share, owner: Job) -> None:
        owner.shares.pop(s.id, None)
        self.machines[s.machine].shares.pop(s.id, None)
        if s.id in self.allocations:
            self.allocations.remove(s.id)

    def user_limit_q(self, user: str) -> int:
        return allotment_limit_q(allotment_gb(self.users.get(user), self.settings), self.quantum_gb)

    def user_np_used_q(self, user: str) -> int:
        return non_preemptable_used_q([j for j in self.jobs.values() if j.user == user and j.cls in self.classes.classes], self.classes.classes)


# --- How Much for non-preemptable work ---------------------------------------------
