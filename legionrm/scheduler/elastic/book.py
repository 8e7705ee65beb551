"""The elastic cycle's book, written ahead and taken back after a restart:
:class:`ElasticBook`.

What a restarted Scheduler must not lose of its elastic work is, per job:
the request and its fair-share class, its age, its pool charge, each running
process (share id, instance, investment) and each stop owed.  Write first,
then act: the cycle writes what a job is to become (:meth:`ElasticBook.row`
as it is now, changed by :func:`drop` or :func:`owe`) with
:meth:`ElasticBook.write` before it changes its ledger, its core or the
pools, and changes nothing when the write raises
:class:`~legionrm.state.StoreFault` (a stop is written as owed before the
host is asked; a submission, completion, update or pool charge before it
is made; new processes as soon as their enactment reports them, stopped
again when that write fails; an enactment cut short by a crash leaves
instances nobody knows, which the Scheduler's orphan sweep stops).

After a restart :meth:`ElasticBook.restore` puts the book back into a fresh
cycle and core:

* every active job is submitted to the core again (with its old age) and its
  pool charge is applied again (release, then admit at the stored size; the
  pools may have kept it or restarted); ``elastic:`` allocations of jobs the
  book does not know are released;
* every stop owed is owed again (the core has no share for it);
* every stored process waits to be *adopted* (:meth:`ElasticBook.adopt`) once
  the cycle knows its host: one that still runs on a schedulable host with
  room in the core goes back on its machine under its old share id; one that
  ended is forgotten; one whose job completed, whose host is gone or has no
  room is stopped.  Until then it is counted as the cycle's (never an orphan).

Pure Python: the cycle is passed in (its ``core``, ``charges`` and
:class:`Ledger`), the store and the instance watch are collaborators.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from legionrm.models import ElasticJobRequest, InstanceRef
from legionrm.scheduler.fairshare import DuccCore, Numbering, Share
from legionrm.scheduler.ports import InstanceWatch
from legionrm.state import (
    ElasticStore,
    StoredElasticJob,
    StoredShare,
    StoredStop,
    StoreFault,
)

log = logging.getLogger(__name__)

UNBOUNDED_WORK = 2**31 - 1
"""Work items the core is told for a job with no bound (``work_items=None``)."""


@dataclass
class JobEntry:
    """An admitted elastic job: its request (as last updated) and its fair-share class."""

    request: ElasticJobRequest
    ducc_class: str


@dataclass
class OwedStop:
    """A stop not yet done: retried every cycle until it works or the host is gone."""

    instance: InstanceRef
    job: str
    share: int | None  # confirm this share to the core once stopped (None: already gone there)
    reason: str


@dataclass
class Ledger:
    """The cycle's tables of its work: the admitted jobs, the processes
    running (share id -> (job, instance), and instance id -> share id), and
    the stops owed (instance id -> stop to retry).  The cycle keeps them; its
    book writes them ahead and puts them back after a restart."""

    jobs: dict[str, JobEntry] = field(default_factory=dict)
    inst: dict[int, tuple[str, InstanceRef]] = field(default_factory=dict)
    share_of: dict[str, int] = field(default_factory=dict)
    owed: dict[str, OwedStop] = field(default_factory=dict)

    def track(self, job: str, sid: int, inst: InstanceRef) -> None:
        """``inst`` runs as share ``sid`` of ``job``."""
        self.inst[sid] = (job, inst)
        self.share_of[inst.instance_id] = sid

    def forget(self, sid: int) -> tuple[str, InstanceRef]:
        """Share ``sid`` runs no more; returns its (job, instance)."""
        job, inst = self.inst.pop(sid)
        self.share_of.pop(inst.instance_id, None)
        return job, inst

    def share(self, core: DuccCore, sid: int) -> Share | None:
        """The core's share ``sid`` of a tracked process (None: not tracked, or the core dropped it)."""
        item = self.inst.get(sid)
        j = core.jobs.get(item[0]) if item else None
        return j.shares.get(sid) if j is not None else None


def core_fields(request: ElasticJobRequest) -> dict[str, Any]:
    """The DUCC core's job fields for an elastic request."""
    return {
        "work_items": UNBOUNDED_WORK if request.work_items is None else request.work_items,
        "threads": request.threads, "max_processes": request.max_processes,
        "time_per_item_ms": request.time_per_item_ms, "init_time_ms": request.init_time_ms,
    }


