"""The auditor's look at what the Scheduler books against: hosts, vaults,
class objects, pools and allotments.

:func:`audit` compares a Scheduler's requests with the hosts, vaults, class
objects, pools and allotments it books against, and with its own books
(:mod:`~legionrm.scheduler.audit.books`), and returns every disagreement as
a :class:`Finding` (empty: the books balance).  It reads; it changes
nothing (:mod:`~legionrm.scheduler.audit.repair` does).  With several
schedulers, each audits the instances and reservations it issued
(:func:`~legionrm.scheduler.several.issued_by`) and the pool allocations it
holds.  Checked here:

* ``host.over_capacity``: no host's calendar holds more than its capacity now;
* ``instance.orphan``: every instance a host runs belongs to a running
  request (nothing runs that nobody asked for, nothing leaks after an end);
* ``instance.ghost``: every instance the Scheduler counts as running runs on
  its host;
* ``class.count``: each class object counts exactly the Scheduler's running
  instances of that class;
* ``reservation.unheld``: a reservation still open on a resource belongs to
  a running instance or to a reserved request (held ahead of its start), or
  expires within the token timeout;
* ``resource.unreachable``: a carrier that could not be asked (Ray only);
* ``pool.allocation``: the pools hold allocations exactly for the requests
  admitted and not finished; ``allotment.held`` likewise for DUCC allotments;
  with nothing admitted, every pool's allocation is zero; with no elastic
  allocation, the root pool's cpus are those its admitted requests ask for;
  given the elastic jobs, the pools hold an ``elastic:<job>`` allocation
  exactly for each.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from legionrm import codes
from legionrm.models import AuditFinding, ResourceAudit
from legionrm.scheduler.audit.books import book_findings
from legionrm.scheduler.scheduler import Scheduler

EPS = 1e-6
Finding = AuditFinding  # the auditor's one result type (it crosses the actor boundary)


def views_of(resources: Iterable[Any]) -> list[ResourceAudit]:
    """The audit views of in-process host and vault objects."""
    return [r.audit_view() for r in resources]


def audit(scheduler: Scheduler, resources: Iterable[ResourceAudit], classes: Mapping[str, Iterable[str]] | None = None,
          *, grace_s: float | None = None, also_running: Iterable[str] = (),
          elastic: Iterable[str] | None = None) -> list[AuditFinding]:
    """Every disagreement between ``scheduler``'s books and what the
    resources (their :class:`ResourceAudit` views) and class objects
    (class name -> the instance ids it counts) hold.  ``grace_s`` (default:
    the scheduler's token timeout) is how long an unheld reservation may
    still be open (it expires on its own).  ``also_running``: instances other
    owners run (the elastic cycle's), not orphans; ``elastic``: the elastic
    jobs the pools should charge (None: elastic allocations are not checked)."""
    grace = scheduler.enactment.token_timeout_s if grace_s is None else grace_s
    out: list[AuditFinding] = []
    running = {r.instance_id: r for r in scheduler.book.running_instances()}
    known = set(running) | set(also_running)
    on_hosts: dict[str, str] = {}
    ahead = {t.token_id for e in scheduler.book.entries() if e.state == "reserved" and e.held is not None
             for t in (*e.held.host_tokens.values(), *e.held.vault_tokens.values())}
    for v in resources:
        if any(u > c + EPS for u, c in zip(v.used, v.capacity)):
            out.append(AuditFinding(code=codes.HOST_OVER_CAPACITY, subject=v.name,
                                    detail=f"uses {list(v.used)} of {list(v.capacity)}"))
        for ref in v.instances:
            on_hosts[ref.instance_id] = v.name
            if ref.instance_id not in known and scheduler.enactment.issued(ref.scheduler):
                out.append(AuditFinding(code=codes.INSTANCE_ORPHAN, subject=ref.instance_id,
                                        detail=f"runs on {v.name} for no running request"))
        for r in v.reservations:
            if not scheduler.enactment.issued(r.issuer):  # another scheduler's: it audits its own
                continue
            if r.holders:
                # a host's holders are instance ids (a vault's are its own use ids)
                if v.kind == "host" and not set(r.holders) & known:
                    out.append(AuditFinding(code=codes.RESERVATION_UNHELD, subject=r.token_id,
                                            detail=f"held on {v.name} by {list(r.holders)}, none of them running"))
            elif r.expires_at > v.now + grace + EPS and r.token_id not in ahead:
                out.append(AuditFinding(code=codes.RESERVATION_UNHELD, subject=r.token_id,
                                        detail=f"open on {v.name} until {r.expires_at:g}, used by nobody"))
    for iid, ref in running.items():
        if on_hosts.get(iid) != ref.host:
            out.append(AuditFinding(code=codes.INSTANCE_GHOST, subject=iid,
                                    detail=f"counted as running on {ref.host}, which does not run it"))
    for name, ids in (classes or {}).items():
        have = set(ids)
        want = {i for i, r in running.items() if r.class_name == name} | (have & set(also_running))
        if have != want:
            out.append(AuditFinding(code=codes.CLASS_COUNT, subject=name,
                                    detail=f"counts {sorted(have)}, the scheduler runs {sorted(want)}"))
    out.extend(_accounts(scheduler, None if elastic is None else set(elastic)))
    return book_findings(scheduler) + out


def _accounts(scheduler: Scheduler, elastic: set[str] | None = None) -> list[AuditFinding]:
    """Pool allocations and allotments held exactly by the admitted requests."""
    out: list[AuditFinding] = []
    active = {e.id for e in scheduler.book.entries() if e.state in ("admitted", "placing", "reserved", "running")}
    held = getattr(scheduler.accounts.pools, "held", None)
    if callable(held):
        mine = set(held())
        charged = {rid for rid in mine if not rid.startswith("elastic:")}
        if elastic is not None:
            jobs = {rid.removeprefix("elastic:") for rid in mine if rid.startswith("elastic:")}
            for jid in sorted(jobs - elastic):
                out.append(AuditFinding(code=codes.POOL_ALLOCATION, subject=f"elastic:{jid}",
                                        detail="holds a pool allocation but is no elastic job"))
            for jid in sorted(elastic - jobs):
                out.append(AuditFinding(code=codes.POOL_ALLOCATION, subject=f"elastic:{jid}",
                                        detail="is an elastic job but holds no pool allocation"))
        for rid in sorted(charged - active):
            out.append(AuditFinding(code=codes.POOL_ALLOCATION, subject=rid, detail="holds a pool allocation but is not admitted"))
        for rid in sorted(active - charged):
            out.append(AuditFinding(code=codes.POOL_ALLOCATION, subject=rid, detail="is admitted but holds no pool allocation"))
        report = scheduler.accounts.pools.report()
        every = set(getattr(scheduler.accounts.pools, "held_all", held)())  # what every scheduler holds
        if not every:
            for path, entry in report.items():
                alloc = entry.get("allocation", {})
                if any(abs(float(v)) > EPS for v in alloc.values()):
                    out.append(AuditFinding(code=codes.POOL_ALLOCATION, subject=path,
                                            detail=f"allocation {alloc} with nothing admitted"))
        elif "/" in report and every == charged:  # no elastic allocation, no other scheduler's: the cpus are the book's
            booked = float(report["/"].get("allocation", {}).get("cpu", 0.0))
            asked = sum(e.cpus() for rid in charged & active if (e := scheduler.book.get(rid)) is not None)
            if abs(booked - asked) > EPS:
                out.append(AuditFinding(code=codes.POOL_ALLOCATION, subject="/",
                                        detail=f"books {booked:g} cpus; the requests it admitted ask for {asked:g}"))
    if scheduler.accounts.shares is not None:
        for rid in sorted(set(scheduler.accounts.shares.charged()) - active):
            out.append(AuditFinding(code=codes.ALLOTMENT_HELD, subject=rid, detail="holds a DUCC allotment but is not admitted"))
    return out
