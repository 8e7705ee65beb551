"""The callers' side of the elastic cycle: its jobs and their processes, as they come and go.

:class:`ElasticJobs`, the base of :class:`~legionrm.scheduler.elastic.cycle.ElasticCycle`:
a job admitted (:meth:`~ElasticJobs.submit`), done
(:meth:`~ElasticJobs.complete`), its progress (:meth:`~ElasticJobs.update`)
and processes' investment reported, a process that ended by itself
(:meth:`~ElasticJobs.instance_gone`), and what the cycle runs now.  Each
change is noted as an event, so the next cycle is due at once.

Write first, then act: every change of a job is written to the book
(:mod:`legionrm.scheduler.elastic.book`, through :meth:`~ElasticJobs._write`)
before the ledger, the core or the pools reflect it; a write that fails
(:class:`~legionrm.state.StoreFault`) raises and changes nothing in memory.
Pure Python (no Ray); every call holds the cycle's lock.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable, Mapping

from legionrm.errors import SchedulingError
from legionrm.models import ElasticJobRequest
from legionrm.scheduler.elastic.book import UNBOUNDED_WORK, ElasticBook, Ledger, core_fields, drop
from legionrm.scheduler.elastic.book import JobEntry as _Job
from legionrm.scheduler.elastic.charges import PoolCharges
from legionrm.scheduler.fairshare import DuccCore, SharePolicy
from legionrm.state import StoredElasticJob, StoredStop, StoreFault

UPDATABLE = ("work_items", "time_per_item_ms", "init_time_ms", "max_processes", "threads")


class ElasticJobs:
    """The jobs of an elastic cycle and their processes, changed by its callers (see the module
    doc).  The state is the cycle's (:class:`~legionrm.scheduler.elastic.cycle.ElasticCycle`
    makes it); this class only changes it, under its lock, written first."""

    core: DuccCore
    charges: PoolCharges | None
    book: ElasticBook | None
    clock: Callable[[], float]
    ledger: Ledger
    _lock: threading.RLock
    _events: list[str]

    # --- work -----------------------------------------------------------------------------

    def submit(self, request: ElasticJobRequest) -> None:
        """Admit an elastic job; it grows from the next cycle (due at once).

        Raises SchedulingError for a duplicate id, an unknown class or a class
        that is not FAIR_SHARE.  A user the class does not admit is kept,
        refused, with the reason in the report (as the core does).
        """
        with self._lock:
            jid = request.job_id
            if jid in self.ledger.jobs or jid in self.core.jobs:
                raise SchedulingError(f"elastic job {jid!r} already exists")
            classes = self.core.classes
            cls = request.ducc_class or classes.defaults.get(SharePolicy.FAIR_SHARE)
            if cls is None:
                raise SchedulingError(f"elastic job {jid!r}: no ducc_class given and no default FAIR_SHARE class")
            rc = classes.classes.get(cls)
            if rc is None:
                raise SchedulingError(
                    f"elastic job {jid!r}: unknown class {cls!r} (known: {', '.join(sorted(classes.classes))})"
                )
            if rc.policy is not SharePolicy.FAIR_SHARE:
                raise SchedulingError(
                    f"elastic job {jid!r}: class {cls!r} is {rc.policy.value}; the cycle runs FAIR_SHARE work "
                    "(fixed work goes through scheduleObjects)"
                )
            refusal = self.charges.admit(request) if self.charges is not None else None
            if refusal is not None:  # the pools admit elastic work as they admit scheduleObjects work
                raise SchedulingError(f"elastic job {jid!r}: {refusal.code}: {refusal.reason}")
            now, charged = self.clock(), self.charges.charged(jid) if self.charges is not None else 0
            row = self._row(jid)  # a job of the same id that completed may still owe stops: they stay in its row
            try:
                self._write(replace(row, request=request, ducc_class=cls, submitted=now, active=True, charged=charged)
                            if row is not None else StoredElasticJob(request, cls, now, True, charged))
            except StoreFault:
                if self.charges is not None:
                    self.charges.release(jid)
                raise
            self.core.submit(jid, request.user, request.memory_gb, cls=cls, kind="job", submit=now,
                             **core_fields(request))
            self.ledger.jobs[jid] = _Job(request, cls)
            self._events.append(f"arrival {jid}")

    def complete(self, job_id: str) -> bool:
        """The job is done: the core forgets it now and its instances stop at
        the start of the next cycle (due at once).  Idempotent: False when the
        job is unknown.  No I/O but the book's write."""
        with self._lock:
            if job_id not in self.ledger.jobs:
                return False
            row = self._row(job_id)
            if row is not None:  # its processes stay in the book, as stops owed, until they are stopped
                ended = tuple(s for s in row.shares if s.share in self.ledger.inst)
                row = replace(row, active=False, charged=0, shares=tuple(s for s in row.shares if s not in ended),
                              owed=row.owed + tuple(StoredStop(s.instance, None, "dropped by the core") for s in ended))
            self._write(row)
            del self.ledger.jobs[job_id]
            self.core.complete_job(job_id)
            if self.charges is not None:
                self.charges.release(job_id)
            self._events.append(f"completion {job_id}")
            return True

    def update(self, job_id: str, **fields: Any) -> ElasticJobRequest:
        """Progress from the job: ``work_items`` left (None: unbounded),
        ``time_per_item_ms``, ``init_time_ms``, ``max_processes``, ``threads``.
        Read by the next cycle's caps.  Raises SchedulingError for an unknown
        job or field.  Returns the job's request as now known."""
        with self._lock:
            job = self._job(job_id)
            bad = sorted(set(fields) - set(UPDATABLE))
            if bad:
                raise SchedulingError(f"elastic job {job_id!r}: cannot update {bad} (known: {', '.join(UPDATABLE)})")
            core_fields = dict(fields)
            if "work_items" in fields and fields["work_items"] is None:
                core_fields["work_items"] = UNBOUNDED_WORK
            updated = job.request.model_copy(update=fields)
            row = self._row(job_id)
            self._write(row and replace(row, request=updated))
            self.core.update_job(job_id, **core_fields)
            job.request = updated
            return job.request

    def report_investment(self, investments: Mapping[str, float]) -> int:
        """Milliseconds each instance has spent on its current work (DUCC's
        investment): the core evicts the least invested first.  Unknown
        instance ids are ignored; returns how many were recorded."""
        with self._lock:
            shares = {}
            for iid, ms in investments.items():
                sid = self.ledger.share_of.get(iid)
                share = self.ledger.share(self.core, sid) if sid is not None else None
                if share is not None:
                    shares[sid] = (share, float(ms))
            rows = (self._row(j) for j in dict.fromkeys(share.job for share, _ in shares.values()))
            self._write(*(r and replace(r, shares=tuple(replace(s, investment_ms=shares[s.share][1])
                                                        if s.share in shares else s for s in r.shares)) for r in rows))
            for share, ms in shares.values():
                share.investment_ms = ms
            return len(shares)

    def instance_gone(self, instance_id: str, reason: str = "exited") -> bool:
        """An instance ended by itself (crashed, walltime, stopped by its
        host): the core frees its share and the job regrows next cycle (due at
        once).  Idempotent: False for an unknown instance."""
        with self._lock:
            sid = self.ledger.share_of.get(instance_id)
            if sid is None:
                return False
            self._write(drop(self._row(self.ledger.inst[sid][0]), instance_id))
            job, _ = self.ledger.forget(sid)
            self.core.confirm_exit(sid)
            self._events.append(f"exit {job} {instance_id} ({reason})")
            return True

    def instance_ids(self) -> set[str]:
        """The instances the cycle runs now (not orphans to anyone else)."""
        with self._lock:
            return set(self.ledger.share_of) | (self.book.adopting() if self.book is not None else set())

    def charged_jobs(self) -> set[str]:
        """The jobs the pools hold an ``elastic:<id>`` allocation for (by the cycle's own charges)."""
        with self._lock:
            return {j for j in self.ledger.jobs if self.charges is not None and self.charges.charged(j) > 0}

    def share_of(self, instance_id: str) -> int | None:
        """The core's share id behind a running instance (None: not one of ours)."""
        with self._lock:
            return self.ledger.share_of.get(instance_id)

    # --- the book (write-ahead) -------------------------------------------------------------------

    def _save(self, *jobs: str) -> None:
        """Write ``jobs`` as they are now."""
        if self.book is not None and jobs:
            self.book.save(self, jobs)

    def _row(self, job: str) -> StoredElasticJob | None:
        """``job`` as the book would write it now (None: no book, or a job it does not know)."""
        return self.book.row(self, job) if self.book is not None else None

    def _write(self, *rows: StoredElasticJob | None) -> None:
        """Write ``rows``, what jobs are to become, before the change is made
        (:class:`~legionrm.state.StoreFault`: nothing written; the caller changes nothing)."""
        if self.book is not None:
            self.book.write(rows)

    # --- bookkeeping --------------------------------------------------------------------------

    def _job(self, job_id: str) -> _Job:
        job = self.ledger.jobs.get(job_id)
        if job is None:
            raise SchedulingError(f"no elastic job {job_id!r}")
        return job