def drop(row: StoredElasticJob | None, instance_id: str) -> StoredElasticJob | None:
    """``row`` without the process or owed stop of ``instance_id`` (None: None)."""
    if row is None:
        return None
    return replace(row, shares=tuple(s for s in row.shares if s.instance.instance_id != instance_id),
                   owed=tuple(o for o in row.owed if o.instance.instance_id != instance_id))


def owe(row: StoredElasticJob | None, stop: OwedStop) -> StoredElasticJob | None:
    """``row`` with its process ``stop.instance`` turned into a stop owed (None: None)."""
    out = drop(row, stop.instance.instance_id)
    return None if out is None else replace(out, owed=out.owed + (StoredStop(stop.instance, stop.share, stop.reason),))


class ElasticBook:
    """The cycle's jobs, processes and owed stops in an :class:`ElasticStore`
    (see the module doc).  Not thread-safe: the cycle calls it under its lock."""

    def __init__(self, store: ElasticStore, watch: InstanceWatch | None = None) -> None:
        self.store = store
        self.watch = watch
        self.writes = 0
        self._known: dict[str, tuple[ElasticJobRequest, str, float]] = {}  # job -> (request, class, submitted)
        self._adopting: dict[int, tuple[str, StoredShare]] = {}  # share id -> (job, stored process)

    # --- writing ---------------------------------------------------------------------------

    def write(self, rows: Iterable[StoredElasticJob | None]) -> None:
        """Write ``rows`` (what jobs are to become; None: skipped) in one
        transaction, before the cycle makes the change; raises
        :class:`~legionrm.state.StoreFault` with nothing written."""
        some = [r for r in rows if r is not None]
        if not some:
            return
        self.store.write(some)
        self.writes += 1
        for r in some:
            if r.empty:
                self._known.pop(r.job_id, None)
            else:
                self._known[r.job_id] = (r.request, r.ducc_class, r.submitted)

    def save(self, cycle: Any, jobs: Iterable[str]) -> None:
        """Write the jobs ``jobs`` of ``cycle`` as they are now, in one transaction."""
        self.write(self.row(cycle, jid) for jid in dict.fromkeys(jobs))

    def row(self, cycle: Any, jid: str) -> StoredElasticJob | None:
        """Job ``jid`` of ``cycle`` as it is now (None: the book does not know it)."""
        ledger = cycle.ledger
        entry = ledger.jobs.get(jid)
        known = self._known.get(jid)
        if entry is not None:
            cj = cycle.core.jobs.get(jid)
            known = (entry.request, entry.ducc_class, cj.submit if cj is not None else (known[2] if known else 0.0))
        if known is None:
            return None
        request, ducc_class, submitted = known
        shares, owed = [], [StoredStop(o.instance, o.share, o.reason) for o in ledger.owed.values() if o.job == jid]
        for sid, (job, inst) in sorted(ledger.inst.items()):
            if job == jid:
                share = ledger.share(cycle.core, sid)
                if share is not None:
                    shares.append(StoredShare(sid, inst, float(share.investment_ms)))
                else:  # the core dropped it (job completed, host lost): the next cycle reaps it
                    owed.append(StoredStop(inst, None, "dropped by the core"))
        shares += [s for j, s in self._adopting.values() if j == jid]
        charges = cycle.charges
        return StoredElasticJob(
            request=request, ducc_class=ducc_class, submitted=submitted, active=entry is not None,
            charged=charges.charged(jid) if charges is not None else 0, shares=tuple(shares), owed=tuple(owed))

    # --- restoring --------------------------------------------------------------------------

    def restore(self, cycle: Any) -> list[StoredElasticJob]:
        """Put the stored book back into ``cycle`` (a fresh one: no jobs yet);
        returns the stored jobs.  Processes wait for :meth:`adopt`."""
        stored = self.store.load()
        core, ledger = cycle.core, cycle.ledger
        top = 0
        for job in stored:
            jid, req = job.job_id, job.request
            self._known[jid] = (req, job.ducc_class, job.submitted)
            if job.active:
                try:
                    core.submit(jid, req.user, req.memory_gb, cls=job.ducc_class, kind="job", submit=job.submitted,
                                **core_fields(req))
                    ledger.jobs[jid] = JobEntry(req, job.ducc_class)
                except Exception as exc:  # noqa: BLE001 - a class the new configuration lacks: its work stops
                    log.warning("elastic job %s cannot be taken back (%s): its processes stop", jid, exc)
            if jid in ledger.jobs and cycle.charges is not None:
                cycle.charges.restore(req, max(1, job.charged))
            for o in job.owed:
                ledger.owed[o.instance.instance_id] = OwedStop(o.instance, jid, None, o.reason)
            for s in job.shares:
                self._adopting[s.share] = (jid, s)
                top = max(top, s.share)
        core.resume(Numbering(next_share=top + 1))  # a share id is never handed out twice
        if cycle.charges is not None:
            cycle.charges.release_others(set(ledger.jobs))
        gone = [j.job_id for j in stored if j.job_id not in ledger.jobs and not j.shares and not j.owed]
        try:
            self.store.write([], gone)
        except StoreFault as fault:  # nothing to remember in them: the next restart deletes them
            log.warning("completed elastic jobs stay in the store: %s", fault)
        if stored:
            cycle.note(f"restart {len(ledger.jobs)} jobs, {len(self._adopting)} processes")
        return stored

    def adopting(self) -> set[str]:
        """The instance ids of stored processes not adopted yet."""
        return {s.instance.instance_id for _, s in self._adopting.values()}

    def adopt(self, cycle: Any) -> tuple[int, int]:
        """Take back every stored process whose host the core knows (see the
        module doc); returns (adopted, to stop).  Processes on hosts the core
        does not know yet keep waiting; those hosts' departure is noticed by the
        next cycle, which stops them."""
        core, ledger = cycle.core, cycle.ledger
        ready = {sid: item for sid, item in self._adopting.items() if item[1].instance.host in core.machines}
        if not ready:
            return 0, 0
        states = self.watch.check([s.instance for _, s in ready.values()]) if self.watch is not None else {}
        adopted = stopped = 0
        touched: set[str] = set()
        done: list[tuple[int, str, StoredShare, str]] = []  # what this adoption changed, undone if not written
        for sid, (jid, s) in sorted(ready.items()):
            del self._adopting[sid]
            touched.add(jid)
            state, why = states.get(s.instance.instance_id, ("running", ""))
            if state != "running":
                log.info("elastic process %s of %s ended while the scheduler was away (%s)", sid, jid, why)
                done.append((sid, jid, s, "ended"))
                continue
            host = s.instance.host
            if jid not in ledger.jobs or not core.restore_share(sid, jid, host, s.investment_ms):
                reason = "job completed" if jid not in ledger.jobs else f"not taken back on {host} after a restart"
                ledger.owed[s.instance.instance_id] = OwedStop(s.instance, jid, None, reason)
                done.append((sid, jid, s, "owed"))
                stopped += 1
                continue
            ledger.track(jid, sid, s.instance)
            done.append((sid, jid, s, "tracked"))
            adopted += 1
        try:
            self.save(cycle, touched)
        except StoreFault:  # not written, not taken: every process waits to be adopted again
            for sid, jid, s, how in done:
                if how == "tracked":
                    ledger.forget(sid)
                    core.confirm_exit(sid)
                elif how == "owed":
                    ledger.owed.pop(s.instance.instance_id, None)
                self._adopting[sid] = (jid, s)
            raise
        return adopted, stopped

    def forget_unplaced(self, cycle: Any, hosts_known: set[str]) -> list[tuple[str, InstanceRef]]:
        """Drop the stored processes on hosts not in ``hosts_known`` (gone for
        good), written first; returns them (job, instance) so the cycle can
        stop them.  :class:`~legionrm.state.StoreFault`: none is dropped."""
        gone = {sid: item for sid, item in self._adopting.items() if item[1].instance.host not in hosts_known}
        for sid in gone:
            del self._adopting[sid]
        try:
            self.save(cycle, {jid for jid, _ in gone.values()})
        except StoreFault:
            self._adopting.update(gone)
            raise
        return [(jid, s.instance) for jid, s in gone.values()]
