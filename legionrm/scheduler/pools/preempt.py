"""Preemption of leaf pools that hold more than their entitlement.

Each check (:func:`preemption_candidates`) counts, per leaf, consecutive
checks in which its non-slack allocation exceeds its non-slack entitlement or
its slack allocation its slack entitlement (floored subtraction, any kind);
a leaf reaching ``sustained_over_allocation_count`` is processed and its
count reset.  Processing picks, from the leaf's admitted tasks in states
READY, PLACING or RUNNING, first revocable preemptible tasks until the slack
excess is covered, then non-revocable preemptible tasks until the non-slack
excess is covered.  Non-preemptible tasks are never picked.

Rank: READY, then PLACING, then RUNNING; within a state lower priority
first; on equal priority the most recently started first (start times are
not compared when a task is READY); then admission order, for determinism.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable

import numpy as np

from legionrm.scheduler.pools.gang import NON_SLACK, SLACK, Task
from legionrm.scheduler.pools.tree import ResourcePool
from legionrm.scheduler.pools.vec import Vec, is_zero, sub_floor, zeros


@dataclass(frozen=True)
class PreemptionConfig:
    """Peloton's ``preemption`` section (base.yaml values)."""

    enabled: bool = True
    sustained_over_allocation_count: int = 5


class TaskState(str, Enum):
    READY = "READY"  # admitted, waiting to be placed
    PLACING = "PLACING"
    RUNNING = "RUNNING"


_STATE_ORDER = {TaskState.READY: 0, TaskState.PLACING: 1, TaskState.RUNNING: 2}


@dataclass
class TaskRecord:
    """An admitted task the tree still holds allocation for."""

    task: Task
    gang_id: str
    pool: ResourcePool
    state: TaskState = TaskState.READY
    started_at: float | None = None
    seq: int = 0  # admission order, the last tie-break


@dataclass(frozen=True)
class PreemptionCandidate:
    """A task chosen to give resources back; ``reason`` is ``slack`` or ``non_slack``."""

    task_id: str
    gang_id: str
    pool: str
    state: TaskState
    reason: str


def over_allocated(pool: ResourcePool) -> bool:
    """True when the leaf holds more than its non-slack or slack entitlement (by EPS, any kind)."""
    return not (
        is_zero(sub_floor(pool.alloc[NON_SLACK], pool.non_slack_entitlement))
        and is_zero(sub_floor(pool.alloc[SLACK], pool.slack_entitlement))
    )


def rank(records: Iterable[TaskRecord]) -> list[TaskRecord]:
    """Preemption order: state, lower priority, most recently started, admission order."""

    def key(r: TaskRecord) -> tuple[int, int, float, int]:
        started = 0.0 if r.state is TaskState.READY or r.started_at is None else -r.started_at
        return (_STATE_ORDER[r.state], r.task.priority, started, r.seq)

    return sorted(records, key=key)


def pick(to_free: Vec, ranked: list[TaskRecord]) -> list[TaskRecord]:
    """Walk the ranked tasks until ``to_free`` is covered.

    A task is skipped only when it frees nothing of a kind that ``to_free``
    asks for; a task that helps only kinds already covered can still be
    picked (Peloton's over-selection, kept).
    """
    picked: list[TaskRecord] = []
    freed = zeros()
    for r in ranked:
        if is_zero(sub_floor(to_free, freed)):
            break
        res = r.task.resources
        if np.array_equal(sub_floor(to_free, res), to_free):
            continue
        picked.append(r)
        freed = freed + res
    return picked


def choose(pool: ResourcePool, records: list[TaskRecord]) -> list[PreemptionCandidate]:
    """The tasks to preempt from one over-allocated leaf, revocable first."""
    live = [r for r in records if r.task.preemptible]
    slack_free = sub_floor(pool.alloc[SLACK], pool.slack_entitlement)
    non_slack_free = sub_floor(pool.alloc[NON_SLACK], pool.non_slack_entitlement)
    out = [
        PreemptionCandidate(r.task.id, r.gang_id, pool.path, r.state, "slack")
        for r in pick(slack_free, rank(r for r in live if r.task.revocable))
    ]
    out += [
        PreemptionCandidate(r.task.id, r.gang_id, pool.path, r.state, "non_slack")
        for r in pick(non_slack_free, rank(r for r in live if not r.task.revocable))
    ]
    return out


def preemption_candidates(
    leaves: list[ResourcePool], tasks_by_pool: dict[str, list[TaskRecord]], config: PreemptionConfig
) -> list[PreemptionCandidate]:
    """One preemption check over the leaves: update the counters, choose tasks of sustained offenders.

    Mutates only the pools' ``over_allocation_count``.  Returns nothing when
    preemption is disabled.
    """
    if not config.enabled:
        return []
    out: list[PreemptionCandidate] = []
    for pool in leaves:
        if over_allocated(pool):
            pool.over_allocation_count += 1
        else:
            pool.over_allocation_count = 0
        if pool.over_allocation_count >= config.sustained_over_allocation_count:
            pool.over_allocation_count = 0
            out.extend(choose(pool, tasks_by_pool.get(pool.id, [])))
    return out
