"""Gangs of tasks and the priority-FIFO queues a leaf pool keeps them in.

A :class:`Gang` is the unit of admission: its tasks are admitted all
together or not at all.  Its type is read from its first task (gangs are
assumed homogeneous, as in Peloton); a *controller* gang is one of exactly
one task flagged ``controller``.  The allocation a gang adds on admission is
summed per task into the six accounts (:data:`ACCOUNTS`), each task counted
by its own flags, so that releasing a single task later subtracts exactly
what it added.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterator

import numpy as np

from legionrm.errors import AdmissionError
from legionrm.scheduler.pools.vec import KINDS, Vec, zeros

# The six allocation accounts of a pool, as rows of a (6, 4) matrix.
TOTAL, NON_PREEMPTIBLE, PREEMPTIBLE, CONTROLLER, SLACK, NON_SLACK = range(6)
ACCOUNTS: tuple[str, ...] = ("total", "non_preemptible", "preemptible", "controller", "slack", "non_slack")


class QueueType(str, Enum):
    """The four queues of a leaf pool, in the order admission visits them."""

    NON_PREEMPTIBLE = "non_preemptible"
    CONTROLLER = "controller"
    REVOCABLE = "revocable"
    PENDING = "pending"


ADMISSION_ORDER: tuple[QueueType, ...] = (
    QueueType.NON_PREEMPTIBLE,
    QueueType.CONTROLLER,
    QueueType.REVOCABLE,
    QueueType.PENDING,
)


@dataclass(frozen=True)
class Task:
    """One task of a gang: what it needs (cpu cores, memory MB, disk MB, gpus) and how it may be treated."""

    id: str
    cpu: float = 0.0
    memory: float = 0.0
    disk: float = 0.0
    gpu: float = 0.0
    priority: int = 0
    preemptible: bool = True
    revocable: bool = False
    controller: bool = False

    @property
    def resources(self) -> Vec:
        return np.array([self.cpu, self.memory, self.disk, self.gpu], dtype=np.float64)

    def accounts(self) -> np.ndarray:
        """The (6, 4) allocation this task adds when admitted (and removes when released)."""
        acct = zeros(len(ACCOUNTS))
        r = self.resources
        acct[TOTAL] = r
        acct[PREEMPTIBLE if self.preemptible else NON_PREEMPTIBLE] = r
        if self.controller:
            acct[CONTROLLER] = r
        acct[SLACK if self.revocable else NON_SLACK] = r
        return acct


@dataclass(eq=False)
class Gang:
    """Tasks admitted together.  ``need`` and ``acct`` are computed once, at construction."""

    id: str
    tasks: tuple[Task, ...]
    need: Vec = field(init=False, repr=False)
    acct: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.tasks = tuple(self.tasks)
        if not self.tasks:
            raise AdmissionError(f"gang {self.id}: gang has no elements")
        self.acct = np.sum([t.accounts() for t in self.tasks], axis=0)
        self.need = self.acct[TOTAL].copy()

    # classification: from the first task, as upstream (gangs are homogeneous)
    @property
    def priority(self) -> int:
        return self.tasks[0].priority

    @property
    def preemptible(self) -> bool:
        return self.tasks[0].preemptible

    @property
    def revocable(self) -> bool:
        return self.tasks[0].revocable

    @property
    def controller(self) -> bool:
        """Exactly one task, flagged controller: a gang of more tasks is never a controller gang."""
        return len(self.tasks) == 1 and self.tasks[0].controller

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tasks)

    def resources(self) -> dict[str, float]:
        return {k: float(self.need[i]) for i, k in enumerate(KINDS)}


class GangQueue:
    """Unbounded priority-FIFO queue: highest priority first, FIFO within a priority.

    Only the head is ever taken out during admission, so the queue is a map
    priority -> deque plus the priorities in descending order.
    """

    def __init__(self) -> None:
        self._lanes: dict[int, deque[Gang]] = {}
        self._order: list[int] = []  # priorities present, highest first
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Gang]:
        for p in self._order:
            yield from self._lanes[p]

    def push(self, gang: Gang) -> None:
        """Append at the tail of the gang's priority lane."""
        p = gang.priority
        lane = self._lanes.get(p)
        if lane is None:
            lane = self._lanes[p] = deque()
            self._order.append(p)
            self._order.sort(reverse=True)
        lane.append(gang)
        self._size += 1

    def head(self, n: int = 1) -> list[Gang]:
        """The first ``n`` gangs in queue order (fewer when the queue is shorter)."""
        return list(itertools.islice(iter(self), n))

    def peek(self) -> Gang | None:
        if not self._size:
            return None
        return self._lanes[self._order[0]][0]

    def pop_front(self, n: int = 1) -> list[Gang]:
        """Remove and return the first ``n`` gangs."""
        out: list[Gang] = []
        while n > 0 and self._order:
            p = self._order[0]
            lane = self._lanes[p]
            take = min(n, len(lane))
            out.extend(lane.popleft() for _ in range(take))
            n -= take
            if not lane:
                del self._lanes[p]
                self._order.pop(0)
        self._size -= len(out)
        return out

    def remove(self, gang: Gang) -> bool:
        """Remove ``gang`` wherever it is (by identity); False when it is not queued here."""
        lane = self._lanes.get(gang.priority)
        if lane is None:
            return False
        for i, g in enumerate(lane):
            if g is gang:
                del lane[i]
                self._size -= 1
                if not lane:
                    del self._lanes[gang.priority]
                    self._order.remove(gang.priority)
                return True
        return False

    def ids(self) -> list[str]:
        return [g.id for g in self]
