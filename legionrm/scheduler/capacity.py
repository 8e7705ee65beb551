"""What the cluster holds, for the Scheduler's queue: the live capacity the
pools follow, the most it has ever held, and the refusal of a request no
cluster of that size could ever run.  Pure functions, and
:class:`CapacityFollower`, which remembers what it saw."""

from __future__ import annotations

from typing import Any, Callable

from legionrm.collection.collection import CollectionSnapshot
from legionrm.models import PlacementFailure, Resources, SchedulingRequest

REQUEST_TOO_BIG = "request.too_big"


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
    return PlacementFailure(key="*", resource=by, code=REQUEST_TOO_BIG, stage="plan",
                            reason="asks for more than the whole cluster holds: " + ", ".join(
                                f"{need[k]:g} {unit[k]} > {total.get(k, 0.0):g}" for k in over))


class CapacityFollower:
    """Keeps ``pools`` following the cluster, and refuses what the most it ever held could not run."""

    def __init__(self) -> None:
        self.seen: Resources | None = None
        self.peak: Resources | None = None

    def follow(self, pools: Any, snapshot: Callable[[], CollectionSnapshot]) -> bool:
        """Pools follow the cluster: their capacity becomes what the
        Collection's available hosts and vaults hold now (hosts that joined,
        left, died or were varied count or stop counting).  Returns True when
        it changed (then the queue is worth another look)."""
        set_capacity = getattr(pools, "set_capacity", None)
        if not callable(set_capacity):
            return False
        cap = live_capacity(snapshot())
        if cap == self.seen:
            return False
        self.seen, self.peak = cap, peak(self.peak, cap)
        set_capacity(cap)
        return True

    def too_big(self, request: SchedulingRequest, pools: Any, by: str) -> PlacementFailure | None:
        """A request for more than the whole cluster could ever hold fails at once."""
        total = getattr(pools, "capacity", None)  # Peloton units: memory in MB
        return too_big(request, total, self.peak, by) if isinstance(total, dict) else None
