"""What a request is charged, and the one place it is given back.

A request is shaped by its DUCC classes (:class:`~legionrm.scheduler.sharegate.ShareGate`:
where it may run, its priority and weight), charged to its user's allotment
and to its resource pool (a :class:`~legionrm.scheduler.ports.PoolGate`), all
or nothing, and measured against what the cluster could ever hold.  When it
ends, :meth:`Accounts.book_back` gives back its pool allocation and its
allotment, and lets what its inert objects keep in vaults go (``on_finish``).
The pools follow the cluster: their capacity is what the Collection's
available hosts and vaults hold now.  Pure: no Ray.
"""

from __future__ import annotations

from typing import Callable, Mapping

from legionrm.models import PlacementFailure, Refusal, Resources, SchedulingRequest
from legionrm.scheduler.capacity import live_capacity, peak, too_big
from legionrm.scheduler.ports import PoolGate, SnapshotSource, Swappable
from legionrm.scheduler.requests import Entry
from legionrm.scheduler.sharegate import ShareGate


class Accounts:
    """The accounts of the Scheduler ``name``: ``pools`` (admission),
    ``shares`` (the DUCC classes; None: none configured) and the cluster's
    capacity read from ``collection``.  ``on_finish`` is told of each finished
    request after its accounts are given back (its inert objects' states go)."""

    def __init__(self, pools: PoolGate, shares: ShareGate | None, collection: Swappable[SnapshotSource], *,
                 name: str = "scheduler", on_finish: Callable[[Entry], object] | None = None) -> None:
        self.pools = pools
        self.shares = shares
        self.name = name
        self._collection = collection
        self._on_finish = on_finish
        self._capacity_seen: Resources | None = None
        self._capacity_peak: Resources | None = None

    def shape(self, request: SchedulingRequest) -> tuple[SchedulingRequest, list[PlacementFailure]]:
        """The request as its DUCC classes shape it (unchanged without classes)."""
        return self.shares.shape(request) if self.shares is not None else (request, [])

    def class_order(self) -> tuple[Mapping[str, int], Mapping[str, float]]:
        """The DUCC classes' (priority, weight) by class name, for the queue's order."""
        return self.shares.class_order() if self.shares is not None else ({}, {})

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        """The allotment, then the pool; what one admitted is given back when the other refuses."""
        refusal = self.shares.admit(request) if self.shares is not None else None
        if refusal is not None:
            return refusal
        refusal = self.pools.admit(request)
        if refusal is not None and self.shares is not None:
            self.shares.release(request.request_id)
        return refusal

    def release(self, request_id: str) -> None:
        """Give back the pool allocation and the allotment of ``request_id``.  Idempotent."""
        self.pools.release(request_id)
        if self.shares is not None:
            self.shares.release(request_id)

    def book_back(self, entry: Entry) -> None:
        """The one place a finished request gives everything back: its pool
        allocation and allotment here; its instances' host calendars and class
        counts were released when each stopped; what its inert objects keep in vaults goes too.  Idempotent."""
        self.release(entry.id)
        if self._on_finish is not None:
            self._on_finish(entry)

    def too_big(self, request: SchedulingRequest) -> PlacementFailure | None:
        """A request for more than the whole cluster could ever hold fails at once."""
        total = getattr(self.pools, "capacity", None)  # Peloton units: memory in MB
        if not isinstance(total, dict):
            return None
        return too_big(request, total, self._capacity_peak, self.name)

    def follow_capacity(self) -> bool:
        """Pools follow the cluster: their capacity becomes what the
        Collection's available hosts and vaults hold now (hosts that joined,
        left, died or were varied count or stop counting).  Returns True when
        it changed (then the queue is worth another look)."""
        set_capacity = getattr(self.pools, "set_capacity", None)
        if not callable(set_capacity):
            return False
        cap = live_capacity(self._collection.get().snapshot())
        if cap == self._capacity_seen:
            return False
        self._capacity_seen = cap
        self._capacity_peak = peak(self._capacity_peak, cap)
        set_capacity(cap)
        return True
