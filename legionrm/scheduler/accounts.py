"""What a request is charged, and the one place it is given back.

A request is shaped by its DUCC classes (:class:`~legionrm.scheduler.sharegate.ShareGate`:
where it may run, its priority and weight), charged to its user's allotment
and to its resource pool (a :class:`~legionrm.scheduler.ports.PoolGate`), all
or nothing, and measured against what the cluster could ever hold.  When it
ends, :meth:`Accounts.book_back` gives back its pool allocation and its
allotment, and lets what its inert objects keep in vaults go (``on_finish``).
The pools follow the cluster: their capacity is what the Collection's
available hosts and vaults hold now (:func:`live_capacity`), and a request
no cluster of the largest size seen could run is refused at once
(:func:`too_big`).  After a restart :meth:`Accounts.recover` puts a reloaded
book back in order, and :meth:`Accounts.resync` charges again what a
restarted pool owner forgot.  Pure: no Ray.
"""

from __future__ import annotations

import logging
from typing import Callable

from legionrm import codes
from legionrm.collection.view import CollectionSnapshot
from legionrm.models import PlacementFailure, Refusal, Resources, SchedulingRequest
from legionrm.scheduler.grow import Grower
from legionrm.scheduler.ports import PoolGate, SnapshotSource, Swappable
from legionrm.scheduler.requests import Entry, RequestBook
from legionrm.scheduler.sharegate import ShareGate
from legionrm.state import StoreFault

log = logging.getLogger(__name__)

def live_capacity(snap: CollectionSnapshot) -> Resources:
    """The available hosts' cpus, memory and gpus and the vaults' storage, summed."""
    hosts, vaults = snap.rows('$kind == "host"'), snap.rows('$kind == "vault"')
    return Resources(cpus=float(snap.numeric("cpus", hosts, 0.0).clip(0).sum()),
                     memory_gb=float(snap.numeric("memory_gb", hosts, 0.0).clip(0).sum()),
                     gpus=int(snap.numeric("gpus", hosts, 0.0).clip(0).sum()),
                     storage_gb=float(snap.numeric("storage_gb", vaults, 0.0).clip(0).sum()))


def peak(before: Resources | None, now: Resources) -> Resources:
    """The most of each kind seen (a host away for now may come back)."""
    if before is None:
        return now
    return Resources(cpus=max(before.cpus, now.cpus), memory_gb=max(before.memory_gb, now.memory_gb),
                     gpus=max(before.gpus, now.gpus), storage_gb=max(before.storage_gb, now.storage_gb))


def too_big(request: SchedulingRequest, pool_capacity: dict[str, float], most: Resources | None,
            by: str) -> PlacementFailure | None:
    """``request.too_big`` when the request asks for more cpus, memory or gpus
    than the cluster has ever held (``pool_capacity`` in pool units, memory in
    MB, or ``most`` if larger), else None."""
    total = dict(pool_capacity)
    if most is not None:
        total = {"cpu": max(total.get("cpu", 0.0), most.cpus), "gpu": max(total.get("gpu", 0.0), most.gpus),
                 "memory": max(total.get("memory", 0.0), most.memory_gb * 1024.0)}
    need = {"cpu": sum(o.count * o.cpus for o in request.objects),
            "memory": sum(o.count * o.memory_gb for o in request.objects) * 1024.0,
            "gpu": float(sum(o.count * o.gpus for o in request.objects))}
    over = [k for k, v in need.items() if v > total.get(k, 0.0) + 1e-9]
    if not over:
        return None
    unit = {"cpu": "cpus", "memory": "MB of memory", "gpu": "gpus"}
    return PlacementFailure(key="*", resource=by, code=codes.REQUEST_TOO_BIG, stage="plan",
                            reason="asks for more than the whole cluster holds: " + ", ".join(
                                f"{need[k]:g} {unit[k]} > {total.get(k, 0.0):g}" for k in over))



