"""The Scheduler's hooks into this package, each a call from one place of
:class:`~legionrm.scheduler.scheduler.Scheduler` (``core``), so the core stays
small: how a run ends (:func:`end_run`), a dependency that can never be met
(:func:`cancel_never`).  Pure: no Ray."""

from __future__ import annotations

from typing import Any

from legionrm.models import PlacementFailure, Refusal, SchedulerResponse
from legionrm.scheduler.depend.requeue import requeue, run_end, wants_requeue
from legionrm.scheduler.requests import Entry


def end_run(core: Any, entry: Entry, instance_id: str, reason: str) -> None:
    """``entry``'s instance ``instance_id`` ended: a run lost with its host goes
    back to the queue (``requeue = true``); else, once its last instance ended,
    the request ends (``node_lost``, ``failed`` or ``completed``) and books back."""
    if wants_requeue(entry, instance_id):
        for ref in requeue(core.book, entry, reason):
            core.enactment.stop(ref, "requeued")
        core.accounts.release(entry.id)  # charged again at its next admission
    elif entry.state == "running" and not entry.holds_objects():
        if core.book.finish(entry, *run_end(entry, reason)):
            core.accounts.book_back(entry)


def end_runs(core: Any, entry: Entry, instance_ids: list[str], reason: str) -> list[str]:
    """``entry``'s instances ``instance_ids`` ended by themselves (not lost): as
    :meth:`~legionrm.scheduler.scheduler.Scheduler.instance_ended` for each, without
    a re-plan, in one write of the book; returns those that were running."""
    ended = core.book.end_instances(entry, instance_ids, "ended", reason)
    if ended:
        end_run(core, entry, ended[-1], reason)  # (none was lost: only the last can end the request)
    return ended


def cancel_never(core: Any, entry: Entry, why: Refusal) -> SchedulerResponse:
    """A dependency of ``entry`` can never be met: it ends cancelled, with ``why`` as its reason."""
    if core.book.finish(entry, "cancelled", f"{why.code}: {why.reason}"[:500]):
        core.accounts.book_back(entry)
    failure = PlacementFailure(key="*", resource=why.by, code=why.code, reason=why.reason, stage="plan", lasting=True)
    return SchedulerResponse(request_id=entry.id, ok=False, failures=(failure,), message=f"{why.code}: {why.reason}",
                             state=entry.state)
