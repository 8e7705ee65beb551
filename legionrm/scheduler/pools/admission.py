"""Admission control on one leaf pool: which queued gangs may go on to be placed.

:func:`dequeue_gangs` visits the leaf's queues in the order non-preemptible,
controller, revocable, pending, each in priority-then-FIFO order, and admits
gangs all or nothing while three admitters pass (:func:`check`):

* entitlement: a non-revocable gang must fit in the non-slack entitlement
  next to what non-revocable work already holds (``total - slack``); a
  revocable gang in the slack entitlement next to the slack allocation;
* controller: a (non-revocable) controller gang must fit in the controller
  limit next to the controller allocation, when the pool has one;
* reservation: with preemption enabled, a non-preemptible non-revocable gang
  must fit in the reservation next to the non-preemptible allocation.

A gang that fails while taken from pending moves to the non-preemptible
queue (non-preemptible, preemption enabled), else the controller queue
(controller gang), else the revocable queue (revocable), else it stays at the
head and pending stops for this call (head-of-line blocking, by design).  A
gang failing in one of the three other queues stays there and that queue
stops.  Moving or dropping a gang uses up one of the call's ``limit`` tries,
as upstream.

``bulk=True`` takes a window of queue heads and finds, with numpy cumulative
sums, how many of them are admissible one after the other; only the gang
that stops the run is handled on its own.  The default is the plain
one-by-one loop: it is the faster of the two on bench_respool's load (short
runs per leaf), and the tests check both give the same result.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from legionrm import codes
from legionrm.errors import AdmissionError
from legionrm.models import Refusal
from legionrm.scheduler.pools.gang import (
    ADMISSION_ORDER,
    CONTROLLER,
    NON_PREEMPTIBLE,
    SLACK,
    TOTAL,
    Gang,
    QueueType,
)
from legionrm.scheduler.pools.tree import ResourcePool
from legionrm.scheduler.pools.vec import EPS, KINDS, exceeds, go_num, sub_floor

DEFAULT_DEQUEUE_LIMIT = 1000
"""Gangs admitted per leaf per cycle (Peloton's dequeueGangLimit)."""


_FIRST_WINDOW = 32
_STREAK_FOR_WINDOWS = 8


class AdmissionOutcome(str, Enum):
    ADMITTED = "admitted"
    INVALID = "invalid"  # tasks were dropped; the rest (if any) went back to the tail
    SKIP = "skip"  # moved from pending to a special queue
    FULL = "full"  # not admissible; this queue stops for this call


# --- demand bookkeeping -----------------------------------------------------


def add_to_queue(pool: ResourcePool, gang: Gang, queue: QueueType) -> None:
    """Put ``gang`` at the tail of ``queue`` and add it to demand (slack demand if revocable)."""
    pool.queues[queue].push(gang)
    if gang.revocable:
        pool.slack_demand = pool.slack_demand + gang.need
    else:
        pool.demand = pool.demand + gang.need


def remove_from_queue(pool: ResourcePool, gang: Gang, queue: QueueType) -> bool:
    """Take ``gang`` out of ``queue`` and out of demand; False when it was not there."""
    if not pool.queues[queue].remove(gang):
        return False
    _drop_demand(pool, [gang])
    return True


def _drop_demand(pool: ResourcePool, gangs: list[Gang]) -> None:
    for g in gangs:  # floored per gang, as each upstream subtraction is
        if g.revocable:
            pool.slack_demand = sub_floor(pool.slack_demand, g.need)
        else:
            pool.demand = sub_floor(pool.demand, g.need)


def enqueue(pool: ResourcePool, gang: Gang) -> None:
    """EnqueueGang: a leaf's pending queue only."""
    if not pool.is_leaf:
        raise AdmissionError(f"resource pool {pool.path} is not a leaf node")
    add_to_queue(pool, gang, QueueType.PENDING)


# --- the admitters ----------------------------------------------------------


def _over(kind_values: np.ndarray, bound: np.ndarray) -> str:
    over = [k for i, k in enumerate(KINDS) if kind_values[i] - bound[i] >= EPS]
    k = over[0] if over else KINDS[0]
    i = KINDS.index(k)
    return f"{k} {go_num(round(float(kind_values[i]), 6))} > {go_num(round(float(bound[i]), 6))}"


def check(pool: ResourcePool, gang: Gang, *, preemption_enabled: bool = True) -> Refusal | None:
    """The three admitters in order; None when the gang may be admitted now.  Pure."""
    a, need = pool.alloc, gang.need
    if gang.revocable:
        used = a[SLACK] + need
        if exceeds(used, pool.slack_entitlement):
            return Refusal(code=codes.RESPOOL_SLACK_ENTITLEMENT, by=pool.path,
                           reason=f"revocable gang {gang.id} over slack entitlement: {_over(used, pool.slack_entitlement)}")  # fmt: skip
    else:
        used = sub_floor(a[TOTAL], a[SLACK]) + need
        if exceeds(used, pool.non_slack_entitlement):
            return Refusal(code=codes.RESPOOL_ENTITLEMENT, by=pool.path,
                           reason=f"gang {gang.id} over non-slack entitlement: {_over(used, pool.non_slack_entitlement)}")  # fmt: skip
    if gang.controller and not gang.revocable and pool.controller_limit is not None:
        used = a[CONTROLLER] + need
        if exceeds(used, pool.controller_limit):
            return Refusal(code=codes.RESPOOL_CONTROLLER_LIMIT, by=pool.path,
                           reason=f"controller gang {gang.id} over controller limit: {_over(used, pool.controller_limit)}")  # fmt: skip
    if preemption_enabled and not gang.preemptible and not gang.revocable:
        used = a[NON_PREEMPTIBLE] + need
        if exceeds(used, pool.reservation):
            return Refusal(code=codes.RESPOOL_RESERVATION, by=pool.path,
                           reason=f"non-preemptible gang {gang.id} over reservation: {_over(used, pool.reservation)}")  # fmt: skip
    return None


def _admissible_run(pool: ResourcePool, window: list[Gang], preemption_enabled: bool) -> int:
    """How many gangs at the head of ``window`` pass, each after the ones before it are admitted.

    Same rules as :func:`check`, evaluated for all at once with cumulative
    allocations; a gang holding an invalid task also ends the run.
    """
    n = len(window)
    acct = np.stack([g.acct for g in window])  # (n, 6, 4)
    need = acct[:, TOTAL]
    prev = pool.alloc + (np.cumsum(acct, axis=0) - acct)  # allocation before each gang
    rev = np.fromiter((g.revocable for g in window), bool, n)
    fail = np.where(
        rev,
        exceeds(prev[:, SLACK] + need, pool.slack_entitlement),
        exceeds(sub_floor(prev[:, TOTAL], prev[:, SLACK]) + need, pool.non_slack_entitlement),
    )
    if pool.controller_limit is not None:
        ctrl = np.fromiter((g.controller for g in window), bool, n) & ~rev
        if ctrl.any():
            fail |= ctrl & exceeds(prev[:, CONTROLLER] + need, pool.controller_limit)
    if preemption_enabled:
        npg = np.fromiter((not g.preemptible for g in window), bool, n) & ~rev
        if npg.any():
            fail |= npg & exceeds(prev[:, NON_PREEMPTIBLE] + need, pool.reservation)
    if pool.invalid_tasks:
        bad = pool.invalid_tasks
        fail |= np.fromiter((any(t in bad for t in g.task_ids) for g in window), bool, n)
    return int(np.argmax(fail)) if fail.any() else n


def _admit_head(pool: ResourcePool, queue: QueueType, count: int) -> list[Gang]:
    gangs = pool.queues[queue].pop_front(count)
    _drop_demand(pool, gangs)
    pool.alloc = pool.alloc + np.sum([g.acct for g in gangs], axis=0)
    return gangs


def _drop_invalid(pool: ResourcePool, gang: Gang, queue: QueueType) -> None:
    """Drop a gang's killed tasks; the surviving part goes back at the tail (as upstream)."""
    bad = [t for t in gang.task_ids if t in pool.invalid_tasks]
    pool.invalid_tasks.difference_update(bad)
    remove_from_queue(pool, gang, queue)
    survivors = tuple(t for t in gang.tasks if t.id not in bad)
    if survivors:
        add_to_queue(pool, Gang(gang.id, survivors), queue)


def try_admit(pool: ResourcePool, gang: Gang, queue: QueueType, *, preemption_enabled: bool = True) -> AdmissionOutcome:
    """TryAdmit for the gang at the head of ``queue``: admit it, drop its killed tasks, move it, or stop."""
    if pool.invalid_tasks and any(t in pool.invalid_tasks for t in gang.task_ids):
        _drop_invalid(pool, gang, queue)
        return AdmissionOutcome.INVALID
    if check(pool, gang, preemption_enabled=preemption_enabled) is None:
        remove_from_queue(pool, gang, queue)
        pool.alloc = pool.alloc + gang.acct
        return AdmissionOutcome.ADMITTED
    if queue is not QueueType.PENDING:
        return AdmissionOutcome.FULL
    if not gang.preemptible and preemption_enabled:
        target = QueueType.NON_PREEMPTIBLE
    elif gang.controller:
        target = QueueType.CONTROLLER
    elif gang.revocable:
        target = QueueType.REVOCABLE
    else:
        return AdmissionOutcome.FULL  # head-of-line blocking: pending stops here for this call
    remove_from_queue(pool, gang, queue)
    add_to_queue(pool, gang, target)
    return AdmissionOutcome.SKIP


def dequeue_gangs(
    pool: ResourcePool,
    limit: int = DEFAULT_DEQUEUE_LIMIT,
    *,
    preemption_enabled: bool = True,
    bulk: bool = False,
) -> list[Gang]:
    """DequeueGangs: admit up to ``limit`` gangs from a leaf's four queues, in admission order.

    Mutates the pool's queues, demand and allocation; returns the admitted
    gangs in the order they were admitted.
    """
    if limit <= 0:
        raise AdmissionError(f"limit {limit} is not valid")
    if not pool.is_leaf:
        raise AdmissionError(f"resource pool {pool.path} is not a leaf node")
    admitted: list[Gang] = []
    for qt in ADMISSION_ORDER:
        left = limit - len(admitted)
        if left <= 0:
            break
        q = pool.queues[qt]
        tries = 0
        streak = 0  # consecutive admissions: windows pay off only on long runs
        width = _FIRST_WINDOW
        while tries < left:
            if not q:
                break
            if bulk and streak >= _STREAK_FOR_WINDOWS:
                window = q.head(min(left - tries, width))
                run = _admissible_run(pool, window, preemption_enabled)
                width = width * 4 if run == len(window) else _FIRST_WINDOW
                if run:
                    admitted.extend(_admit_head(pool, qt, run))
                    tries += run
                    continue
                streak = 0
            head = q.peek()
            assert head is not None
            outcome = try_admit(pool, head, qt, preemption_enabled=preemption_enabled)
            tries += 1
            if outcome is AdmissionOutcome.ADMITTED:
                admitted.append(head)
                streak += 1
            elif outcome is AdmissionOutcome.FULL:
                break
            else:
                streak = 0
    return admitted
