"""The Scheduler core: Legion's ``scheduleObjects`` and its companions.

``scheduleObjects(request)`` runs, in order:

0. the site's queue (:mod:`legionrm.scheduler.priority`): an unknown QoS, or
   one its user may not choose, is refused at submit; a held request, one
   whose dependencies, ``begin_at`` or array limit (:mod:`legionrm.scheduler.depend`) are not met, or one
   over a limit of its QoS, waits pending with the reason; waiting requests
   go in the order of the multifactor priority (QoS, fair share, age, size);
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

The Scheduler composes its parts, each in its own module: the request book
(:class:`~legionrm.scheduler.requests.RequestBook`), the queue
(:class:`~legionrm.scheduler.queue.RequestQueue`), the accounts
(:class:`~legionrm.scheduler.accounts.Accounts`), the planner
(:class:`Planner`) and the enactment
(:class:`~legionrm.scheduler.enactment.Enactment`); its tick is its base
class, :class:`~legionrm.scheduler.watch.tick.Ticking`.  One module builds them
all, :mod:`legionrm.scheduler.wiring`; the collection and the enactor are
ports there (``snapshot()`` and ``enact_schedule(EnactRequest)``), so the
same core runs in a test with in-process fakes and in the Scheduler actor
with Ray adapters.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from legionrm import codes
from legionrm.enactor.after import after_refusal
from legionrm.errors import SchedulingError
from legionrm.events.triggers import Triggers, past_events
from legionrm.models import (
    EnactResult,
    InstanceRef,
    ObjectRequest,
    PlacementFailure,
    Refusal,
    RequestInfo,
    SchedulerResponse,
    SchedulerSettings,
    SchedulingRequest,
    WorkResult,
)
from legionrm.scheduler.accounts import Accounts
from legionrm.scheduler.ahead.starts import AheadStarts
from legionrm.scheduler.backfill import Backfill, Profile, ProfileKeeper, with_walltime
from legionrm.scheduler.confirm import Activator, activation, refused_at_door, succeeded, validate_request
from legionrm.scheduler.depend import Arrays, Depend
from legionrm.scheduler.depend.hooks import cancel_never, end_run
from legionrm.scheduler.enactment import Enactment
from legionrm.scheduler.intake import GroupIntake, Steps
from legionrm.scheduler.planner import Plan, Planner
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.planning.window import ahead_of
from legionrm.scheduler.preempt import Preemption
from legionrm.scheduler.stages.advance import Stages, work_classes
from legionrm.scheduler.ports import EnactorPort, InstanceWatch, SnapshotSource, Swappable
from legionrm.scheduler.priority import SitePolicy, site_settings
from legionrm.scheduler.queue import PassGate, RequestQueue
from legionrm.scheduler.grow import NO_NODE
from legionrm.scheduler.replan import enact_with_replans, for_good, lift_vetoes, shunning
from legionrm.scheduler.requests import Entry, RequestBook
from legionrm.scheduler.watch import Results, end_reason
from legionrm.scheduler.watch.tick import Ticking
from legionrm.state import StoreFault

log = logging.getLogger(__name__)


class Scheduler(Ticking):
    """Legion's Scheduler with a queue.  Thread-safe for concurrent requests:
    planning reads an immutable snapshot and the enactor's reservations are
    the only writes, checked by the hosts themselves, so concurrent callers
    never double-book.

    A request lives in :attr:`book` until it ends.  One that cannot run now
    waits (``pending``, with its reason) and is tried again by
    :meth:`replan`, in :attr:`queue` order, whenever something may have
    freed room: an instance ended, a request was cancelled, a host joined or
    came back, a pool changed.  :meth:`tick` watches the running instances
    (their actors, their hosts, their walltimes) and re-plans when one ended.
    Every account (pool allocation, allotment, host calendar, class count) is
    booked back in :meth:`Accounts.book_back`, the one place that gives back.

    Write first, then act: every change is in the book's store before
    anything acts on it.  A write that fails (:class:`StoreFault`: the disk
    is full or failing) leaves the book as it was and undoes what the
    attempt did outside it (instances it started, its pool charge); a
    submit whose first write failed raises it (the id stays free), a later
    one answers ``pending`` with the fault as its failure.  :meth:`tick`
    settles what such a failure left half way once writes succeed again.

    Built by :func:`legionrm.scheduler.wiring.wire` from the cluster's
    :class:`SchedulerSettings`; ``activator`` places an inert object anew
    (the mobility's), ``also_running`` names the instances others started
    (the elastic cycle's: not orphans)."""

    def __init__(
        self,
        settings: SchedulerSettings,
        collection: Swappable[SnapshotSource],
        planner: Planner,
        book: RequestBook,
        triggers: Triggers,
        accounts: Accounts,
        enactment: Enactment,
        watch: InstanceWatch | None = None,
        *,
        activator: Activator | None = None,
        also_running: Callable[[], set[str]] | None = None,
        results: Results | None = None,
        clock: Callable[[], float],
    ) -> None:
        self.name = settings.name
        self._settings = settings
        self.orphan_grace_s = settings.orphan_grace_s  # a live system's may be lowered (the fault tests do)
        self._collection = collection
        self.planner = planner
        self.book = book
        self.triggers = triggers  # status events: every change the book records is fired there
        self.accounts = accounts
        self.enactment = enactment
        self._watch = watch
        self._activator = activator
        self._also_running = also_running
        self._clock = clock
        # runs' results and accounting records (none kept without a store)
        self.results = results if results is not None else Results(book, lambda: watch, None, self.name, clock)
        # the site's order and limits (QoS, fair share over the accounting records): queue.site
        self._queue_spec = settings.cluster.queue
        self.queue = RequestQueue(book, SitePolicy(site_settings(settings.cluster), self.results.store, clock,
                                                   settings.cluster.capacity().cpus), self._queue_spec.order)
        self._depend = self.queue.depend = Depend(book, clock)  # dependencies, begin_at, arrays (scheduler.depend)
        self._arrays = Arrays(book, self._depend)
        self._profiles = ProfileKeeper()  # the hosts' cpus over time, kept between passes
        self.backfill = Backfill(self._queue_spec.policy, self._queue_spec.backfill_depth, profile=self._profile,
                                 usage=self._profiles.usage)
        self._preemption = Preemption(book, self.queue.site, self._profile, self.backfill.depth, enactment.stop,
                                     accounts.book_back, clock, self.queue.claim, lambda: collection.get().snapshot())
        self._stages = Stages(work_classes(settings.cluster.classes), book, planner, collection, enactment,
                              self.queue.claim, self._preemption.holds_for)
        self._ahead = AheadStarts(book, enactment.enactor, book_back=accounts.book_back)  # starts ahead
        self.queue.intake = GroupIntake(self, Steps(clock, self._at_submit, self._attempt, self._behind))  # in groups
        self._ticks = 0
        if book.store is not None:  # restarted: each request's past back in its stream, before any live event
            self.triggers.seed(e for entry in book.entries() for e in past_events(entry.info()))
            self.accounts.recover(book)

    @property
    def instances(self) -> dict[str, InstanceRef]:
        """The running instances this scheduler started, by id (a copy)."""
        return {i.instance_id: i for i in self.book.running_instances()}

    # --- collaborators (Legion's get/set pairs return the prior value) -------

    def getCollection(self) -> Any:
        return self._collection.get()

    def setCollection(self, collection: SnapshotSource) -> Any:
        return self._collection.swap(collection)

    def getEnactor(self) -> Any:
        return self.enactment.enactor()

    def setEnactor(self, enactor: EnactorPort) -> Any:
        return self.enactment.set_enactor(enactor)

    # --- planning ---------------------------------------------------------------

    def make_schedules(self, request: SchedulingRequest) -> Plan:
        """The suite of schedules ``scheduleObjects`` would enact, without
        enacting them.  Pure read; raises SchedulingError for a malformed
        request and MILError for a bad constraint."""
        validate_request(request)
        request, refused = self.accounts.shape(request)
        if refused:
            return Plan(request.request_id, [], refused, [])
        return self.planner.make_schedules(request, self._collection.get().snapshot())

    def getCandidatePlacements(self, class_info: ObjectRequest, caller: Any) -> list[str]:
        """Feasible hosts for one instance of ``class_info``, best first."""
        return self.planner.candidates(class_info, caller, self._collection.get().snapshot())

    def explain(self, request: SchedulingRequest, host: str) -> str:
        """Why ``host`` would or would not be used for ``request``, by name."""
        return self.make_schedules(request).why(host)

    # --- the main call --------------------------------------------------------

    def scheduleObjects(self, request: SchedulingRequest, *, try_now: bool = True) -> SchedulerResponse:
        """Admit, plan and enact ``request``.  Returns ok with the instances
        started (state ``running``); else not ok with every placement's
        failure, the request either ``pending`` (it waits in the queue and is
        placed when capacity frees; only when ``request.wait``) or
        ``failed`` (it can never run, or it asked not to wait).  Not
        idempotent (it starts instances); a repeated request id is refused.

        A request that waits is tried now only if the queue's pass would try
        it here (:meth:`Backfill.gate`: it delays no reserved start and
        strict order puts nobody before it); ``try_now=False`` only queues
        it for the next pass.  Work without a walltime gets its QoS's
        ``max_walltime_s``, else the queue's ``default_walltime_s``.  An array is its tasks (:mod:`.depend.arrays`)."""
        if request.array is not None and request.array_index is None:
            return self._arrays.submit(request, lambda task, now: self.scheduleObjects(task, try_now=try_now and now))
        request, refusal = self._at_submit(request)
        if refusal is not None:  # refused at submit, never queued: no account for its work, or no QoS for it
            return refused_at_door(request, refusal)
        # claimed before the queue can see it, so a re-plan never races its first attempt
        with self.queue.claim(request.request_id) as claimed:
            if not claimed:
                raise SchedulingError(f"request id {request.request_id!r} was already scheduled")
            entry = self.book.add(request)
            why = self.queue.blocked(entry)
            if why is not None:  # held, or over a limit of its QoS: it waits
                return self._wait(entry, why)
            holds = self.backfill.gate(entry, self.queue.ready(self.queue.order())) if try_now else None
            if holds is not None:
                return self._attempt(entry, holds)
            if request.wait:
                return self._queued(entry, self._behind() if try_now else "queued for the next pass")
            return self._refused(entry, [PlacementFailure(key="*", resource="queue", code=codes.QUEUE_BEHIND,
                                                          reason=self._behind(), stage="plan")], 0)

    def _at_submit(self, request: SchedulingRequest) -> tuple[SchedulingRequest, Refusal | None]:
        """``request`` with its walltime, validated (SchedulingError, MILError), and what refuses it
        at submit (no account for its work, or no QoS for it; None: nothing)."""
        request = with_walltime(request, self.queue.site.max_walltime(request) or self._queue_spec.default_walltime_s)
        validate_request(request, self._clock())
        refusal = self.accounts.refuse_owner(request)
        for check in (after_refusal, self.queue.site.refuse):  # an object graph that cannot run; no QoS for it
            refusal = check(request) if refusal is None else refusal
        return request, refusal

    def replan(self) -> int:
        """Try every pending request again, in queue order, then let preemption free cpus for one
        (:mod:`~legionrm.scheduler.preempt`); returns how many started.  Called on events (and by
        :meth:`tick`).  If a re-plan is already running, this asks it to go round once more and returns 0."""
        started = self.queue.replan(self._walk, self._wait)
        if self._preemption.run(lambda: self.queue.ready(self.queue.order())):
            started += self.queue.replan(self._walk, self._wait)  # the freed cpus, kept for the preemptor
        return started

    def _walk(self, order: list[Entry], gate: PassGate) -> int:
        """One pass of the backfill rules over ``order``, each attempt under the pass's QoS limits."""
        return self.backfill.walk(order, lambda e, holds: gate.attempt(e, lambda x: self._attempt(x, holds).ok),
                                  skip=gate.skip_for(order))

    def _profile(self) -> Profile:
        """The hosts' cpus over time for one pass: the snapshot's free cpus, given back as walltimes end."""
        return self._profiles.profile(self._collection.get().snapshot(), self.book.in_state("running"))

    def _behind(self) -> str:
        return ("requests before it wait, and the queue is strict first come, first served"
                if self.backfill.mode == "fcfs" else "starting it now would delay a reserved start")

    def _queued(self, entry: Entry, why: str) -> SchedulerResponse:
        """``entry`` waits for the next pass without an attempt now."""
        self.book.move(entry, "pending", f"{codes.QUEUE_BEHIND}: {why}")
        return SchedulerResponse(request_id=entry.id, ok=False, message=why, state=entry.state)

    def cancel(self, request_id: str, reason: str = "cancelled by its user", replan: bool = True) -> RequestInfo:
        """End ``request_id``: a pending request leaves the queue; a running
        one has its instances stopped; everything is booked back (an array's id: every task).
        Idempotent on a finished request (returns its info unchanged).
        Raises SchedulingError for an unknown id."""
        if (whole := self._arrays.cancel(request_id, lambda task: self.cancel(task, reason, False))) is not None:
            self.replan()
            return whole
        entry = self._entry(request_id)
        if entry.final:
            return entry.info()
        if self.queue.under_way(entry):  # the attempt under way finishes first; its result is stopped at once
            self.queue.ask_cancel(request_id)
            return entry.info()
        before = entry.draft()  # as it was: a reserved request's advance reservations go after the write
        # ended in the book first (one write), so the watch never takes a stop for an end of its own
        stopping = self.book.cancel(entry, reason)
        if stopping is not None:
            self._ahead.release(before)  # (none held: nothing)
            for ref in stopping:
                self.enactment.stop(ref, reason)
            self.accounts.book_back(entry)
        if replan:
            self.replan()
        return entry.info()

    def request_info(self, request_id: str) -> RequestInfo:
        """One request's whole story (``legionrm show``), from the live book or
        the durable history (then ``archived``), with its reserved start while
        it waits at the top of the queue (an array's id: its summary).  SchedulingError if unknown."""
        if self.book.find(request_id) is None and (whole := self._arrays.info(request_id)) is not None:
            return whole
        entry = self._entry(request_id)
        info = entry.info()
        reserved = self.backfill.reserved.get(entry.id) if entry.state == "pending" else None
        return info if reserved is None else info.model_copy(update={"reserved_start": reserved})

    def list_requests(self, user: str | None = None, state: str | None = None) -> list[RequestInfo]:
        """The live and recent requests, oldest first."""
        return self.book.list(user, state)

    # --- ends -------------------------------------------------------------------

    def instance_ended(self, instance_id: str, reason: str = "ended", state: str = "ended", *,
                       replan: bool = True, result: WorkResult | None = None) -> bool:
        """An instance is gone (its actor or run returned or died, its walltime
        ran out, its class destroyed it, its host died).  Its request completes
        when it was the last one (ends ``node_lost`` when an instance was ``lost``, or is requeued:
        :mod:`.depend.requeue`; fails when its work failed: ``result``), every account is booked back, and
        waiting requests are re-planned.  Returns False for an unknown or
        already ended instance (idempotent).  With ``replan=False`` the caller
        re-plans once after several ends."""
        reason = end_reason(instance_id, result, reason)
        entry = self.book.end_instance(instance_id, state, reason, result)
        if entry is None:
            return False
        end_run(self, entry, instance_id, reason)  # the request ends with its last instance, or is requeued
        if replan:
            self.replan()
        return True

    # --- one attempt ------------------------------------------------------------

    def _attempt(self, entry: Entry, holds: Sequence[Hold] = ()) -> SchedulerResponse:
        """Admit, plan and enact ``entry`` once, keeping ``holds`` (the
        queue's reserved starts); leaves it running, pending or failed.  A
        write that fails undoes what the attempt did and answers with the
        fault (the request stays where its last write left it)."""
        holds = (*holds, *self._preemption.holds_for(entry))  # cpus a preemption freed for another request
        try:
            return self._try(entry, holds)
        except StoreFault as fault:
            if entry.state in ("admitted", "placing"):  # back to the queue, if the store takes it already
                try:
                    self.book.move(entry, "pending", str(fault)[:500])
                except StoreFault:
                    pass  # it keeps its pool charge, as the store says; the tick settles it (see settle_half_done)
            if entry.state not in ("admitted", "placing"):
                self.accounts.release(entry.id)
            failure = PlacementFailure(key="*", resource=self.name, code=fault.code, reason=str(fault), stage="plan")
            return SchedulerResponse(request_id=entry.id, ok=False, failures=(failure,), message=str(fault),
                                     state=entry.state)

    def _try(self, entry: Entry, holds: Sequence[Hold]) -> SchedulerResponse:
        request = lift_vetoes(self.book, entry, self._collection.get().snapshot)  # owners that may say yes now
        entry.attempts += 1
        running = {i: ref for i in request.activate if (ref := self.book.running_ref(i)) is not None}
        active, unknown = activation(request.activate, running, self.name, self._activator)
        if unknown:
            return self._refused(entry, unknown, 0)
        if not request.objects:
            self.book.move(entry, "admitted", "nothing to place")
            self.book.move(entry, "placing", "activating")
            self.book.move(entry, "running", "activated")
            if self.book.finish(entry, "completed", "activated: the objects run under the requests that made them"):
                self.accounts.book_back(entry)
            return succeeded(entry, active, 0, None, "activated: ")
        too_big = self.accounts.too_big(request)
        if too_big is not None:
            return self._refused(entry, [too_big], 0)
        request, refused = self.accounts.shape(request)
        if refused:
            return self._refused(entry, refused, 0)
        refusal = self.accounts.admit(request)
        if refusal is not None:
            return self._refused(entry, [PlacementFailure(
                key="*", resource=refusal.by, code=refusal.code, reason=refusal.reason, stage="plan")], 0)
        self.book.move(entry, "admitted", f"admitted to pool {request.pool}")
        request = self._stages.first(request)  # a later stage starts once what it follows ended well
        try:
            plan = self.planner.make_schedules(request, self._collection.get().snapshot(), holds)
            if not plan.ok:
                return self._refused(entry, plan.failures, 0)
            self.book.move(entry, "placing", f"enacting {len(plan.masters)} master schedule(s)")
            ahead = ahead_of(request, self._clock())  # a future start: reserve now, start then
            timeout = None if ahead is None else self._ahead.timeout(self.enactment.token_timeout_s)
            plan, result = enact_with_replans(
                request, plan, lambda p, n: self.enactment.enact(request, p, n, ahead, timeout, entry.attempts),
                lambda r: self._fresh_plan(r, holds),
                lambda why: self.book.move(entry, "placing", why))
        except StoreFault:
            raise
        except Exception as exc:  # (a BaseException ends the process: a restart's recover puts it back)
            if not entry.final:
                self.book.move(entry, "failed", f"{type(exc).__name__}: {exc}"[:300])
            self.accounts.release(request.request_id)
            raise
        if not result.ok:
            failures = [f for a in result.attempts for f in a.failures]
            return self._refused(entry, failures, len(plan.masters), result)
        entry.failures = tuple(f for a in result.attempts for f in a.failures)  # the vetoes met on the way (`show`)
        prefix = f"master {result.master + 1} of {len(plan.masters)}: "
        try:
            if ahead is not None:
                prefix = self._ahead.reserve(entry, result, len(plan.masters))
            else:
                self.book.attach(entry, result.instances, "running", prefix[:-2], self._stages.names(result, plan))
        except StoreFault:  # nothing the book does not know keeps running (or reserved)
            for ref in result.instances:
                self.enactment.stop(ref, "its request could not be written")
            if ahead is not None:
                self._ahead.release(entry.draft(state="reserved", held=result))
            raise
        if self.queue.cancel_asked(request.request_id):
            try:
                self.cancel(request.request_id)
            except StoreFault as fault:  # it runs on: the caller's cancel is answered by the state it sees
                log.warning("the cancel of %s waits for the store: %s", request.request_id, fault)
        return succeeded(entry, active + list(result.instances), len(plan.masters), result, prefix)

    def _fresh_plan(self, request: SchedulingRequest, holds: Sequence[Hold] = ()) -> Plan | None:
        plan = self.planner.make_schedules(request, self._collection.get().snapshot(), holds)
        return plan if plan.ok else None

    def _refused(self, entry: Entry, failures: Any, masters: int, result: EnactResult | None = None
                 ) -> SchedulerResponse:
        """Not now: back to the queue (``pending``, with the first reason) if
        the request waits and nothing rules it out for good; else failed."""
        failures = tuple(failures)
        msg = "; ".join(f"{f.key} on {f.resource or '-'}: {f.code}: {f.reason}" for f in failures[:5]) or "no schedule"
        never = for_good(failures, NO_NODE if self.accounts.grows else ())  # autoscaler: a new node may end those
        if request_cancelled := self.queue.cancel_asked(entry.id):
            self.book.move(entry, "cancelled", "cancelled while placing", failures=failures)
        elif never or not entry.request.wait or entry.attempts >= self._settings.max_attempts:
            why = (f"{never[0].code}: {never[0].reason}" if never else
                   msg if not entry.request.wait else f"gave up after {entry.attempts} attempts: {msg}")
            self.book.move(entry, "failed", why[:500], failures=failures)
        else:
            self.book.move(entry, "pending", f"{failures[0].code}: {failures[0].reason}"[:500] if failures else msg,
                           failures=failures, earliest_start=self.book.next_end(),
                           **shunning(entry.request, failures, self._collection.get().snapshot))
        if entry.final and not request_cancelled:
            self.accounts.book_back(entry)
        else:  # written: its pool charge (if it had one) goes only now
            self.accounts.release(entry.id)
        return SchedulerResponse(request_id=entry.id, ok=False, failures=failures, masters=masters,
                                 enact=result, message=msg, state=entry.state)

    def _wait(self, entry: Entry, why: Refusal) -> SchedulerResponse:
        """Not tried now: held, a dependency, or over a limit of its QoS (pending, with that as its reason)."""
        if why.code == codes.DEPEND_NEVER:  # a dependency that can never be met
            return cancel_never(self, entry, why)
        return self._refused(entry, [PlacementFailure(key="*", resource=why.by, code=why.code, reason=why.reason,
                                                      stage="plan")], 0)

    # --- helpers --------------------------------------------------------------

    def _entry(self, request_id: str) -> Entry:
        entry = self.book.find(request_id)
        if entry is None:
            raise SchedulingError(f"no request {request_id!r} is known to scheduler {self.name!r}", code=codes.REQUEST_UNKNOWN)
        return entry
