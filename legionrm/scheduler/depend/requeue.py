"""Work on a lost node: requeued, or ended ``node_lost``.

An instance whose host was lost (the watch saw the host gone: the instance
ended ``lost``; or its run ended ``node_lost``, its host stopping under it):

* a request with ``requeue = true`` goes back to the queue at once: its
  other running instances are stopped, every instance of the run is marked
  ``requeued`` (kept, with its end, in ``show`` and in the accounting
  records, but it no longer decides how the request ends), the transition
  ``running -> pending`` carries ``node.lost: ...; requeued`` in its
  history, and its pool charge is given back until its next attempt;
* any other request ends ``node_lost`` (reason ``node.lost: ...``) once its
  last instance ended, as a failed one ends ``failed``.

Pure: no Ray.
"""

from __future__ import annotations

from legionrm import codes
from legionrm.models import InstanceInfo, InstanceRef, RequestState
from legionrm.scheduler.requests import Entry, RequestBook


def lost(info: InstanceInfo) -> bool:
    """Did this instance end with its host?"""
    return info.state == "lost" or (info.result is not None and info.result.state == "node_lost")


def run_end(entry: Entry, reason: str) -> tuple[RequestState, str]:
    """How ``entry`` ends now that its last instance ended: ``node_lost`` when an
    instance of its run was lost with its host, else ``failed`` / ``completed``; and the reason."""
    if any(lost(i) and not i.requeued for i in entry.instances.values()):
        return "node_lost", f"{codes.NODE_LOST}: {reason}"[:500]
    return ("failed" if entry.failed_work() else "completed"), reason


def wants_requeue(entry: Entry, instance_id: str) -> bool:
    """Does ``entry`` go back to the queue now that its instance ``instance_id`` ended?"""
    info = entry.instances.get(instance_id)
    return entry.request.requeue and entry.state == "running" and info is not None and lost(info)


def requeue(book: RequestBook, entry: Entry, reason: str) -> list[InstanceRef]:
    """Move running ``entry`` back to ``pending`` in one write (see the module);
    returns its instances still running, to stop now."""
    now = book.clock()
    why = f"{codes.NODE_LOST}: {reason}; requeued"[:500]
    instances: dict[str, InstanceInfo] = {}
    stopping: list[str] = []
    for iid, info in entry.instances.items():
        if info.state == "running":
            info = info.model_copy(update={"state": "stopped", "ended_at": now, "reason": why})
            stopping.append(iid)
        instances[iid] = info if info.requeued else info.model_copy(update={"requeued": True})
    book.move(entry, "pending", why, instances=instances, attempts=0, earliest_start=None)
    for iid in stopping:
        book.tell(entry, "ended", why, iid)
    return [entry.refs[i] for i in stopping if i in entry.refs]
