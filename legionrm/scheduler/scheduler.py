"""The Scheduler core: Legion's ``scheduleObjects`` and its companions.

``scheduleObjects(request)`` runs, in order:

1. how much (:mod:`legionrm.scheduler.sharegate`, when the cluster has DUCC
   classes): each object request's class narrows where it may run, fills
   its priority and weight, and charges non-preemptable work to its user's
   allotment, all or nothing;
2. admission through the caller's resource pool (a :class:`PoolGate`; a
   request its pool cannot admit now is refused before any placement);
3. planning over one Collection snapshot (:class:`Planner`): ranked master
   schedules, each with delta schedules;
4. enactment (the Enactor collaborator): reservations, deltas, next masters,
   then class objects create the instances with the tokens;
5. the response: which instances run where, or every placement's failure.

The collection and the enactor are collaborators (``snapshot()`` and
``enact_schedule(EnactRequest)``), so the same core runs in a test with
in-process fakes and in the Scheduler actor with Ray adapters.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from legionrm.ahead.starts import AheadStarts
from legionrm.ahead.window import ahead_of
from legionrm.enactor.replan import enact_with_replans
from legionrm.errors import SchedulingError
from legionrm.events.triggers import Triggers, past_events
from legionrm.models import (
    EnactRequest,
    EnactResult,
    Holder,
    InstanceRef,
    ObjectRequest,
    PlacementFailure,
    Refusal,
    RequestInfo,
    ScheduleProposal,
    SchedulerResponse,
    SchedulingRequest,
    WorkResult,
)
from legionrm.scheduler.capacity import REQUEST_TOO_BIG, CapacityFollower
from legionrm.scheduler.confirm import Activator, activation, check_proposal, refused_at_door, validate_request
from legionrm.scheduler.planner import Plan, Planner
from legionrm.scheduler.ports import EnactorPort, InstanceWatch, OpenGate, PoolGate, SnapshotSource, Stopper
from legionrm.scheduler.recovery import recover, resync_pools, sweep_orphans
from legionrm.scheduler.requests import Entry, RequestBook, queue_order
from legionrm.scheduler.sharegate import ShareGate
from legionrm.scheduler.watch.results import Results, end_reason
from legionrm.state import AccountingStore, RequestStore

ORPHAN_SWEEP_TICKS = 10
"""Every how many ticks the hosts are swept for instances nobody knows."""
RESULT_SWEEP_TICKS = 2
"""Every how many ticks runs' late results are fetched and accounting records written."""

log = logging.getLogger(__name__)


NEVER = frozenset({
    "class.unknown", "respool.unknown", "respool.not_leaf", "respool.duplicate", "respool.limit",
    "ducc.class_unknown", "ducc.user", "activate.unknown", REQUEST_TOO_BIG,
})
"""Refusals of the request itself that no amount of waiting can change; with
a plan failure marked ``lasting`` (every host refused for what it is), such
a request fails at once instead of waiting."""


