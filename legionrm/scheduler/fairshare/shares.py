"""Share quantum and order, the share tables' arithmetic, and the records
that hold shares (machines, jobs, shares).

Vocabulary (DUCC's): a *qshare* is one quantum of memory; an *nshare* is
``order`` co-located qshares, one allocation, outside the RM a *process*.
Job order rounds **up** (a process never gets less than it asked for);
machine order rounds **down** (a machine never promises memory it lacks).

The table helpers work on int numpy arrays indexed by order, index 0 unused
("total" slot in DUCC).  ``v`` is "holes by size" (n + v machines); the
derived ``nshares[o]`` is how many order-``o`` nshares all holes could yield
if big holes were split.  All helpers are pure functions of their arguments
except those documented as mutating.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

KB_PER_GB = 1 << 20


def job_order(memory_gb: float, quantum_gb: float) -> int:
    """Qshares per process: ceil(memory / quantum), at least 1."""
    q = quantum_gb * KB_PER_GB
    mem = memory_gb * KB_PER_GB
    return max(1, int(math.ceil(round(mem) / round(q))))


def reserve_max_order(order: int, memory_gb: float, quantum_gb: float, overage_gb: float) -> int:
    """The largest machine order a reservation of ``memory_gb`` (job order
    ``order``) may take: its own order, or with an overage ``ceil((memory +
    overage) / quantum)``, never less than its order."""
    if overage_gb <= 0:
        return order
    return max(order, int(math.ceil((memory_gb + overage_gb) / quantum_gb - 1e-9)))


def machine_order(memory_gb: float, quantum_gb: float, reserved_gb: float = 0.0) -> int:
    """Qshares a machine offers: floor((memory - reserved) / quantum), never negative."""
    q = round(quantum_gb * KB_PER_GB)
    mem = round((memory_gb - reserved_gb) * KB_PER_GB)
    return max(0, mem // q)


@lru_cache(maxsize=32)
def _split_matrix(length: int) -> np.ndarray:
    """M[o, p] = p // o for o >= 1: how many order-o pieces one order-p hole yields."""
    o = np.arange(length, dtype=np.int64)[:, None]
    p = np.arange(length, dtype=np.int64)[None, :]
    m = np.where(o > 0, p // np.maximum(o, 1), 0)
    m.setflags(write=False)
    return m


def nshares_from_v(v: np.ndarray) -> np.ndarray:
    """DUCC's calcNSharesByOrder: nshares[o] = sum over p >= o of (p // o) * v[p]."""
    out = _split_matrix(len(v)) @ v
    out[0] = 0
    return out


def remove_shares_by_order(v: np.ndarray, count: int, order: int) -> None:
    """Take ``count`` order-``order`` nshares out of the hole table ``v`` (mutates).

    First from holes that are exact multiples of ``order``, smallest multiple
    first (re-forming whole holes from what is left plus at most one residual
    hole); then, if still short, by splitting holes of increasing size.
    Taking more than exists takes what exists.
    """
    if count <= 0:
        return
    length = len(v)
    f = 1
    while f * order < length and count > 0:
        fo = f * order
        if v[fo] > 0:
            available = int(v[fo]) * f
            given = min(count, available)
            remaining_q = (available - given) * order
            v[fo] = remaining_q // fo
            residual = remaining_q % fo
            if residual > 0:
                v[residual] += 1
            count -= given
        f += 1
    if count <= 0:
        return
    for size in range(order, length):
        while v[size] > 0 and count > 0:
            per = size // order
            if count >= per:
                count -= per
                residual = size % order
                if residual > 0:
                    v[residual] += 1
            else:
                leftover = size - count * order
                v[leftover] += 1
                count = 0
            v[size] -= 1
        if count <= 0:
            return


# --- the records that hold shares ------------------------------------------------


@dataclass(slots=True)
class Share:
    """One nshare (a process) of ``order`` qshares on one machine for one job.

    ``pending`` is True from the cycle it is allocated until the next cycle
    starts (then it is running); ``evicted`` marks a published eviction: the
    share still occupies its machine until the exit is confirmed.
    """

    id: int
    job: str
    machine: str
    order: int
    pending: bool = True
    evicted: bool = False
    fixed: bool = False
    initialized: bool = False
    init_time_ms: float = 0.0
    investment_ms: float = 0.0


@dataclass(slots=True)
class Machine:
    """A node as the RM sees it: size in qshares, its pool, its state and shares."""

    name: str
    memory_gb: float
    nodepool: str
    order: int
    varied_off: bool = False
    dead: bool = False
    missed: int = 0
    shares: dict[int, Share] = field(default_factory=dict)
    blacklist: dict[int, int] = field(default_factory=dict)  # share id -> qshares in limbo

    @property
    def schedulable(self) -> bool:
        return not (self.varied_off or self.dead or self.blacklist)

    def used(self) -> int:
        """Qshares occupied: every share (evicting ones too) plus blacklisted space."""
        return sum(s.order for s in self.shares.values()) + sum(self.blacklist.values())

    def free(self) -> int:
        return max(0, self.order - self.used())


JOB_KINDS = ("job", "service", "reservation", "managed")


@dataclass(slots=True)
class Job:
    """One piece of work: a job, a service instance, a reservation or a managed process.

    ``work_items`` is the remaining work; ``time_per_item_ms`` 0 means no
    item has finished yet (the job is still initializing, DUCC's init_wait).
    ``submit`` orders jobs by age (smaller is older); ``seq`` breaks ties.
    """

    id: str
    user: str
    cls: str
    memory_gb: float
    order: int
    work_items: int = 0
    threads: int = 1
    max_processes: int | None = None
    time_per_item_ms: float = 0.0
    init_time_ms: float = 0.0
    kind: str = "job"
    submit: float = 0.0
    seq: int = 0
    shares: dict[int, Share] = field(default_factory=dict)
    # per-cycle outcome
    counted: int = 0
    cap: int = 0
    pure_fair_share: int = 0
    deferred: bool = False
    refused: bool = False
    completed: bool = False
    reason: str = ""
    order_upgraded: bool = False

    @property
    def init_wait(self) -> bool:
        return not (self.time_per_item_ms and self.time_per_item_ms > 0)

    @property
    def single(self) -> bool:
        """Services, managed processes and reservations ask for one allocation."""
        return self.kind != "job"

    def current(self) -> int:
        """Processes held: running plus pending, less those being evicted."""
        return sum(1 for s in self.shares.values() if not s.evicted)

    def evicting(self) -> int:
        return sum(1 for s in self.shares.values() if s.evicted)

    def age_key(self) -> tuple:
        return (self.submit, self.seq, self.id)

    def initialized(self) -> bool:
        return any(s.initialized for s in self.shares.values())
