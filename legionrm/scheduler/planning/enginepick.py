"""The hosts the placement engine chooses, for the requests its bucket path takes.

The live planner and ``legionrm place`` are two ways into one engine: for an
object request the node-bucket path takes (exclusive, scatter / vscatter /
free: :func:`~legionrm.scheduler.placement.choose_path`), the planner's
master schedules put the instances where the engine puts them, over the
hosts the pipeline accepted (the query as the caller, the class host list,
implementations, capacity, calendar, avoid).  The pipeline's rankers then
order only the spares (later masters' fallbacks and the deltas).  Pure; no
Ray.
"""

from __future__ import annotations

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.models import ObjectRequest
from legionrm.scheduler.planning.engine_feed import EngineFeed
from legionrm.scheduler.planning.pipeline import HostTable
from legionrm.scheduler.planning.whatof import Ordered


def engine_applies(req: ObjectRequest) -> bool:
    """Whether the engine's bucket path can take ``req``: exclusive, not pack
    (an ObjectRequest never names a host) and without a user's rank (the
    buckets take hosts in their own order, which knows no rank).  The engine
    confirms per request."""
    return bool(req.exclusive) and req.placement != "pack" and req.rank is None


def engine_picks(
    feed: EngineFeed, req: ObjectRequest, hosts: Ordered, avoid: np.ndarray | None, snap: CollectionSnapshot,
    base: HostTable,
) -> list[int] | None:
    """Positions in ``hosts`` (one per instance) where the engine's bucket path
    places ``req`` over those of ``hosts`` that can take an instance now (so
    not a host an earlier object request of the same schedule uses) and whose
    rows ``avoid`` (a mask over snapshot rows; None: none) does not mark;
    None when the engine does not take the request, cannot run it now on
    them, or chose another path (the planner then places it its own way)."""
    ok = hosts.slots(req) > 0
    if avoid is not None:
        ok &= ~avoid[hosts.row]
    rows = hosts.row[ok]
    if req.count == 0 or len(rows) < req.count:
        return None
    ans = feed.place(req, snap, rows, base)
    if not ans.runs or ans.path != "buckets":
        return None
    pos = np.full(len(snap.table.names), -1, np.int64)
    pos[hosts.row] = np.arange(len(hosts))
    picked = pos[ans.rows]
    return picked.tolist() if len(picked) == req.count and (picked >= 0).all() else None