class Scheduler:
    """Legion's Scheduler with a queue.  Thread-safe for concurrent requests:
    planning reads an immutable snapshot and the enactor's reservations are
    the only writes, checked by the hosts themselves, so concurrent callers
    never double-book.

    A request lives in :attr:`book` until it ends.  One that cannot run now
    waits (``pending``, with its reason) and is tried again by
    :meth:`replan`, in :func:`queue_order`, whenever something may have
    freed room: an instance ended, a request was cancelled, a host joined or
    came back, a pool changed.  :meth:`tick` watches the running instances
    (their actors, their hosts, their walltimes) and re-plans when one ended.
    Every account (pool allocation, allotment, host calendar, class count) is
    booked back in :meth:`_book_back`, the one place that gives back."""

    def __init__(
        self,
        collection: SnapshotSource,
        enactor: EnactorPort,
        planner: Planner | None = None,
        pools: PoolGate | None = None,
        *,
        shares: ShareGate | None = None,
        name: str = "scheduler",
        token_timeout_s: float = 30.0,
        stopper: Stopper | None = None,
        watch: InstanceWatch | None = None,
        clock: Callable[[], float] = time.time,
        max_attempts: int = 1000,
        store: RequestStore | None = None,
        also_running: Callable[[], set[str]] | None = None,
        orphan_grace_s: float = 60.0,
        accounting: AccountingStore | None = None,
        owner_gate: Callable[[SchedulingRequest], Refusal | None] | None = None,
    ) -> None:
        self._collection = collection
        self._enactor = enactor
        self.planner = planner or Planner()
        self.pools = pools or OpenGate()
        self.shares = shares
        self.name = name
        self.token_timeout_s = token_timeout_s
        self.stopper = stopper
        self.watch = watch
        self.activator: Activator | None = None  # places inert objects anew (objstate.mobility sets it)
        self.on_finish: Callable[[Entry], object] | None = None  # a finished request's inert objects' state goes
        self.clock = clock
        self.max_attempts = max_attempts
        self.book = RequestBook(clock, store)
        self.also_running = also_running  # instances others started (the elastic cycle): not orphans
        self.orphan_grace_s = orphan_grace_s
        self._lock = threading.Lock()
        self._replan_lock = threading.Lock()
        self._dirty = threading.Event()
        self._enacting: dict[str, frozenset[str]] = {}  # request id -> the placement keys it asked for
        self._cancel_asked: set[str] = set()
        self._attempting: set[str] = set()  # requests an attempt is under way for
        self.capacity = CapacityFollower()
        self._ticks = 0
        self.ahead = AheadStarts(self.book, lambda: self._enactor, book_back=self._book_back)  # starts ahead
        self.results = Results(self.book, lambda: self.watch, accounting, name, clock)  # runs' results, records
        self.owner_gate = owner_gate  # may its user's work run here, as an OS account (hostobj.owner)?
        self.triggers = Triggers(clocked=True)  # status events: every change the book records is fired there
        self.book.listener = self.triggers.fire
        if store is not None:  # restarted: each request's past back in its stream, before any live event
            self.triggers.seed(e for entry in self.book.entries() for e in past_events(entry.info()))
            self._recover()

    @property
    def instances(self) -> dict[str, InstanceRef]:
        """The running instances this scheduler started, by id (a copy)."""
        return {i.instance_id: i for i in self.book.running_instances()}

    # --- collaborators (Legion's get/set pairs return the prior value) -------

    def getCollection(self) -> Any:
        return self._collection

    def setCollection(self, collection: SnapshotSource) -> Any:
        with self._lock:
            prior, self._collection = self._collection, collection
        return prior

    def getEnactor(self) -> Any:
        return self._enactor

    def setEnactor(self, enactor: EnactorPort) -> Any:
        with self._lock:
            prior, self._enactor = self._enactor, enactor
        return prior

    # --- planning ---------------------------------------------------------------

    def make_schedules(self, request: SchedulingRequest) -> Plan:
        """The suite of schedules ``scheduleObjects`` would enact, without
        enacting them.  Pure read; raises SchedulingError for a malformed
        request and MILError for a bad constraint."""
        validate_request(request)
        request, refused = self._shape(request)
        if refused:
            return Plan(request.request_id, [], refused, [])
        return self.planner.make_schedules(request, self._collection.snapshot())

    def getCandidatePlacements(self, class_info: ObjectRequest, caller: Any) -> list[str]:
        """Feasible hosts for one instance of ``class_info``, best first."""
        return self.planner.candidates(class_info, caller, self._collection.snapshot())

    def explain(self, request: SchedulingRequest, host: str) -> str:
        """Why ``host`` would or would not be used for ``request``, by name."""
        return self.make_schedules(request).why(host)

    # --- the main call --------------------------------------------------------

    def scheduleObjects(self, request: SchedulingRequest) -> SchedulerResponse:
        """Admit, plan and enact ``request``.  Returns ok with the instances
        started (state ``running``); else not ok with every placement's
        failure, the request either ``pending`` (it waits in the queue and is
        placed when capacity frees; only when ``request.wait``) or
        ``failed`` (it can never run, or it asked not to wait).  Not
        idempotent (it starts instances); a repeated request id is refused."""
        validate_request(request, self.clock())
        refusal = self.owner_gate(request) if self.owner_gate is not None else None
        if refusal is not None:  # refused at submit, never queued: nothing here can give it an account
            return refused_at_door(request, refusal)
        # claimed before the queue can see it, so a re-plan never races its first attempt
        with self._claim(request.request_id) as claimed:
            if not claimed:
                raise SchedulingError(f"request id {request.request_id!r} was already scheduled")
            return self._attempt(self.book.add(request))

    def replan(self) -> int:
        """Try every pending request again, in queue order; returns how many
        started.  Called on events (and by :meth:`tick`).  If a re-plan is
        already running, this asks it to go round once more and returns 0."""
        self._dirty.set()
        if not self._replan_lock.acquire(blocking=False):
            return 0
        started = 0
        try:
            while self._dirty.is_set():
                self._dirty.clear()
                for entry in self.queue():
                    with self._claim(entry.id) as claimed:  # one attempt at a time per request
                        if claimed and entry.state == "pending":
                            started += self._attempt(entry).ok
        finally:
            self._replan_lock.release()
        return started

    @contextmanager
    def _claim(self, request_id: str) -> Iterator[bool]:
        """Claim the one attempt a request may have under way: yields False
        (and claims nothing) when another attempt holds it."""
        with self._lock:
            claimed = request_id not in self._attempting
            self._attempting.add(request_id)  # already there when not claimed
        try:
            yield claimed
        finally:
            if claimed:
                with self._lock:
                    self._attempting.discard(request_id)

    def queue(self) -> list[Entry]:
        """The pending requests in the order they go next (:func:`queue_order`)."""
        pending = [e for e in self.book.entries() if e.state == "pending"]
        usage: dict[str, float] = {}
        for e in self.book.entries():
            if e.state == "running":
                usage[e.user] = usage.get(e.user, 0.0) + e.cpus()
        prio, weight = self.shares.class_order() if self.shares is not None else ({}, {})
        return queue_order(pending, prio, weight, usage)

    def cancel(self, request_id: str, reason: str = "cancelled by its user") -> RequestInfo:
        """End ``request_id``: a pending request leaves the queue; a running
        one has its instances stopped; everything is booked back.
        Idempotent on a finished request (returns its info unchanged).
        Raises SchedulingError for an unknown id."""
        entry = self._entry(request_id)
        if entry.final:
            return entry.info()
        with self._lock:
            in_flight = entry.state in ("admitted", "placing") or request_id in self._attempting
        if in_flight:  # the attempt under way finishes first; its result is stopped at once
            self._cancel_asked.add(request_id)
            return entry.info()
        self.ahead.release(entry)  # a reserved request's advance reservations (none held: nothing)
        for iid in entry.live_instances():
            # ended in the book first, so the watch never takes the stop for an end of its own
            self.book.end_instance(iid, "stopped", reason)
            self._stop(entry.refs[iid], reason)
        if self.book.finish(entry, "cancelled", reason):
            self._book_back(entry)
        self.replan()
        return entry.info()

    def request_info(self, request_id: str) -> RequestInfo:
        """One request's whole story (``legionrm show``).  SchedulingError if unknown."""
        return self._entry(request_id).info()

    def list_requests(self, user: str | None = None, state: str | None = None) -> list[RequestInfo]:
        """Requests, oldest first (``legionrm list``)."""
        return self.book.list(user, state)

    # --- ends -------------------------------------------------------------------

    def instance_ended(self, instance_id: str, reason: str = "ended", state: str = "ended", *,
                       replan: bool = True, result: WorkResult | None = None) -> bool:
        """An instance is gone (its actor or run returned or died, its walltime
        ran out, its class destroyed it, its host died).  Its request completes
        when it was the last one (or fails when an instance was ``lost`` or
        its work failed: ``result``), every account is booked back, and
        waiting requests are re-planned.  Returns False for an unknown or
        already ended instance (idempotent).  With ``replan=False`` the caller
        re-plans once after several ends."""
        reason = end_reason(instance_id, result, reason)
        entry = self.book.end_instance(instance_id, state, reason, result)
        if entry is None:
            return False
        if entry.state == "running" and not entry.holds_objects():
            if self.book.finish(entry, "failed" if entry.failed_work() else "completed", reason):
                self._book_back(entry)
        if replan:
            self.replan()
        return True

    def tick(self) -> int:
        """Watch the running instances: each whose walltime is over is
        stopped, each its host or actor no longer runs is ended (``lost``
        when its host is gone).  Then re-plan the queue.  Returns how many
        instances ended.  Safe to call from a timer thread."""
        now = self.clock()
        ended = 0
        self._start_due(now)
        running = self.book.running_instances()
        for ref in running:
            entry = self.book.owner_of(ref.instance_id)
            wall = entry.walltime(ref.class_name) if entry is not None else None
            if wall is not None and now >= ref.started_at + wall:
                self._stop(ref, "walltime")
                ended += self.instance_ended(ref.instance_id, "walltime", replan=False)
        self.capacity.follow(self.pools, self._collection.snapshot)
        self._ticks += 1
        if self._ticks % ORPHAN_SWEEP_TICKS == 1:
            self._sweep_orphans()
            self._resync_pools()
        if self.watch is not None:
            running = self.book.running_instances()
            seen = self.watch.check(running)
            results = self.results.fetch([r for r in running if seen.get(r.instance_id, ("running",))[0] != "running"])
            for iid, (state, reason) in seen.items():
                if state != "running":
                    self._classes_forget(iid)
                    ended += self.instance_ended(iid, reason, "lost" if state == "lost" else "ended", replan=False,
                                                 result=results.get(iid))
        if self._ticks % RESULT_SWEEP_TICKS == 0:
            self.results.sweep()
        self.replan()  # once, for every end this tick saw
        return ended

    def _start_due(self, now: float) -> None:
        """Reserved requests whose start has come start (:class:`AheadStarts`), one attempt at a time."""
        for entry in self.ahead.due(self.book.entries(), now):
            with self._claim(entry.id) as claimed:
                if claimed and entry.state == "reserved":
                    self.ahead.start(entry, now)
            if entry.id in self._cancel_asked and not entry.final:  # a cancel came while it started
                self._cancel_asked.discard(entry.id)
                self.cancel(entry.id)

    # --- restarts and orphans ---------------------------------------------------

    def _recover(self) -> None:
        """After a restart with a store (see :func:`recovery.recover`)."""
        recover(self.book, self._shape, self._release, self._admit)

    def _resync_pools(self) -> None:
        """A pool owner that restarted has forgotten its charges (see :func:`recovery.resync_pools`)."""
        resync_pools(self.pools, self.book, lambda r: self._admit(self._shape(r)[0]))

    def _sweep_orphans(self) -> list[str]:
        """Stop what hosts run that nobody knows (see :func:`recovery.orphans`); returns their ids."""
        also = self.also_running() if self.also_running is not None else set()
        return sweep_orphans(self.watch, self.book, also, self.clock() - self.orphan_grace_s, self._stop)

    # --- approval ------------------------------------------------------------

    def approve(self, proposal: ScheduleProposal) -> bool | Refusal:
        """Legion's step 6: the enactor reports a fully reserved schedule and
        the scheduler confirms it (:func:`~legionrm.scheduler.confirm.check_proposal`)."""
        with self._lock:
            keys = self._enacting.get(proposal.request_id)
        return check_proposal(keys, proposal, self.name)

    # --- one attempt ------------------------------------------------------------

    def _attempt(self, entry: Entry) -> SchedulerResponse:
        """Admit, plan and enact ``entry`` once; leaves it running, pending or failed."""
        request = entry.request
        entry.attempts += 1
        active, unknown = activation(request.activate, self.instances, self.name, self.activator)
        if unknown:
            return self._refused(entry, unknown, 0)
        if not request.objects:
            self.book.move(entry, "admitted", "nothing to place")
            self.book.move(entry, "placing", "activating")
            self.book.move(entry, "running", "activated")
            if self.book.finish(entry, "completed", "activated: the objects run under the requests that made them"):
                self._book_back(entry)
            return self._succeeded(entry, active, 0, None, "activated: ")
        too_big = self.capacity.too_big(request, self.pools, self.name)
        if too_big is not None:
            return self._refused(entry, [too_big], 0)
        request, refused = self._shape(request)
        if refused:
            return self._refused(entry, refused, 0)
        refusal = self._admit(request)
        if refusal is not None:
            return self._refused(entry, [PlacementFailure(
                key="*", resource=refusal.by, code=refusal.code, reason=refusal.reason, stage="plan")], 0)
        self.book.move(entry, "admitted", f"admitted to pool {request.pool}")
        try:
            plan = self.planner.make_schedules(request, self._collection.snapshot())
            if not plan.ok:
                self._release(request.request_id)
                return self._refused(entry, plan.failures, 0)
            self.book.move(entry, "placing", f"enacting {len(plan.masters)} master schedule(s)")
            ahead = ahead_of(request, self.clock())  # a future start: reserve now, start then
            plan, result = enact_with_replans(
                request, plan, lambda p, n: self.enact_plan(request, p, n, ahead, entry.attempts), self._fresh_plan,
                lambda why: self.book.move(entry, "placing", why))
        except BaseException as exc:
            self._release(request.request_id)
            if not entry.final:
                self.book.move(entry, "failed", f"{type(exc).__name__}: {exc}"[:300])
            raise
        if not result.ok:
            self._release(request.request_id)
            failures = [f for a in result.attempts for f in a.failures]
            return self._refused(entry, failures, len(plan.masters), result)
        prefix = f"master {result.master + 1} of {len(plan.masters)}: "
        if ahead is not None:
            prefix = self.ahead.reserve(entry, result, len(plan.masters))
        else:
            self.book.attach(entry, result.instances)
            self.book.move(entry, "running", prefix[:-2])
        if request.request_id in self._cancel_asked:
            self._cancel_asked.discard(request.request_id)
            self.cancel(request.request_id)
        return self._succeeded(entry, active + list(result.instances), len(plan.masters), result, prefix)

    def _fresh_plan(self, request: SchedulingRequest) -> Plan | None:
        return plan if (plan := self.planner.make_schedules(request, self._collection.snapshot())).ok else None

    def enact_plan(self, request: SchedulingRequest, plan: Plan, n: int = 0, ahead: float | None = None,
                   attempt: int = 1) -> EnactResult:
        """Enact ``plan``; re-plan ``n`` enacts under its own id (``id~replanN``), and so does
        each later ``attempt`` of a request back from the queue (``id~tN``): a host that
        answered an earlier attempt's reservation must not be asked the same id again;
        ``ahead``: reserve from then and create nothing (an advance reservation)."""
        ident, objs = request.identity, plan.objects
        enact = EnactRequest(
            request_id=request.request_id + (f"~t{attempt}" if attempt > 1 else "") + (f"~replan{n}" if n else ""),
            holder=Holder(user=ident.user, class_name=None, enactor=self.name, groups=ident.groups),
            masters=tuple(plan.masters), start=ahead, create=ahead is None,
            timeout_s=self.token_timeout_s if ahead is None else self.ahead.timeout(self.token_timeout_s),
            # per placement key: two object requests of one class may differ
            duration_s={k: op.request.walltime_s for op in objs if op.request.walltime_s for k in op.keys},
            args={k: op.request.start_args() for op in objs if op.request.start_args() for k in op.keys})
        with self._lock:
            self._enacting[enact.request_id] = frozenset(k for op in objs for k in op.keys)
        try:
            return self._enactor.enact_schedule(enact)
        finally:
            with self._lock:
                self._enacting.pop(enact.request_id, None)

    def _refused(self, entry: Entry, failures: Any, masters: int, result: EnactResult | None = None
                 ) -> SchedulerResponse:
        """Not now: back to the queue (``pending``, with the first reason) if
        the request waits and nothing rules it out for good; else failed."""
        failures = tuple(failures)
        entry.failures = failures
        msg = "; ".join(f"{f.key} on {f.resource or '-'}: {f.code}: {f.reason}" for f in failures[:5]) or "no schedule"
        never = [f for f in failures if f.code in NEVER or f.lasting]
        if request_cancelled := entry.id in self._cancel_asked:
            self._cancel_asked.discard(entry.id)
            self.book.move(entry, "cancelled", "cancelled while placing")
        elif never or not entry.request.wait or entry.attempts >= self.max_attempts:
            why = (f"{never[0].code}: {never[0].reason}" if never else
                   msg if not entry.request.wait else f"gave up after {entry.attempts} attempts: {msg}")
            self.book.move(entry, "failed", why[:500])
        else:
            entry.earliest_start = self.book.next_end()
            self.book.move(entry, "pending", f"{failures[0].code}: {failures[0].reason}"[:500] if failures else msg)
        if entry.final and not request_cancelled:
            self._book_back(entry)
        return SchedulerResponse(request_id=entry.id, ok=False, failures=failures, masters=masters,
                                 enact=result, message=msg, state=entry.state)

    def _succeeded(self, entry: Entry, instances: list[InstanceRef], masters: int,
                   result: EnactResult | None, prefix: str) -> SchedulerResponse:
        where = ", ".join(f"{i.instance_id}@{i.host}" for i in instances)
        return SchedulerResponse(request_id=entry.id, ok=True, instances=tuple(instances), masters=masters,
                                 enact=result, message=(prefix + where).rstrip(": "), state=entry.state)

    # --- helpers --------------------------------------------------------------

    def _entry(self, request_id: str) -> Entry:
        entry = self.book.get(request_id)
        if entry is None:
            raise SchedulingError(f"no request {request_id!r} is known to scheduler {self.name!r}")
        return entry

    def _shape(self, request: SchedulingRequest) -> tuple[SchedulingRequest, list[PlacementFailure]]:
        """The request as its DUCC classes shape it (unchanged without classes)."""
        return self.shares.shape(request) if self.shares is not None else (request, [])

    def _admit(self, request: SchedulingRequest) -> Refusal | None:
        """The allotment, then the pool; what one admitted is given back when the other refuses."""
        refusal = self.shares.admit(request) if self.shares is not None else None
        if refusal is not None:
            return refusal
        refusal = self.pools.admit(request)
        if refusal is not None and self.shares is not None:
            self.shares.release(request.request_id)
        return refusal

    def _release(self, request_id: str) -> None:
        """Give back the pool allocation and the allotment of ``request_id``.  Idempotent."""
        self.pools.release(request_id)
        if self.shares is not None:
            self.shares.release(request_id)

    def _book_back(self, entry: Entry) -> None:
        """The one place a finished request gives everything back: its pool
        allocation and allotment here; its instances' host calendars and class
        counts were released when each stopped; what its inert objects keep in vaults goes too.  Idempotent."""
        self._release(entry.id)
        if self.on_finish is not None:
            self.on_finish(entry)

    def _stop(self, ref: InstanceRef, reason: str) -> None:
        """Stop one instance on its host and tell its class (best effort: a
        host that cannot be reached is the watcher's to find)."""
        if self.stopper is None:
            return
        try:
            self.stopper.stop(ref, reason)
        except Exception:  # the host is unreachable; tick() will see it gone
            pass

    def _classes_forget(self, instance_id: str) -> None:
        """An instance that ended by itself: its host already let it go; its
        class object and host are told by a stop, which is idempotent."""
        entry = self.book.owner_of(instance_id)
        if entry is not None and instance_id in entry.refs:
            self._stop(entry.refs[instance_id], "ended")

