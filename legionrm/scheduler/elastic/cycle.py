"""The continuous scheduling cycle: elastic fair-share work, re-balanced.

An :class:`ElasticCycle` keeps long-running elastic jobs (submitted under
FAIR_SHARE classes) at their fair share of the cluster.  It owns nothing but
bookkeeping: the DUCC core (:class:`~legionrm.scheduler.fairshare.core.DuccCore`)
decides how many processes each job gets and where, the Enactor negotiates
every new process with tokens, and a stopper stops processes on their hosts.

One cycle (:meth:`ElasticCycle.run_once`), in DUCC's order:

1. **Hosts** from one Collection snapshot: a new host is added to the core,
   a departed one removed, an unavailable one (missed heartbeats, varied off)
   is down (the core purges its work), a returning one is up again.
2. **Stops owed**: stops that failed last cycle are retried; every tracked
   instance whose share the core no longer has (purged with a dead host, job
   completed) is stopped now.
3. **The core's cycle** (caps, How Much, What Of, evictions, defragmentation).
4. **Shrinkage**: each eviction, in the order the core chose (investment
   order within a job), stops its instance through the host, then confirms
   the exit to the core, so the space is free for the next cycle.
5. **Growth** (:mod:`legionrm.scheduler.elastic.enact`): per job, one
   enactment with every new process the core placed (keys
   ``"<job>#<share>"``, holder = the job's user).  A refused process does not
   sink the others; it is repaired at once on other hosts with room (a
   master and delta schedules), or dropped from the core (``confirm_exit``)
   so the next cycle places it again.  Hosts that refused a job are avoided
   for ``refusal_memory_s``; hosts whose access policy refuses the caller are
   never asked.

Callers change the jobs between cycles through the methods of its base,
:class:`~legionrm.scheduler.elastic.jobs.ElasticJobs` (``submit``,
``complete``, ``update``, ``report_investment``, ``instance_gone``...).

A cycle is :meth:`~ElasticCycle.due` on its timer (``interval_s``) or at once
when an event was noted: an arrival, a completion, a process that ended by
itself, or a host joining, leaving, coming back or going unavailable
(:meth:`~ElasticCycle.watch` notices host events between cycles).

Write first, then act (with a ``store``): every change of a job (its
request, processes, stops owed, pool charge) is written to the book before
the ledger, the core or the pools reflect it.  A write that fails
(:class:`~legionrm.state.StoreFault`) changes nothing in memory: a caller's
call raises it; a cycle stops where it failed and raises it, its evictions
not written taken back and the processes it started whose write failed
stopped again, so the next cycle decides anew once the disk takes writes.

Pure Python (no Ray): the collection, enactor and stopper are collaborators,
so the same object runs in tests over in-process host objects and in the
Scheduler actor over Ray adapters.  Thread-safe (one lock); one owner calls
the core.  Memory per process is in GB, DUCC's unit; the core's machines are
sized by each host's ``memory_gb`` capacity (cpus are not part of DUCC's
accounting: a host out of cpus refuses the reservation, handled as above).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Callable

from legionrm.collection.view import CollectionSnapshot
from legionrm.errors import SchedulingError
from legionrm.models import CycleReport, ElasticChange, Identity, InstanceRef
from legionrm.scheduler.elastic.book import ElasticBook, Ledger, drop, owe
from legionrm.scheduler.elastic.book import OwedStop as _Owed
from legionrm.scheduler.elastic.charges import PoolCharges
from legionrm.scheduler.elastic.enact import GrowthContext, HostStopper, JobGrowth, Refusals, change
from legionrm.scheduler.elastic.hosts import HOSTS, HostView
from legionrm.scheduler.elastic.jobs import ElasticJobs
from legionrm.scheduler.elastic.report import cycle_report
from legionrm.scheduler.fairshare import CycleResult, DuccCore, ShareEvent
from legionrm.scheduler.ports import EnactorPort, InstanceWatch, PoolGate, SnapshotSource, Stopper
from legionrm.state import ElasticStore, StoreFault

log = logging.getLogger(__name__)

__all__ = ["ElasticCycle", "EnactorPort", "HostStopper", "SnapshotSource", "Stopper"]


class ElasticCycle(ElasticJobs):
    """The continuous cycle over elastic fair-share jobs (see the module doc).

    ``core`` is the DUCC core (its classes, nodepools and settings are the
    policy); ``enactor`` has ``enact_schedule``; ``stopper`` has ``stop``;
    ``collection`` has ``snapshot()``.  ``interval_s`` is the timer (DUCC's
    default 10 s); ``token_timeout_s`` the reservations' timeout;
    ``refusal_memory_s`` how long a host that refused a job is avoided;
    ``max_alternatives`` how many other hosts a refused process may try in
    the same cycle (one master and the rest as delta schedules).  With
    ``store`` every change of the book is written there before it is acted
    on, and :meth:`restore` takes a stored book back after a restart
    (:mod:`legionrm.scheduler.elastic.book`); ``watch`` tells it which stored
    processes still run, and every cycle which processes ended by themselves.
    """

    def __init__(
        self,
        core: DuccCore,
        enactor: EnactorPort,
        stopper: Stopper,
        collection: SnapshotSource,
        *,
        clock: Callable[[], float] = time.time,
        interval_s: float = 10.0,
        name: str = "cycle",
        token_timeout_s: float = 30.0,
        refusal_memory_s: float = 300.0,
        max_alternatives: int = 3,
        pools: PoolGate | None = None,
        store: ElasticStore | None = None,
        watch: InstanceWatch | None = None,
    ) -> None:
        if interval_s <= 0:
            raise SchedulingError(f"interval_s must be > 0, got {interval_s}")
        self.core = core
        self.enactor = enactor
        self.stopper = stopper
        self.collection = collection
        self.clock = clock
        self.interval_s = float(interval_s)
        self.name = name
        self.token_timeout_s = token_timeout_s
        self.refusal_memory_s = refusal_memory_s
        self.max_alternatives = max(1, max_alternatives)
        self.charges = PoolCharges(pools) if pools is not None else None
        self.book = ElasticBook(store, watch) if store is not None else None
        self.instance_watch = watch
        self.last_report: CycleReport | None = None
        self._lock = threading.RLock()
        self.ledger = Ledger()  # jobs, processes, stops owed: what the book writes ahead and restores
        self.refusals = Refusals(refusal_memory_s)  # (job, host) pairs avoided for a while
        self._events: list[str] = []
        self._last_run = -float("inf")
        # request ids must never repeat across restarts: hosts answer a known id with its old token
        self._epoch = f"{int(clock() * 1000):x}"
        self.hosts = HostView()  # the hosts the core was last brought in line with

    # --- timing -------------------------------------------------------------------------------

    def note(self, event: str) -> None:
        """Record an event; the next cycle is due at once and lists it as a trigger."""
        with self._lock:
            self._events.append(event)

    def busy(self) -> bool:
        """True while there is anything to care for: jobs, running or owed
        instances, or noted events.  An idle cycle need not watch the hosts."""
        with self._lock:
            return bool(self.ledger.jobs or self.ledger.inst or self.ledger.owed or self._events)

    def due(self, now: float | None = None) -> bool:
        """True when the timer has run out or an event was noted since the last cycle."""
        with self._lock:
            now = self.clock() if now is None else now
            return bool(self._events) or now - self._last_run >= self.interval_s

    def watch(self, snapshot: CollectionSnapshot | None = None) -> list[str]:
        """Notice host events (join, leave, unavailable, back, resized) since
        the last cycle without acting on them; each is noted, so the next cycle
        is due.  Returns the events.  Cheap: a vectorised diff of the hosts."""
        with self._lock:
            snap = snapshot if snapshot is not None else self.collection.snapshot()
            events = self.hosts.events(self.core, snap)
            self._events.extend(e for e in events if e not in self._events)
            return events

    # --- the cycle -----------------------------------------------------------------------------

    def run_once(self) -> CycleReport:
        """Run one cycle (see the module doc) and return its report.  Not
        idempotent: it starts and stops instances.  Collaborator failures in
        enactment or stopping are contained (the processes concerned are
        dropped or retried); a failing collection snapshot raises, and so does
        a write of the book that fails (:class:`~legionrm.state.StoreFault`:
        the cycle stops there, with nothing it did not write changed, and the
        next one is due on the timer)."""
        with self._lock:
            try:
                return self._run_once()
            except StoreFault:
                self._last_run = self.clock()
                raise

    def _run_once(self) -> CycleReport:
        t0 = time.perf_counter()
        now = self.clock()
        snap = self.collection.snapshot()
        triggers = list(dict.fromkeys(self._events))
        self._events.clear()
        grew: list[ElasticChange] = []
        shrank: list[ElasticChange] = []
        refused: list[ElasticChange] = []
        lost = self.hosts.sync(self.core, snap, triggers)
        self._adopt()
        self._notice_ended()
        self._pay_owed_stops(shrank)
        self._reap(lost, shrank)
        result = self.core.run_cycle()
        self._evict(result, shrank)
        self._grow(result, snap, now, grew, refused)
        self.refusals.prune(now)
        self._last_run = now
        if self.charges is not None:
            self._charge()
        report = cycle_report(result, now, triggers, grew, shrank, refused, t0, self.ledger.jobs,
                              list(self.ledger.inst.values()), self.core)
        self.last_report = report
        return report

    # --- shrinkage ----------------------------------------------------------------------------

    def _pay_owed_stops(self, shrank: list[ElasticChange]) -> None:
        for iid, owed in list(self.ledger.owed.items()):
            m = self.core.machines.get(owed.instance.host)
            if m is None or m.dead:
                self._write(drop(self._row(owed.job), iid))
                del self.ledger.owed[iid]  # the host is gone; the core purged the share with it
                continue
            if self._try_stop(owed.instance, owed.reason):
                self._write(drop(self._row(owed.job), iid))  # a fault: still owed, stopped again (idempotent)
                del self.ledger.owed[iid]
                if owed.share is not None:
                    self.core.confirm_exit(owed.share)
                shrank.append(change(owed.job, owed.share or 0, owed.instance, "shrank", owed.reason))

    def _reap(self, lost: dict[str, str], shrank: list[ElasticChange]) -> None:
        """Stop every tracked instance whose share the core no longer has."""
        live = {sid for j in self.core.jobs.values() for sid in j.shares}
        for sid in [s for s in self.ledger.inst if s not in live]:
            job, inst = self.ledger.inst[sid]
            reason = lost.get(inst.host) or ("job completed" if job not in self.ledger.jobs else "dropped by the core")
            self._stop(sid, job, None, inst, reason, shrank)

    def _evict(self, result: CycleResult, shrank: list[ElasticChange]) -> None:
        """Stop the evicted processes in the order the core chose them."""
        per_job: dict[str, int] = {}
        for ev in result.evictions:
            per_job[ev.job] = per_job.get(ev.job, 0) + 1
        # doEvictions (fair-share surplus) runs before defragmentation in the core
        surplus = {
            j: max(0, jr.processes + per_job.get(j, 0) - jr.counted) for j, jr in result.jobs.items()
        }
        for k, ev in enumerate(result.evictions):
            jr = result.jobs.get(ev.job)
            if surplus.get(ev.job, 0) > 0:
                surplus[ev.job] -= 1
                reason = f"evicted: above its fair share of {jr.counted if jr else 0} processes"
            else:
                needy = ", ".join(result.needy) or "a starved job"
                reason = f"evicted by defragmentation: room for {needy}"
            item = self.ledger.inst.get(ev.share)
            if item is None:
                self.core.confirm_exit(ev.share)  # never started: nothing to stop
                continue
            try:
                self._stop(ev.share, ev.job, ev.share, item[1], reason, shrank)
            except StoreFault:  # an eviction not written is not made: the next cycle decides again
                for later in result.evictions[k:]:
                    share = self.ledger.share(self.core, later.share)
                    if share is not None:
                        share.evicted = False
                    elif later.share not in self.ledger.inst:
                        self.core.confirm_exit(later.share)
                raise

    def _stop(self, sid: int, job: str, share: int | None, inst: InstanceRef, reason: str,
              shrank: list[ElasticChange]) -> None:
        """Stop the process ``sid`` (tracked; ``share``: the core's to confirm, if any)."""
        owed = _Owed(inst, job, share, reason)
        # written down as owed before the host is asked: a crash now leaves it owed after the restart
        self._write(owe(self._row(job), owed))
        self.ledger.forget(sid)
        self.ledger.owed[inst.instance_id] = owed
        if self._try_stop(inst, reason):
            self._write(drop(self._row(job), inst.instance_id))  # a fault: still owed, stopped again next cycle
            del self.ledger.owed[inst.instance_id]
            if share is not None:
                self.core.confirm_exit(share)
            shrank.append(change(job, share or 0, inst, "shrank", reason))
        # else: the core keeps an unconfirmed eviction on its machine: the space stays taken

    def _try_stop(self, inst: InstanceRef, reason: str) -> bool:
        try:
            self.stopper.stop(inst, reason)
            return True
        except Exception:  # noqa: BLE001 - a stop that failed is retried next cycle
            log.warning("cycle %s: stopping %s on %s failed", self.name, inst.instance_id, inst.host, exc_info=True)
            return False

    # --- growth ---------------------------------------------------------------------------------

    def _grow(
        self, result: CycleResult, snap: CollectionSnapshot, now: float,
        grew: list[ElasticChange], refused: list[ElasticChange],
    ) -> None:
        by_job: dict[str, list[ShareEvent]] = {}
        for ev in result.allocations:
            by_job.setdefault(ev.job, []).append(ev)
        ctx = GrowthContext(
            core=self.core, enactor=self.enactor, name=self.name,
            request_prefix=f"{self.name}/{self._epoch}/c{self.core.cycle}", token_timeout_s=self.token_timeout_s,
            max_alternatives=self.max_alternatives, refusals=self.refusals, snap=snap, now=now,
            track=self.ledger.track, grew=grew, refused=refused,
        )
        accepting: dict[Identity, set[str]] = {}
        mine = [(jid, events) for jid, events in by_job.items() if jid in self.ledger.jobs]
        for k, (jid, events) in enumerate(mine):  # others' allocations: somebody else enacts them
            job = self.ledger.jobs[jid]
            req = job.request
            ident = Identity(user=req.user, class_name=req.class_name, groups=req.groups)
            if ident not in accepting:  # hosts whose access policy accepts the caller
                mask = snap.mask(HOSTS, caller=ident)
                accepting[ident] = set(snap.table.names[mask].tolist())
            before = set(self.ledger.inst)
            JobGrowth(ctx, req, job.ducc_class, accepting[ident]).run(events)
            try:
                self._save(jid)  # its new processes, as soon as the enactment reported them
            except StoreFault:  # not written, not run: its new processes stop, the rest are not started
                for sid in set(self.ledger.inst) - before:
                    _, inst = self.ledger.forget(sid)
                    self._try_stop(inst, "its process could not be written down")
                    self.core.confirm_exit(sid)
                for _, rest in mine[k + 1:]:
                    for ev in rest:
                        self.core.confirm_exit(ev.share)
                raise

    def _charge(self) -> None:
        """Charge each job in the pools what it holds now, written first."""
        assert self.charges is not None
        held: dict[str, int] = {}
        for job, _ in self.ledger.inst.values():
            held[job] = held.get(job, 0) + 1
        held = {jid: held.get(jid, 0) for jid in self.ledger.jobs}
        wanted = self.charges.wanted(held)
        self._write(*(r and replace(r, charged=n) for r, n in ((self._row(j), n) for j, n in wanted.items())))
        self.charges.settle(held)
        self._save(*(j for j, n in wanted.items() if self.charges.charged(j) != n))  # a pool that refused the size

    # --- the book (write-ahead, restore) --------------------------------------------------------

    def restore(self) -> int:
        """After a restart: take the stored book back (jobs, pool charges, stops
        owed; see :mod:`legionrm.scheduler.elastic.book`), then adopt the stored
        processes whose hosts a Collection snapshot shows (when the snapshot
        fails, the next cycle does).  Returns how many jobs came back.  Call
        once, on a fresh cycle, before the first cycle runs."""
        if self.book is None:
            return 0
        with self._lock:
            self.book.restore(self)
            try:
                self.hosts.sync(self.core, self.collection.snapshot(), self._events)
            except Exception:  # noqa: BLE001 - the first cycle syncs the hosts and adopts
                log.warning("cycle %s: no snapshot at restore; the first cycle adopts", self.name, exc_info=True)
                return len(self.ledger.jobs)
            try:
                self._adopt()
            except StoreFault as fault:  # nothing adopted: the first cycle that can write does
                log.warning("cycle %s: the stored processes wait to be adopted: %s", self.name, fault)
            return len(self.ledger.jobs)

    def _adopt(self) -> None:
        if self.book is None:
            return
        self.book.adopt(self)
        for _, inst in self.book.forget_unplaced(self, set(self.core.machines)):
            self._try_stop(inst, "its host is gone")  # the host's instances went with it; the class is told

    def _notice_ended(self) -> None:
        """With a watch: processes their hosts no longer run ended by themselves
        (crashed, lost with their host): the core frees their shares now."""
        watch = self.instance_watch
        procs = self.ledger.inst
        states = watch.check([i for _, i in procs.values()]) if watch is not None and procs else {}
        for iid, (state, why) in states.items():
            sid = self.ledger.share_of.get(iid)
            if state != "running" and sid is not None:
                self._try_stop(self.ledger.inst[sid][1], why)  # its class is told (the host has nothing left to stop)
                self.instance_gone(iid, why)
