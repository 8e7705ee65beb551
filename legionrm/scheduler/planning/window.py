"""The planner's host table over a future window.

A request that starts now asks "what is free now" (and the calendar filter
keeps it clear of reservations that start before it would end).  A request
with a future start asks what is free over its whole window
``[start, start + walltime)``: each host's free capacity is its total minus
the peak of the calendar it publishes (:mod:`legionrm.heartbeat`) in that
window, so work that ends before the window does not count against it and a
reservation inside the window does.  A host that publishes no calendar holds
what it holds now for ever.  The hosts' own calendars stay the truth: the
Enactor's reservations are checked there again.  Pure; no Ray.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from legionrm.heartbeat import CALENDAR, CALENDAR_STEPS, decode
from legionrm.collection.view import CollectionSnapshot
from legionrm.models import SchedulingRequest
from legionrm.scheduler.planning.pipeline import INF, HostTable


def ahead_of(request: SchedulingRequest, now: float) -> float | None:
    """The request's start when it is after ``now`` (an advance reservation), else None."""
    return request.start if request.start is not None and request.start > now else None


def window_table(base: HostTable, snap: CollectionSnapshot, start: float, end: float) -> HostTable:
    """``base`` as it will be over ``[start, end)`` (see the module): free
    capacity is the total minus the window's peak use; ``instances`` is 1
    where anything is booked in the window (an exclusive request needs 0);
    ``next_event`` is inf, as the window already counts every booking.  Only
    the hosts that publish a calendar are read one by one."""
    free = {"cpus": base.free_cpus.copy(), "memory_gb": base.free_memory_gb.copy(), "gpus": base.free_gpus.copy()}
    total = {"cpus": base.cpus, "memory_gb": base.memory_gb, "gpus": base.gpus}
    instances = base.instances.copy()
    kind_free = base.kind_free.copy() if base.kind_free is not None else None  # custom kinds: as the built-in ones
    has = snap.numeric(CALENDAR_STEPS, base.row, 0.0) > 0
    for i in np.flatnonzero(has).tolist():
        steps = decode(snap.record(str(base.row_names[base.row[i]])).attributes.get(CALENDAR))
        if steps is None:
            continue
        peak = steps.peak(start, end)
        for dim, col in free.items():
            col[i] = max(float(total[dim][i]) - peak.get(dim, 0.0), 0.0)
        if kind_free is not None and base.kind_total is not None:
            for k, kind in enumerate(base.kinds):
                kind_free[i, k] = max(float(base.kind_total[i, k]) - peak.get(kind, 0.0), 0.0)
        instances[i] = float(any(v > 1e-9 for v in peak.values()))
    return dataclasses.replace(base, free_cpus=free["cpus"], free_memory_gb=free["memory_gb"], free_gpus=free["gpus"],
                               instances=instances, next_event=np.full(len(base), INF), kind_free=kind_free)
