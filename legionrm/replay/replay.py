"""A trace replayed through the real Scheduler, in simulated time.

The Scheduler is the real one (:func:`~legionrm.scheduler.wiring.wire`:
its queue, site policy, backfill and planner), planning over a real
Collection and negotiating through the real Enactor, with a clock the
replay moves.  Below the Enactor, ``hosts`` simulated hosts of
``cpus_per_host`` cpus each are the replay's light hosts
(:class:`~legionrm.replay.hosts.ReplayHosts`: the same grants, refusals
and reported attributes as live simulated hosts, without signed tokens,
class objects or calendars; see that module for what they leave out).
A job of ``p`` processors is one request: ``p //
cpus_per_host`` whole-host instances (class ``Job``) and one instance of the
rest (class ``JobPart``), each with the job's requested time as its
walltime.  At each time point, in order:

1. the jobs ending then are released (their instances stop on their hosts
   and the Scheduler is told, as its watch would), and leave its live book
   (:func:`settle`, as its tick would);
2. the jobs submitted then are queued (``scheduleObjects(..., try_now=False)``);
3. one scheduling pass runs (``Scheduler.replan``).

A job ends at its start plus its run time, or at its walltime if that is
shorter (the Scheduler stops work at its walltime).  The hosts report to the
Collection when work on them ends (what the Scheduler started since, it
counts itself: :meth:`~legionrm.scheduler.backfill.Profile.unreported`), so
every attempt of a pass plans over what is really free.

The policies (:data:`POLICIES`) are the ``[queue]`` table's: ``fcfs`` and
``easy`` take the jobs in submission order; ``site`` is the queue as the
site configures it (its priority order and EASY with its
``backfill_depth``).  Pure of Ray.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from legionrm.collection.collection import Collection
from legionrm.enactor.enactor import Enactor
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    CollectionSettings,
    HostSpec,
    Identity,
    ObjectRequest,
    QueueSpec,
    SchedulerSettings,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.replay.hosts import ReplayHosts
from legionrm.replay.metrics import Outcome
from legionrm.replay.swf import Job
from legionrm.scheduler.depend.hooks import end_runs
from legionrm.scheduler.requests import Entry
from legionrm.scheduler.scheduler import Scheduler
from legionrm.scheduler.wiring import SchedulerPorts, wire

POLICIES: dict[str, QueueSpec] = {
    "fcfs": QueueSpec(policy="fcfs", order="submit"),
    "easy": QueueSpec(policy="easy", backfill_depth=1, order="submit"),
    "site": QueueSpec(),
}
"""Each policy's ``[queue]`` table."""

WHOLE, PART = "Job", "JobPart"
FULL_REPORT_S = 100 * 86_400.0
"""Every host reports at least this often in simulated time (a host whose
reports stop goes stale after 1,000 days of silence)."""
GC_THRESHOLDS = (20_000, 20, 100)
"""The collector's thresholds while a replay runs (the default is 700, 10, 10)."""
EPOCH = 1_000_000_000.0
"""Simulated time starts here (a trace's time 0), so times are plausible epochs."""


@dataclass
class Replay:
    """What a replay gives back: each job's outcome, and each job's first
    reserved start (EASY's shadow time when it first reached the top); times
    in seconds of the trace."""

    outcomes: list[Outcome] = field(default_factory=list)
    reserved: dict[int, float] = field(default_factory=dict)
    too_big: list[int] = field(default_factory=list)
    """The jobs left out, by number: more processors than the whole cluster has."""


def cluster(hosts: int, cpus_per_host: int, queue: QueueSpec) -> ClusterSpec:
    """The simulated cluster: ``hosts`` alike hosts, the two job classes, ``queue``."""
    return ClusterSpec(
        # the hosts report whenever they change, and all of them every FULL_REPORT_S
        collection=CollectionSettings(heartbeat_interval_s=86_400.0, stale_after=1000),
        hosts=tuple(HostSpec(name=f"n{i:05d}", attributes={"cpus": cpus_per_host, "memory_gb": 1e6})
                    for i in range(hosts)),
        classes=(ClassSpec(name=WHOLE), ClassSpec(name=PART)), queue=queue)


def request_of(job: Job, cpus_per_host: int) -> SchedulingRequest:
    whole, rest = divmod(job.procs, cpus_per_host)
    wall = max(job.requested, 1.0)
    objects = []
    if whole:
        objects.append(ObjectRequest(class_name=WHOLE, count=whole, cpus=cpus_per_host, memory_gb=0, walltime_s=wall))
    if rest:
        objects.append(ObjectRequest(class_name=PART, count=1, cpus=rest, memory_gb=0, walltime_s=wall))
    return SchedulingRequest(request_id=f"job{job.number:010d}", identity=Identity(user=f"u{job.user}", groups=(f"g{job.group}",)),
                             objects=tuple(objects))


