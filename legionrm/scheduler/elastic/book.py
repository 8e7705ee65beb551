"""The elastic cycle's book, written ahead and taken back after a restart:
:class:`ElasticBook`.

What a restarted Scheduler must not lose of its elastic work is, per job:
the request and its fair-share class, its age, its pool charge, each running
process (share id, instance, investment) and each stop owed.  The cycle
marks a job whenever one of these changes and flushes before it acts on the
change (a stop is written as owed before the host is asked; a submission,
completion or update before the next cycle acts on it; new processes as
soon as their enactment reports them; an enactment cut short by a crash
leaves instances nobody knows, which the Scheduler's orphan sweep stops).

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
from dataclasses import dataclass, field
from typing import Any, Iterable

from legionrm.models import ElasticJobRequest, InstanceRef
from legionrm.scheduler.fairshare import DuccCore, Numbering, Share
from legionrm.scheduler.ports import InstanceWatch
from legionrm.state import ElasticStore, StoredElasticJob, StoredShare, StoredStop

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

    def save(self, cycle: Any, jobs: Iterable[str]) -> None:
        """Write the jobs ``jobs`` of ``cycle`` as they are now, in one transaction."""
        rows = [r for r in (self._row(cycle, jid) for jid in dict.fromkeys(jobs)) if r is not None]
        if rows:
            self.store.write(rows)
            self.writes += 1
        for r in rows:
            if r.empty:
                self._known.pop(r.job_id, None)

    def _row(self, cycle: Any, jid: str) -> StoredElasticJob | None:
        ledger = cycle.ledger
        entry = ledger.jobs.get(jid)
        if entry is not None:
            cj = cycle.core.jobs.get(jid)
            old = self._known.get(jid)
            submitted = cj.submit if cj is not None else (old[2] if old else 0.0)
            self._known[jid] = (entry.request, entry.ducc_class, submitted)
        known = self._known.get(jid)
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
        self.store.write([], gone)
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
        for sid, (jid, s) in sorted(ready.items()):
            del self._adopting[sid]
            touched.add(jid)
            state, why = states.get(s.instance.instance_id, ("running", ""))
            if state != "running":
                log.info("elastic process %s of %s ended while the scheduler was away (%s)", sid, jid, why)
                continue
            host = s.instance.host
            if jid not in ledger.jobs or not core.restore_share(sid, jid, host, s.investment_ms):
                reason = "job completed" if jid not in ledger.jobs else f"not taken back on {host} after a restart"
                ledger.owed[s.instance.instance_id] = OwedStop(s.instance, jid, None, reason)
                stopped += 1
                continue
            ledger.track(jid, sid, s.instance)
            adopted += 1
        self.save(cycle, touched)
        return adopted, stopped

    def forget_unplaced(self, hosts_known: set[str]) -> list[tuple[str, InstanceRef]]:
        """Drop the stored processes on hosts not in ``hosts_known`` (gone for
        good); returns them (job, instance) so the cycle can stop them."""
        out = []
        for sid, (jid, s) in list(self._adopting.items()):
            if s.instance.host not in hosts_known:
                del self._adopting[sid]
                out.append((jid, s.instance))
        return out