class Accounts:
    """The accounts of the Scheduler ``name``: ``pools`` (admission),
    ``shares`` (the DUCC classes; None: none configured) and the cluster's
    capacity read from ``collection``.  ``on_finish`` is told of each finished
    request after its accounts are given back (its inert objects' states go);
    ``owner_gate`` refuses a request whose user no OS account here maps to."""

    def __init__(self, pools: PoolGate, shares: ShareGate | None, collection: Swappable[SnapshotSource], *,
                 name: str = "scheduler", on_finish: Callable[[Entry], object] | None = None,
                 owner_gate: Callable[[SchedulingRequest], Refusal | None] | None = None,
                 grower: Grower | None = None) -> None:
        self.pools = pools
        self.shares = shares
        self.name = name
        self._collection = collection
        self._on_finish = on_finish
        self._owner_gate = owner_gate  # may its user's work run here, as an OS account (hostobj.runner.owner)?
        self._capacity_seen: Resources | None = None
        self._capacity_peak: Resources | None = None
        self._grower = grower  # asks a Ray autoscaler for the nodes waiting work needs (scheduler.grow)

    @property
    def grows(self) -> bool:
        """Can the cluster grow (an autoscaler)?  Then work that no node can take waits for one."""
        return self._grower is not None

    def grow(self, book: RequestBook) -> None:
        """Ask the autoscaler for the nodes the book's waiting work needs (nothing without one)."""
        if self._grower is not None:
            self._grower(book.entries())

    def shape(self, request: SchedulingRequest) -> tuple[SchedulingRequest, list[PlacementFailure]]:
        """The request as its DUCC classes shape it (unchanged without classes)."""
        return self.shares.shape(request) if self.shares is not None else (request, [])

    def refuse_owner(self, request: SchedulingRequest) -> Refusal | None:
        """Why the request's user has no OS account its work could run as here (None: it has one, or
        nothing here runs work): such a request is refused at submit, never queued."""
        return self._owner_gate(request) if self._owner_gate is not None else None

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

    def book_back_many(self, entries: list[Entry]) -> None:
        """:meth:`book_back` for many finished requests that no attempt holds: one look at the pools'
        charges (one call to a remote pool owner, not one per request), and only those charged there.
        A request never tried (no attempt, no instance, nothing held: an attempt counts itself before
        it charges a pool) holds no charge, so a group of only such requests needs no look."""
        held = getattr(self.pools, "held", None)  # a gate without the look (no pools): release each, locally
        tried = any(e.attempts or e.instances or e.held is not None for e in entries)
        charged = held() if held is not None and tried else None
        for entry in entries:
            if held is None or (charged is not None and entry.id in charged):
                self.pools.release(entry.id)
            if self.shares is not None:
                self.shares.release(entry.id)
            if self._on_finish is not None:
                self._on_finish(entry)

    def too_big(self, request: SchedulingRequest) -> PlacementFailure | None:
        """A request for more than the whole cluster could ever hold fails at once (but when it can grow)."""
        total = getattr(self.pools, "capacity", None)  # Peloton units: memory in MB
        if not isinstance(total, dict) or self.grows:  # an autoscaler may grow the cluster to it
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

    # --- after a restart ------------------------------------------------------------------

    def recover(self, book: RequestBook) -> None:
        """Put a reloaded ``book`` in order: a request caught admitted or
        placing goes back to the queue (what it started, if anything, is an
        orphan the sweep stops), and a running (or reserved) request's pool
        allocation and allotment are charged again (the pools may have
        restarted too).  Idempotent."""
        for entry in book.entries():
            if entry.state in ("admitted", "placing"):
                self.release(entry.id)
                try:
                    book.move(entry, "pending", "the scheduler restarted while placing it")
                except StoreFault as fault:  # a full disk at restart: the Scheduler's tick settles it later
                    log.warning("request %s stays %s for now: %s", entry.id, entry.state, fault)
            elif entry.state in ("running", "reserved"):  # a reservation ahead holds its pool allocation too
                shaped, _ = self.shape(entry.request)
                self.release(entry.id)
                refusal = self.admit(shaped)
                if refusal is not None:
                    log.warning("request %s runs over its pool after a restart: %s", entry.id, refusal.reason)

    def resync(self, book: RequestBook) -> None:
        """A pool owner that restarted has forgotten its charges: charge every
        running (or reserved) request of ``book`` it does not hold again.
        Nothing when the pool gate cannot say what it holds."""
        held = getattr(self.pools, "held", None)
        if not callable(held):
            return
        charged = set(held())
        for entry in book.entries():
            if entry.state in ("running", "reserved") and entry.id not in charged:
                self.admit(self.shape(entry.request)[0])