def build(spec: ClusterSpec, clock: Callable[[], float]) -> tuple[Scheduler, ReplayHosts]:
    """The real Scheduler (:func:`~legionrm.scheduler.wiring.wire`) over a Collection of ``spec``'s
    hosts, negotiating through the real Enactor with the replay's hosts (:mod:`.hosts`)."""
    collection = Collection(heartbeat_interval_s=spec.collection.heartbeat_interval_s,
                            stale_after=spec.collection.stale_after, clock=clock)
    fleet = ReplayHosts(spec.hosts, collection, clock)
    # simulated hosts never veto: one master without deltas is all a plan needs
    settings = SchedulerSettings(cluster=spec, max_masters=1, max_deltas=0, max_attempts=10**9)
    ports = SchedulerPorts(collection=collection, clock=clock, stopper=fleet,
                           enactor=lambda approve: Enactor(fleet, clock=clock, approve=approve))
    return wire(settings, ports).scheduler, fleet


def settle(sched: Scheduler, entry: Entry) -> None:
    """A finished request leaves the live book (for its memory of recent ones) and its events are
    forgotten, as a live Scheduler's tick settles it once its accounting is written (a replay keeps
    no accounting store: nothing to write first).  The passes then read only what waits and runs,
    not every job ever submitted."""
    for rid in sched.book.settle([entry]):
        sched.triggers.forget(rid)


class _Clock:
    def __init__(self) -> None:
        self.now = EPOCH

    def __call__(self) -> float:
        return self.now


def replay(jobs: Sequence[Job], hosts: int, cpus_per_host: int, policy: str | QueueSpec = "easy",
           progress: Callable[[int, int], None] | None = None) -> Replay:
    """Replay ``jobs`` (see the module).  A job of more processors than the
    whole cluster has is left out (:attr:`Replay.too_big`), as trace
    simulators leave it out: it could never start, and at the head of an
    fcfs queue it would hold every job behind it for ever."""
    queue = POLICIES[policy] if isinstance(policy, str) else policy
    too_big = [j.number for j in jobs if j.procs > hosts * cpus_per_host]
    if too_big:
        jobs = [j for j in jobs if j.procs <= hosts * cpus_per_host]
    clock = _Clock()
    sched, fleet = build(cluster(hosts, cpus_per_host, queue), clock)
    # what lives on through the replay (the modules, the cluster just built) is left out of the
    # collector's full passes: a replay runs in its own process (``legionrm simulate``, a
    # benchmark), and these objects would only be read again by each of them
    gc.freeze()
    # and the collector runs rarely: a replay makes few cycles, and at the default thresholds its
    # collections were ~10% of a 10,000-job replay's CPU (mostly full passes over its live requests)
    # for no memory saved (the same peak at 4,000 jobs)
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        out = _run(sched, fleet, jobs, cpus_per_host, clock, progress)
        out.too_big = too_big
        return out
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _run(sched: Scheduler, fleet: ReplayHosts, jobs: Sequence[Job], cpus_per_host: int, clock: _Clock,
         progress: Callable[[int, int], None] | None) -> Replay:
    by_id = {f"job{j.number:010d}": j for j in jobs}
    out = Replay()
    ends: list[tuple[float, str]] = []  # (time, request id)
    changed: set[str] = set()

    def report() -> None:
        if changed:
            fleet.report(sorted(changed))
            changed.clear()

    def seen(event: StatusEvent) -> None:  # (a request's own "started": it hears no instance's)
        if sched.book.get(event.request_id) is None:
            return
        job = by_id[event.request_id]
        end = clock.now + min(job.run, max(job.requested, 1.0))
        heapq.heappush(ends, (end, event.request_id))
        out.outcomes.append(Outcome(job.number, job.submit, clock.now - EPOCH, end - EPOCH, job.procs, job.user))

    # nobody follows a replay's streams: only the events a trigger hears are built
    sched.triggers.streams = False
    sched.triggers.register("*", ["started"], seen, instances=False)
    order = sorted(jobs, key=lambda j: (j.submit, j.number))
    i, full = 0, EPOCH
    while i < len(order) or ends:
        t = min(EPOCH + order[i].submit if i < len(order) else float("inf"), ends[0][0] if ends else float("inf"))
        clock.now = t
        if t - full > FULL_REPORT_S:
            fleet.report()
            full = t
        while ends and ends[0][0] <= t:
            _, rid = heapq.heappop(ends)
            entry = sched.book.get(rid)
            live = entry.live_instances() if entry is not None else []
            for iid in live:
                ref = entry.refs[iid]
                sched.enactment.stop(ref, "ended")
                changed.add(ref.host)
            if live:  # the Scheduler is told, as its watch would tell it (one write for the request's instances)
                end_runs(sched, entry, live, "ended")
            if entry is not None and entry.final:  # it leaves the live book, as a tick's sweep settles it
                settle(sched, entry)
        report()
        while i < len(order) and EPOCH + order[i].submit <= t:
            sched.scheduleObjects(request_of(order[i], cpus_per_host), try_now=False)
            i += 1
        sched.replan()
        if any(by_id[rid].number not in out.reserved for rid in sched.backfill.blocked):  # (else none is new)
            for rid, start in sched.backfill.reserved.items():
                out.reserved.setdefault(by_id[rid].number, start - EPOCH)
        if progress is not None:
            progress(i, len(order))
    return out
