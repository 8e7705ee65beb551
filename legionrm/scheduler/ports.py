"""The Scheduler's ports: the Protocols its collaborators implement, in one
place, so the same cores run with in-process fakes in tests and with Ray
adapters in the actors.  Contracts only (and the null pool gate, and the
holder of a collaborator Legion's ``set*`` calls replace); this module
imports no engine and may be imported by every part of the scheduler.
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, Protocol, TypeVar

from legionrm.collection.view import CollectionSnapshot
from legionrm.models import (
    EnactRequest,
    EnactResult,
    InstanceRef,
    Refusal,
    ReservedStart,
    ScheduleProposal,
    SchedulingRequest,
)

T = TypeVar("T")


class SnapshotSource(Protocol):
    """Where planning reads its one immutable view of the Collection."""

    def snapshot(self) -> CollectionSnapshot: ...


class EnactorPort(Protocol):
    """The Enactor: negotiates a request's schedules with the resources."""

    def enact_schedule(self, schedules: EnactRequest) -> EnactResult: ...

    def start_reserved(self, held: ReservedStart) -> EnactResult:
        """Create the instances an advance reservation holds the tokens for,
        all or nothing (``held.release``: cancel the tokens only)."""
        ...


Approval = Callable[[ScheduleProposal], "bool | Refusal"]
"""Legion's step 6: the Scheduler confirms a fully reserved schedule (True) or says why not."""

EnactorFor = Callable[[Approval], EnactorPort]
"""The Enactor that asks ``approval`` (the Scheduler's) before it starts a
schedule: in process, an Enactor core built with it; over Ray, an adapter
whose Enactor calls the Scheduler actor back (which forwards to the same
approval)."""


class Swappable(Generic[T]):
    """A collaborator Legion's ``setCollection`` / ``setEnactor`` may replace
    while the Scheduler runs: every part holding this sees the new one at its
    next call.  Thread-safe."""

    def __init__(self, current: T) -> None:
        self._current = current
        self._lock = threading.Lock()

    def get(self) -> T:
        return self._current

    def swap(self, new: T) -> T:
        """Put ``new`` in place; returns the prior one (Legion's set* calls answer it)."""
        with self._lock:
            prior, self._current = self._current, new
        return prior


class PoolGate(Protocol):
    """Admission through resource pools (Peloton-style), ahead of placement."""

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        """None when the request's gang is admitted (its allocation charged to
        its pool); a Refusal naming the pool otherwise."""
        ...

    def release(self, request_id: str) -> None:
        """Give back what ``admit`` charged (idempotent)."""
        ...


class OpenGate:
    """No pools configured: everything is admitted, charged to the root
    (``/``).  It keeps which requests it admitted, so the auditor checks
    them as it does a pool tree's (a running request it never admitted, or
    one it still holds after its end) and a restarted pool owner is charged
    again (:meth:`~legionrm.scheduler.accounts.Accounts.resync`)."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}  # (one dict operation per call: atomic for the pool owner's threads)

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        """Always admits (idempotent: admitting a request again keeps one charge)."""
        self._held[request.request_id] = ROOT_POOL
        return None

    def release(self, request_id: str) -> None:
        """Idempotent."""
        self._held.pop(request_id, None)

    def held(self) -> dict[str, str]:
        """Admitted request ids (not yet released) -> ``/``."""
        return dict(self._held)

    def report(self) -> dict[str, dict[str, object]]:
        """No pools: nothing to report (as ``legionrm pools`` shows it)."""
        return {}


ROOT_POOL = "/"
"""Where a cluster without pools charges what it admits."""


class Stopper(Protocol):
    def stop(self, instance: InstanceRef, reason: str) -> object:
        """Stop ``instance`` on its host.  Returning (any value) means the
        instance no longer runs: stopped now, or already gone.  Raising means
        that is not known; the cycle tries again next cycle."""
        ...


class InstanceWatch(Protocol):
    """Which of the running instances still run, asked in one batch per host
    (or host group).  Never raises for an unreachable host: its instances
    are ``("lost", why)`` once the host is known gone, and left out while
    that is not known yet."""

    def check(self, instances: list[InstanceRef]) -> dict[str, tuple[str, str]]:
        """instance id -> (``running`` | ``ended`` | ``lost``, reason)."""
        ...
