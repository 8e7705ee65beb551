"""What the cluster holds, for the Scheduler's queue: the live capacity the
pools follow, the most it has ever held, and the refusal of a request no
cluster of that size could ever run.  Pure functions."""

from __future__ import annotations

from legionrm import codes
from legionrm.collection.collection import CollectionSnapshot
from legionrm.models import PlacementFailure, Resources, SchedulingRequest


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
