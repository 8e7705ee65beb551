"""``legionrm audit --repair``: fix what the auditor found, where it can, and say what was done.

:func:`repair` takes the findings of :func:`~legionrm.scheduler.audit.audit`
and returns them, each with :attr:`~legionrm.models.AuditFinding.repaired`
saying what was done (empty: nothing could be done here; an operator must
look).  Each repair goes through the Scheduler's own parts, as the running
system would have done it, and checks again first that the finding still
holds (the system moved on meanwhile: nothing is done twice):

* ``request.running_ended``: the request ends (``completed``, or ``failed``
  when its work failed) and its accounts are booked back;
* ``request.unplaced``: its allocation is given back and it waits in the queue again;
* ``book.durable``: the live book's copy is written to the store; a request
  only the store holds is taken back into the live book (put back in the
  queue when it was being placed, charged to its pool again when it runs);
* ``pool.allocation`` / ``allotment.held``: an allocation nobody admitted
  is released; an admitted request the pools forgot is charged again;
* ``instance.orphan``: the instance is stopped on its host;
* ``instance.ghost``: the instance is ended (``lost``);
* ``reservation.unheld``: the reservation is cancelled at its resource
  (given ``cancel_reservation``).

``host.over_capacity``, ``class.count`` and ``resource.unreachable`` are
reported, never repaired here.  After any repair the queue is re-planned.
"""

from __future__ import annotations

from typing import Callable, Iterable

from legionrm import codes
from legionrm.models import AuditFinding, ResourceAudit
from legionrm.scheduler.depend.requeue import run_end
from legionrm.scheduler.scheduler import Scheduler

WHY = "audit --repair"
"""The reason every repaired transition carries."""

CancelReservation = Callable[[str, str], bool]
"""Cancel a reservation: (resource name, token id) -> whether it was cancelled."""


def repair(scheduler: Scheduler, findings: Iterable[AuditFinding], views: Iterable[ResourceAudit] = (),
           cancel_reservation: CancelReservation | None = None) -> list[AuditFinding]:
    """``findings``, each with what was done about it (see the module)."""
    views = list(views)
    out = []
    for f in findings:
        try:
            done = _repair_one(scheduler, f, views, cancel_reservation)
        except Exception as exc:  # noqa: BLE001 -- one repair that fails leaves the others to be tried
            done = ""
            f = f.model_copy(update={"detail": f"{f.detail} (the repair failed: {type(exc).__name__}: {exc})"[:500]})
        out.append(f.model_copy(update={"repaired": done}))
    if any(f.repaired for f in out):
        scheduler.replan()
    return out


def _repair_one(s: Scheduler, f: AuditFinding, views: list[ResourceAudit],
                cancel_reservation: CancelReservation | None) -> str:
    entry = s.book.get(f.subject)
    if f.code == codes.REQUEST_RUNNING_ENDED:
        if entry is None or entry.state != "running" or entry.holds_objects():
            return "nothing: it had changed already"
        state, why = run_end(entry, f"{WHY}: its instances had all ended")  # node_lost, failed or completed
        if s.book.finish(entry, state, why):
            s.accounts.book_back(entry)
        return f"ended it ({state}) and booked back its accounts"
    if f.code == codes.REQUEST_UNPLACED:
        with s.queue.claim(f.subject) as claimed:
            if entry is None or entry.state not in ("admitted", "placing") or not claimed:
                return "nothing: it had changed already"
            s.book.move(entry, "pending", f"{WHY}: nothing was placing it")  # written first
            s.accounts.release(entry.id)
        return "gave back its allocation and put it back in the queue"
    if f.code == codes.BOOK_DURABLE:
        return _durable(s, f.subject)
    if f.code in (codes.POOL_ALLOCATION, codes.ALLOTMENT_HELD):
        return _allocation(s, f.subject)
    if f.code == codes.INSTANCE_ORPHAN:
        ref = next((r for v in views for r in v.instances if r.instance_id == f.subject), None)
        if ref is None or s.book.running_ref(f.subject) is not None:
            return ""
        s.enactment.stop(ref, f"{WHY}: it ran for no request")
        return f"stopped it on {ref.host}"
    if f.code == codes.INSTANCE_GHOST:
        ref = s.book.running_ref(f.subject)
        if ref is not None and s.instance_ended(f.subject, f"{WHY}: its host does not run it", "lost", replan=False):
            s.enactment.stop(ref, f"{WHY}: its host does not run it")  # its class counts it no more
            return "ended it (lost) in the book"
        return "nothing: it had ended already"
    if f.code == codes.RESERVATION_UNHELD and cancel_reservation is not None:
        where = next((v.name for v in views for r in v.reservations if r.token_id == f.subject), None)
        if where is not None and cancel_reservation(where, f.subject):
            return f"cancelled it on {where}"
    return ""


def _durable(s: Scheduler, rid: str) -> str:
    """Make the two books agree on ``rid``: the live book's copy wins; a request only the store holds comes back."""
    diff = {r: (e, item) for r, e, item in s.book.durable_diff()}
    if rid not in diff:
        return "nothing: the books agree now"
    entry, item = diff[rid]
    if entry is not None:
        s.book.save(entry)
        return f"wrote the live book's copy ({entry.state}) to the durable book"
    assert item is not None
    entry = s.book.adopt(item)
    if entry.state in ("admitted", "placing"):
        s.accounts.release(entry.id)
        s.book.move(entry, "pending", f"{WHY}: taken back from the durable book")
    elif entry.state in ("running", "reserved") and entry.id not in _held(s):
        s.accounts.admit(s.accounts.shape(entry.request)[0])
    return f"took it back into the live book ({entry.state})"


def _allocation(s: Scheduler, rid: str) -> str:
    """Release what a request not admitted holds, or charge again an admitted request the pools forgot."""
    if rid.startswith(("/", "elastic:")):
        return ""  # a pool's totals are its owner's to restart; an elastic job's, the cycle's
    entry = s.book.get(rid)
    if entry is None or entry.state not in ("admitted", "placing", "reserved", "running"):
        s.accounts.release(rid)  # its pool allocation and its allotment (idempotent)
        return "released its pool allocation and allotment"
    if rid not in _held(s) and s.accounts.admit(s.accounts.shape(entry.request)[0]) is None:
        return "charged it to its pool again"
    return ""


def _held(s: Scheduler) -> set[str]:
    held = getattr(s.accounts.pools, "held", None)
    return set(held()) if callable(held) else set()
