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
from operator import add

import numpy as np

from legionrm import codes
from legionrm.errors import AdmissionError
from legionrm.models import Refusal
from legionrm.scheduler.pools.gang import (
    ACCOUNTS,
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

_K = len(KINDS)
_ENTITLEMENT, _SLACK_ENTITLEMENT, _CONTROLLER_LIMIT, _RESERVATION = range(4)  # the admitters, as _Ledger.failing names them


def _floor(d: float) -> float:
    """:func:`~legionrm.scheduler.pools.vec.sub_floor` of one kind: a difference below EPS is 0."""
    return 0.0 if d < EPS else d


def _over_by(base: list[float], need: list[float], bound: list[float]) -> bool:
    """:func:`~legionrm.scheduler.pools.vec.exceeds` of ``base + need`` against ``bound``, kind by kind."""
    for b, n, m in zip(base, need, bound):
        if b + n - m >= EPS:
            return True
    return False


class _Ledger:
    """A leaf's allocation accounts and demands as Python floats, for one admission call.

    On four-kind vectors a numpy operation costs far more than its arithmetic, so the
    admission loop reads the pool's arrays once, does per gang the same float
    operations in the same order as the vector code would (so every result is the
    same to the bit), and writes them back with :meth:`flush`.  Anything that works on
    the pool's arrays in between must :meth:`flush` first and :meth:`load` after.
    """

    __slots__ = ("pool", "alloc", "demand", "slack_demand", "slack_ent", "non_slack_ent", "ctrl_limit", "reservation")

    def __init__(self, pool: ResourcePool) -> None:
        self.pool = pool
        self.load()
        self.slack_ent: list[float] = pool.slack_entitlement.tolist()
        self.non_slack_ent: list[float] = pool.non_slack_entitlement.tolist()
        self.ctrl_limit: list[float] | None = None if pool.controller_limit is None else pool.controller_limit.tolist()
        self.reservation: list[float] = pool.reservation.tolist()

    def load(self) -> None:
        p = self.pool
        self.alloc: list[float] = p.alloc.ravel().tolist()  # the six accounts, row after row
        self.demand: list[float] = p.demand.tolist()
        self.slack_demand: list[float] = p.slack_demand.tolist()

    def flush(self) -> None:
        p = self.pool
        p.alloc = np.array(self.alloc, dtype=np.float64).reshape(len(ACCOUNTS), _K)
        p.demand = np.array(self.demand, dtype=np.float64)
        p.slack_demand = np.array(self.slack_demand, dtype=np.float64)

    def row(self, account: int) -> list[float]:
        return self.alloc[account * _K : (account + 1) * _K]

    def non_slack_used(self) -> list[float]:
        """``sub_floor(total, slack)``: what non-revocable work holds."""
        return [_floor(t - s) for t, s in zip(self.row(TOTAL), self.row(SLACK))]

    def failing(self, gang: Gang, need: list[float], preemption_enabled: bool) -> int | None:
        """The first admitter ``gang`` (of total ``need``) fails, in :func:`check`'s order; None when it passes all."""
        revocable = gang.revocable
        if revocable:
            if _over_by(self.row(SLACK), need, self.slack_ent):
                return _SLACK_ENTITLEMENT
        elif _over_by(self.non_slack_used(), need, self.non_slack_ent):
            return _ENTITLEMENT
        if self.ctrl_limit is not None and not revocable and gang.controller:
            if _over_by(self.row(CONTROLLER), need, self.ctrl_limit):
                return _CONTROLLER_LIMIT
        if preemption_enabled and not revocable and not gang.preemptible:
            if _over_by(self.row(NON_PREEMPTIBLE), need, self.reservation):
                return _RESERVATION
        return None

    def add_demand(self, gang: Gang) -> None:
        need = gang.need.tolist()
        if gang.revocable:
            self.slack_demand = list(map(add, self.slack_demand, need))
        else:
            self.demand = list(map(add, self.demand, need))

    def drop_demand(self, gang: Gang) -> None:
        need = gang.need.tolist()
        if gang.revocable:
            self.slack_demand = [_floor(d - n) for d, n in zip(self.slack_demand, need)]
        else:
            self.demand = [_floor(d - n) for d, n in zip(self.demand, need)]

    def charge(self, gang: Gang) -> None:
        self.alloc = list(map(add, self.alloc, gang.acct.ravel().tolist()))


def _over(kind_values: list[float], bound: list[float]) -> str:
    over = [k for i, k in enumerate(KINDS) if kind_values[i] - bound[i] >= EPS]
    k = over[0] if over else KINDS[0]
    i = KINDS.index(k)
    return f"{k} {go_num(round(float(kind_values[i]), 6))} > {go_num(round(float(bound[i]), 6))}"


def check(pool: ResourcePool, gang: Gang, *, preemption_enabled: bool = True) -> Refusal | None:
    """The three admitters in order; None when the gang may be admitted now.  Pure."""
    ledger = _Ledger(pool)
    need = gang.need.tolist()
    failed = ledger.failing(gang, need, preemption_enabled)
    if failed is None:
        return None
    if failed == _SLACK_ENTITLEMENT:
        used, bound = ledger.row(SLACK), ledger.slack_ent
        code, what = codes.RESPOOL_SLACK_ENTITLEMENT, f"revocable gang {gang.id} over slack entitlement"
    elif failed == _ENTITLEMENT:
        used, bound = ledger.non_slack_used(), ledger.non_slack_ent
        code, what = codes.RESPOOL_ENTITLEMENT, f"gang {gang.id} over non-slack entitlement"
    elif failed == _CONTROLLER_LIMIT:
        used, bound = ledger.row(CONTROLLER), ledger.ctrl_limit or []
        code, what = codes.RESPOOL_CONTROLLER_LIMIT, f"controller gang {gang.id} over controller limit"
    else:
        used, bound = ledger.row(NON_PREEMPTIBLE), ledger.reservation
        code, what = codes.RESPOOL_RESERVATION, f"non-preemptible gang {gang.id} over reservation"
    return Refusal(code=code, by=pool.path, reason=f"{what}: {_over(list(map(add, used, need)), bound)}")


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
    ledger = _Ledger(pool)
    outcome = _try_admit(ledger, gang, queue, preemption_enabled)
    ledger.flush()
    return outcome


def _try_admit(ledger: _Ledger, gang: Gang, queue: QueueType, preemption_enabled: bool) -> AdmissionOutcome:
    """:func:`try_admit` on the ledger's floats (the pool's arrays are stale until it flushes)."""
    pool = ledger.pool
    if pool.invalid_tasks and any(t in pool.invalid_tasks for t in gang.task_ids):
        ledger.flush()
        _drop_invalid(pool, gang, queue)
        ledger.load()
        return AdmissionOutcome.INVALID
    q = pool.queues[queue]
    if ledger.failing(gang, gang.need.tolist(), preemption_enabled) is None:
        if q.remove(gang):
            ledger.drop_demand(gang)
        ledger.charge(gang)
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
    if q.remove(gang):
        ledger.drop_demand(gang)
    pool.queues[target].push(gang)
    ledger.add_demand(gang)
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
    ledger = _Ledger(pool)
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
                ledger.flush()
                window = q.head(min(left - tries, width))
                run = _admissible_run(pool, window, preemption_enabled)
                width = width * 4 if run == len(window) else _FIRST_WINDOW
                if run:
                    admitted.extend(_admit_head(pool, qt, run))
                    ledger.load()
                    tries += run
                    continue
                streak = 0
            head = q.peek()
            assert head is not None
            outcome = _try_admit(ledger, head, qt, preemption_enabled)
            tries += 1
            if outcome is AdmissionOutcome.ADMITTED:
                admitted.append(head)
                streak += 1
            elif outcome is AdmissionOutcome.FULL:
                break
            else:
                streak = 0
    ledger.flush()
    return admitted
