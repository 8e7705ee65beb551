"""Resource pools: hierarchical admission control ahead of scheduling (Peloton-style).

:class:`ResourcePoolTree` is the one object the planner holds.  Its life cycle:

* configure: :meth:`create` / :meth:`update` / :meth:`delete` / :meth:`get`
  (by path ``/a/b`` or id), every change validated first (respool_validate);
* each entitlement period: :meth:`compute_entitlement` (entitlement.py);
* work arrives: :meth:`enqueue` a :class:`Gang` into a leaf's pending queue;
* each scheduling period: :meth:`admit_cycle` returns the gangs admitted,
  whose tasks may now be placed (admission.py); or, for a caller waiting
  on one gang, :meth:`admit_now` (the Scheduler's pool gate, poolgate.py);
* tasks move on: :meth:`mark_placing`, :meth:`mark_running`; when they end:
  :meth:`release`;
* each preemption period: :meth:`preemption_candidates`, then
  :meth:`requeue_preempted` for those chosen (respool_preempt.py).

A :class:`~legionrm.models.SchedulingRequest` becomes a gang with
:func:`gang_from_request`.  Nothing here imports ray.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from legionrm import codes
from legionrm.errors import AdmissionError, PoolNotFoundError
from legionrm.models import Refusal, SchedulingRequest
from legionrm.scheduler.pools import admission as adm
from legionrm.scheduler.pools.entitlement import (
    compute_entitlement as _compute_entitlement,
)
from legionrm.scheduler.pools.gang import (
    ACCOUNTS,
    ADMISSION_ORDER,
    CONTROLLER,
    NON_PREEMPTIBLE,
    NON_SLACK,
    PREEMPTIBLE,
    SLACK,
    TOTAL,
    Gang,
    GangQueue,
    QueueType,
    Task,
)
from legionrm.scheduler.pools.preempt import (
    PreemptionCandidate,
    PreemptionConfig,
    TaskRecord,
    TaskState,
)
from legionrm.scheduler.pools.preempt import preemption_candidates as _candidates
from legionrm.scheduler.pools.tree import (
    PoolConfig,
    PoolTree,
    ReservationType,
    ResourcePool,
    ResourceSpec,
)
from legionrm.scheduler.pools.vec import KINDS, Vec, as_dict, sub_floor, vec, zeros  # noqa: F401

__all__ = [
    "ACCOUNTS",
    "Gang",
    "GangQueue",
    "PoolConfig",
    "PreemptionCandidate",
    "PreemptionConfig",
    "QueueType",
    "ReservationType",
    "ResourcePool",
    "ResourcePoolTree",
    "ResourceSpec",
    "Task",
    "TaskState",
    "gang_from_request",
]

MB_PER_GB = 1024.0


def gang_from_request(request: SchedulingRequest, *, revocable: bool = False, preemptible: bool = True) -> Gang:
    """The gang a scheduling request asks admission for: one task per instance.

    Each ``ObjectRequest`` gives ``count`` tasks ``<request_id>/<class>#<i>``
    with cpu = ``cpus``, memory = ``memory_gb`` x 1024 (MB), disk =
    ``storage_gb`` x 1024 (MB), gpu = ``gpus`` and the object's priority (0
    when unset).  A request with no objects has no tasks and is refused.
    """
    tasks: list[Task] = []
    per_class: dict[str, int] = {}
    for obj in request.objects:
        for _ in range(obj.count):
            i = per_class.get(obj.class_name, 0)
            per_class[obj.class_name] = i + 1
            tasks.append(
                Task(
                    id=f"{request.request_id}/{obj.class_name}#{i}",
                    cpu=obj.cpus,
                    memory=obj.memory_gb * MB_PER_GB,
                    disk=obj.storage_gb * MB_PER_GB,
                    gpu=float(obj.gpus),
                    priority=obj.priority or 0,
                    preemptible=preemptible,
                    revocable=revocable,
                )
            )
    return Gang(request.request_id, tuple(tasks))


class ResourcePoolTree(PoolTree):
    """The pool tree with entitlement, admission, release and preemption.

    ``preemption`` gives Peloton's preemption settings (its ``enabled`` flag
    also turns on the reservation admitter and the move of non-preemptible
    gangs to their queue); ``dequeue_limit`` is gangs per leaf per cycle.
    """

    def __init__(self, *, preemption: PreemptionConfig | None = None, dequeue_limit: int = adm.DEFAULT_DEQUEUE_LIMIT) -> None:
        super().__init__()
        self.preemption = preemption or PreemptionConfig()
        self.dequeue_limit = dequeue_limit
        # The one-by-one loop is the default: on 100,000 gangs over 990 leaves it is faster than the
        # numpy windows (runs of admissible gangs are short there); both give the same result (tested).
        self.bulk_admission = False
        self._tasks: dict[str, TaskRecord] = {}
        self._gangs: dict[str, list[str]] = {}  # admitted gang id -> its task ids still held
        self._admit_seq = 0
        self._queued_in: dict[str, ResourcePool] = {}  # queued gang id -> its leaf (an index, may be stale)

    # --- entitlement --------------------------------------------------------

    def compute_entitlement(
        self, capacity: Vec | Mapping[str, float], slack_capacity: Vec | Mapping[str, float] | None = None
    ) -> None:
        """One entitlement cycle for the given cluster capacity (and slack capacity: only its cpu counts)."""
        _compute_entitlement(self, capacity, slack_capacity)

    # --- queueing -------------------------------------------------------------

    def enqueue(self, gang: Gang, pool_path: str = "/") -> ResourcePool:
        """Add ``gang`` at the tail of the pending queue of the leaf at ``pool_path``.

        Raises AdmissionError for a non-leaf pool or a gang id already queued or
        admitted, PoolNotFoundError for an unknown pool.  Returns the pool.
        """
        pool = self.get(pool_path)
        if gang.id in self._gangs or self._find_queued(gang.id) is not None:
            raise AdmissionError(f"gang {gang.id} is already queued or admitted")
        adm.enqueue(pool, gang)
        self._queued_in[gang.id] = pool
        return pool

    def _find_queued(self, gang_id: str) -> tuple[ResourcePool, QueueType, Gang] | None:
        pool = self._queued_in.get(gang_id)
        if pool is None:
            return None
        for qt in ADMISSION_ORDER:
            for g in pool.queues[qt]:
                if g.id == gang_id:
                    return pool, qt, g
        del self._queued_in[gang_id]  # stale: all its tasks were dropped as invalid
        return None

    def cancel(self, gang_id: str) -> bool:
        """Withdraw a queued gang (its demand goes with it); False when it is not queued."""
        found = self._find_queued(gang_id)
        if found is None:
            return False
        pool, qt, gang = found
        self._queued_in.pop(gang_id, None)
        return adm.remove_from_queue(pool, gang, qt)

    def invalidate_task(self, task_id: str, pool_path: str) -> None:
        """Mark a queued task as killed: admission drops it when its gang reaches a queue head."""
        self.get(pool_path).invalid_tasks.add(task_id)

    # --- admission ------------------------------------------------------------

    def admit_cycle(self) -> list[Gang]:
        """One scheduling cycle: every leaf (in path order) admits up to ``dequeue_limit`` gangs.

        Returns the admitted gangs; their tasks are READY and hold allocation
        until :meth:`release`.
        """
        out: list[Gang] = []
        for pool in self.pools(leaf_only=True):
            if not pool.queued():
                continue
            got = adm.dequeue_gangs(
                pool, self.dequeue_limit, preemption_enabled=self.preemption.enabled, bulk=self.bulk_admission
            )
            for gang in got:
                self._queued_in.pop(gang.id, None)
                self._record(pool, gang)
            out.extend(got)
        return out

    def admit_now(self, gang_id: str) -> Refusal | None:
        """Try to admit one queued gang at once, out of the cycle, for a caller
        that waits for the answer (the Scheduler's ``scheduleObjects``).

        The same admitters as :meth:`admit_cycle` (:func:`admission.try_admit`),
        but for this gang only, wherever it stands in its leaf's queues: it
        does not wait behind gangs queued ahead of it.  None: admitted, its
        allocation charged and held until :meth:`release`.  Otherwise the
        refusal of the first failing admitter (by = the pool's path); the gang
        is then still queued (possibly moved to another queue, as
        ``try_admit`` moves it) and the caller :meth:`cancel` s it or leaves it
        to the cycle.  Raises AdmissionError when the gang is not queued.
        """
        found = self._find_queued(gang_id)
        if found is None:
            raise AdmissionError(f"gang {gang_id} is not queued")
        pool, queue, gang = found
        outcome = adm.try_admit(pool, gang, queue, preemption_enabled=self.preemption.enabled)
        if outcome is adm.AdmissionOutcome.ADMITTED:
            self._queued_in.pop(gang_id, None)
            self._record(pool, gang)
            return None
        if outcome is adm.AdmissionOutcome.INVALID:
            return Refusal(code=codes.RESPOOL_INVALID, by=pool.path,
                           reason=f"gang {gang_id} held killed tasks; they were dropped and the rest queued again")  # fmt: skip
        refusal = adm.check(pool, gang, preemption_enabled=self.preemption.enabled)  # pure; a move changed no account
        assert refusal is not None
        return refusal

    def _record(self, pool: ResourcePool, gang: Gang) -> None:
        ids = self._gangs.setdefault(gang.id, [])
        for t in gang.tasks:
            self._admit_seq += 1
            self._tasks[t.id] = TaskRecord(task=t, gang_id=gang.id, pool=pool, seq=self._admit_seq)
            ids.append(t.id)

    def explain(self, gang: Gang, pool_path: str) -> Refusal | None:
        """Why ``gang`` would not be admitted in that pool now (None: it would).  Pure."""
        return adm.check(self.get(pool_path), gang, preemption_enabled=self.preemption.enabled)

    # --- allocation -------------------------------------------------------------

    def _task_ids(self, target: "Gang | str | Iterable[str]") -> list[str]:
        if isinstance(target, Gang):
            return list(self._gangs.get(target.id, []))
        if isinstance(target, str):
            if target in self._gangs:
                return list(self._gangs[target])
            return [target]
        ids: list[str] = []
        for t in target:
            ids.extend(self._task_ids(t))
        return ids

    def release(self, target: "Gang | str | Iterable[str]") -> int:
        """Give back the allocation of an admitted gang, a gang id, a task id, or several.

        Idempotent: unknown or already released tasks are ignored.  Returns how
        many tasks were released.
        """
        n = 0
        for tid in self._task_ids(target):
            rec = self._tasks.pop(tid, None)
            if rec is None:
                continue
            rec.pool.alloc = sub_floor(rec.pool.alloc, rec.task.accounts())
            ids = self._gangs.get(rec.gang_id)
            if ids is not None:
                ids.remove(tid)
                if not ids:
                    del self._gangs[rec.gang_id]
            n += 1
        return n

    def mark_placing(self, task_id: str) -> None:
        self._record_of(task_id).state = TaskState.PLACING

    def mark_running(self, task_id: str, started_at: float) -> None:
        rec = self._record_of(task_id)
        rec.state, rec.started_at = TaskState.RUNNING, started_at

    def _record_of(self, task_id: str) -> TaskRecord:
        rec = self._tasks.get(task_id)
        if rec is None:
            raise PoolNotFoundError(f"task {task_id} is not admitted")
        return rec

    def admitted_tasks(self) -> list[TaskRecord]:
        return list(self._tasks.values())

    def add_demand(self, pool_path: str, amount: Vec | Mapping[str, float], *, slack: bool = False) -> None:
        """Add demand not carried by queued gangs (as Peloton's AddToDemand), e.g. from a scenario file."""
        pool = self.get(pool_path)
        v = amount if isinstance(amount, np.ndarray) else vec(amount)
        if slack:
            pool.slack_demand = pool.slack_demand + v
        else:
            pool.demand = pool.demand + v

    def add_allocation(
        self,
        pool_path: str,
        amount: Vec | Mapping[str, float],
        *,
        slack: bool = False,
        preemptible: bool = True,
        controller: bool = False,
    ) -> None:
        """Add allocation held by tasks the tree does not track (e.g. from a scenario file)."""
        pool = self.get(pool_path)
        v = amount if isinstance(amount, np.ndarray) else vec(amount)
        acct = zeros(len(ACCOUNTS))
        acct[TOTAL] = v
        acct[PREEMPTIBLE if preemptible else NON_PREEMPTIBLE] = v
        if controller:
            acct[CONTROLLER] = v
        acct[SLACK if slack else NON_SLACK] = v
        pool.alloc = pool.alloc + acct

    # --- preemption -------------------------------------------------------------

    def preemption_candidates(self) -> list[PreemptionCandidate]:
        """One preemption check: count over-allocated leaves, choose tasks of sustained ones.

        Changes only the per-pool counters; act on the result with
        :meth:`requeue_preempted`.
        """
        by_pool: dict[str, list[TaskRecord]] = {}
        for rec in self._tasks.values():
            by_pool.setdefault(rec.pool.id, []).append(rec)
        return _candidates(self.pools(leaf_only=True), by_pool, self.preemption)

    def requeue_preempted(self, candidates: Iterable[PreemptionCandidate]) -> list[PreemptionCandidate]:
        """Act on chosen tasks: a task not yet running goes back to its pool's pending queue
        as a one-task gang (its allocation released now); running tasks are returned for the
        caller to stop, and their allocation is released by :meth:`release` when they end."""
        to_kill: list[PreemptionCandidate] = []
        for c in candidates:
            rec = self._tasks.get(c.task_id)
            if rec is None:
                continue
            if rec.state is TaskState.RUNNING:
                to_kill.append(c)
                continue
            pool = rec.pool
            self.release(c.task_id)
            adm.add_to_queue(pool, Gang(c.task_id, (rec.task,)), QueueType.PENDING)
            self._queued_in[c.task_id] = pool
        return to_kill

    # --- reporting --------------------------------------------------------------

    def report(self) -> dict[str, dict[str, object]]:
        """Per pool: entitlements, allocation (non-leaf: summed now) and queued gang ids, JSON-ready."""
        self.aggregate()
        out: dict[str, dict[str, object]] = {}
        for pool in self.pools():
            out[pool.path] = {
                "entitlement": as_dict(pool.entitlement),
                "slack_entitlement": as_dict(pool.slack_entitlement),
                "non_slack_entitlement": as_dict(pool.non_slack_entitlement),
                "allocation": as_dict(pool.alloc[TOTAL]),
                "queues": {
                    "pending": pool.queues[QueueType.PENDING].ids(),
                    "controller": pool.queues[QueueType.CONTROLLER].ids(),
                    "non_preemptible": pool.queues[QueueType.NON_PREEMPTIBLE].ids(),
                    "revocable": pool.queues[QueueType.REVOCABLE].ids(),
                },
            }
        return out

