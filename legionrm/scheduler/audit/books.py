"""The auditor's look at the Scheduler's own books: each request's state
against its instances, and the durable book against the live one.

* ``request.running_ended``: no request is ``running`` whose instances have
  all ended (nothing holds its pool allocation any more);
* ``request.unplaced``: no request is ``admitted`` or ``placing`` while no
  attempt is placing it (it would wait for nothing, holding its allocation);
* ``book.durable``: the store's live table holds exactly the live book's
  requests, each in the same state with its instances in the same states
  (a restart would bring back what the Scheduler now runs).

Read-only, like the rest of the auditor.
"""

from __future__ import annotations

from legionrm import codes
from legionrm.models import AuditFinding
from legionrm.scheduler.scheduler import Scheduler


def book_findings(scheduler: Scheduler) -> list[AuditFinding]:
    """Every disagreement within ``scheduler``'s books (see the module)."""
    out: list[AuditFinding] = []
    for e in scheduler.book.entries():
        if e.state == "running" and not e.holds_objects():
            ended = ", ".join(f"{i} {info.state}" for i, info in list(e.instances.items())[:5]) or "none started"
            out.append(AuditFinding(code=codes.REQUEST_RUNNING_ENDED, subject=e.id,
                                    detail=f"running, but its instances have all ended ({ended})"))
        elif e.state in ("admitted", "placing") and not scheduler.queue.attempting(e.id):
            out.append(AuditFinding(code=codes.REQUEST_UNPLACED, subject=e.id,
                                    detail=f"{e.state} ({e.reason}), but no attempt is placing it"))
    for rid, entry, stored in scheduler.book.durable_diff():
        if stored is None:
            detail = f"{entry.state if entry else '?'} in the live book, but not in the durable one"
        elif entry is None:
            detail = f"{stored.state} in the durable book, but not in the live one"
        else:
            detail = f"{entry.state} in the live book, {stored.state} in the durable one (or its instances differ)"
        out.append(AuditFinding(code=codes.BOOK_DURABLE, subject=rid, detail=detail))
    return out
