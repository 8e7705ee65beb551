"""The Scheduler as a Ray actor: a thin shell over :class:`Scheduler`.

Threaded (``max_concurrency``) because the Enactor calls back for approval
while a ``scheduleObjects`` call is waiting on it, and because several
users' requests may be planned at once.  The adapters below are the only
places this shell talks to other actors.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import ray

from legionrm.auth import CallSigner, VerifiedCaller, attest
from legionrm.auth.guard import SCHEDULER as SCHEDULER_AGENT
from legionrm.auth.guard import Guard, load_agent
from legionrm.collection.actor import RemoteCollection
from legionrm.hostobj.actor import RemoteHostPort
from legionrm.models import (
    AuditFinding,
    ClassSpec,
    ClusterSpec,
    CycleReport,
    ElasticJobRequest,
    EnactRequest,
    EnactResult,
    Identity,
    ObjectRequest,
    PlacementFailure,
    Refusal,
    RequestInfo,
    ReservedStart,
    Resources,
    ScheduleAttempt,
    ScheduleProposal,
    SchedulerResponse,
    SchedulerStatus,
    ScheduleSuite,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.naming import host_name, named_actor
from legionrm.scheduler.audit import audit
from legionrm.scheduler.build import core_for_cluster
from legionrm.scheduler.door import SchedulerDoor, own_report, own_status
from legionrm.scheduler.elastic import CycleRunner, ElasticCycle, HostStopper
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.ports import PoolGate
from legionrm.scheduler.scheduler import Scheduler
from legionrm.scheduler.sharegate import ShareGate
from legionrm.scheduler.watch import HostWatch
from legionrm.state import RequestStore

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 120.0
WATCH_TIMEOUT_S = 5.0


class RemoteEnactor:
    """``enact_schedule`` on an Enactor actor, with this scheduler as approver."""

    attester: Any = None
    """With authentication on: a :class:`~legionrm.auth.Credential` of the
    Scheduler, which vouches for each request's holder to every resource its
    schedules name (an :class:`~legionrm.auth.Attestation` per resource)."""

    abandon: Any = None
    """Called with a request id when the Enactor died (or never answered)
    during its enactment: cancels what it may have reserved for it."""

    def __init__(self, handle: Any, approver: tuple[Any, str] | None = None) -> None:
        self.handle = handle
        self.approver = approver

    def enact_schedule(self, schedules: EnactRequest) -> EnactResult:
        if self.attester is not None:
            schedules = attest_schedules(self.attester, schedules)
        try:
            return ray.get(self.handle.enact_schedule.remote(schedules, self.approver), timeout=CALL_TIMEOUT_S)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            # the Enactor died (Ray restarts it) or hung: nothing it reserved for this request
            # is held by anyone now, so cancel it, and answer the request as not placed
            if self.abandon is not None:
                self.abandon(schedules.request_id)
            why = f"the enactor did not finish: {type(exc).__name__}"
            return EnactResult(ok=False, attempts=(ScheduleAttempt(master=0, deltas_tried=0, succeeded=False, failures=(
                PlacementFailure(key="*", resource="enactor", code=ENACTOR_LOST, reason=why),)),))

    def start_reserved(self, held: ReservedStart) -> EnactResult:
        try:
            return ray.get(self.handle.start_reserved.remote(held, self.approver), timeout=CALL_TIMEOUT_S)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            return EnactResult(ok=False, attempts=(ScheduleAttempt(master=0, deltas_tried=0, succeeded=False, failures=(
                PlacementFailure(key="*", resource="enactor", code=ENACTOR_LOST,
                                 reason=f"the enactor did not start the reservation: {type(exc).__name__}"),)),))


class ActorCallback:
    """A trigger's subscriber that is an actor's method (Legion's callback):
    each event is one Ray call, never waited for.  An earlier call that
    failed, or gave no answer within ``timeout_s``, raises on the next event,
    so the registry counts it and drops the trigger after its failures; the
    Scheduler never waits on a subscriber."""

    MAX_PENDING = 100

    def __init__(self, handle: Any, method: str, timeout_s: float = 10.0) -> None:
        self.handle, self.method, self.timeout_s = handle, method, timeout_s
        self._pending: list[tuple[float, Any]] = []
        self._lock = threading.Lock()  # events fire from the tick thread and the call threads

    def __call__(self, event: StatusEvent) -> None:
        now = time.monotonic()
        with self._lock:
            failed = self._settle(now)
            self._pending.append((now, getattr(self.handle, self.method).remote(event)))
        if failed is not None:
            raise failed

    def _settle(self, now: float) -> Exception | None:
        """Forget the calls that answered; the last failure among them (or a call overdue), if any."""
        if not self._pending:
            return None
        ready = set(ray.wait([r for _, r in self._pending], num_returns=len(self._pending), timeout=0)[0])
        failed: Exception | None = None
        still = []
        for t, ref in self._pending:
            if ref in ready:
                try:
                    ray.get(ref, timeout=0)
                except Exception as exc:  # noqa: BLE001 - the subscriber's failure
                    failed = exc
            elif now - t > self.timeout_s:
                failed = TimeoutError(f"{self.method} gave no answer within {self.timeout_s:g} s")
            else:
                still.append((t, ref))
        self._pending = still[-self.MAX_PENDING:]
        return failed


ENACTOR_LOST = "enactor.lost"
"""The failure code of an enactment whose Enactor died or never answered."""


def attest_schedules(credential: Any, schedules: EnactRequest, ttl_s: float = 300.0) -> EnactRequest:
    """``schedules`` with the Scheduler's attestation of its holder to every
    host and vault they name (the holder is the verified caller: the door put it there)."""
    names = {n for m in schedules.masters for sched in (m, *m.deltas) for p in sched.placements
             for n in (p.host, p.vault) if n}
    who = VerifiedCaller(name=schedules.holder.user, kind="user", groups=tuple(schedules.holder.groups))
    now = time.time()
    att = {n: attest(credential, who, schedules.request_id, n, now, ttl_s).model_dump(mode="json") for n in sorted(names)}
    return schedules.model_copy(update={"attestations": att})


class RemoteClassPort:
    """``instance_stopped`` on a class actor (the stopper tells the class)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def instance_stopped(self, instance_id: str) -> bool:
        return ray.get(self.handle.instance_stopped.remote(instance_id), timeout=CALL_TIMEOUT_S)


def ray_stopper(carriers: dict[str, Any], classes: dict[str, Any], signer: CallSigner | None = None) -> HostStopper:
    """A stopper over Ray: a host's carrier from ``carriers`` (host name ->
    host or host-group actor), else the host's own named actor.  With
    ``signer`` (the Scheduler agent's) each stop carries its proof."""

    def port(host: str) -> RemoteHostPort | None:
        handle = carriers.get(host) or named_actor(host_name(host))
        return RemoteHostPort(handle, CALL_TIMEOUT_S, signer=signer) if handle is not None else None

    return HostStopper(port, {name: RemoteClassPort(h) for name, h in classes.items()})


class RemoteCarrier:
    """``list_instances(host)`` on the actor carrying a host (the watch's view)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def list_instances(self, host: str | None) -> list:
        return ray.get(self.handle.list_instances.remote(host), timeout=WATCH_TIMEOUT_S)


def _unique(handles: Any) -> dict[str, Any]:
    """Actor handles by actor id (a group carries many hosts; each host's copy
    of its handle is a separate object once shipped to this actor)."""
    return {h._actor_id.hex(): h for h in handles}


def ray_watch(carriers: dict[str, Any]) -> HostWatch:
    """The instance watch over Ray: a host's carrier, else the host's own named actor."""

    def carrier(host: str) -> RemoteCarrier | None:
        handle = carriers.get(host) or named_actor(host_name(host))
        return RemoteCarrier(handle) if handle is not None else None

    def every() -> list[RemoteCarrier]:
        return [RemoteCarrier(h) for h in _unique(carriers.values()).values()]

    return HostWatch(carrier, every)


@ray.remote(num_cpus=0, max_concurrency=4)
class PoolActor:
    """The one owner of a system's resource-pool accounting: every Scheduler
    actor (and its elastic cycle) admits and releases through it, so they
    share one set of pool totals.  Holds one pool gate and forwards."""

    def __init__(self, gate: PoolGate) -> None:
        self.gate = gate

    def ping(self) -> str:
        return "ok"

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        return self.gate.admit(request)

    def release(self, request_id: str) -> None:
        self.gate.release(request_id)

    def held(self) -> dict[str, str]:
        held = getattr(self.gate, "held", None)
        return held() if callable(held) else {}

    def report(self) -> dict[str, dict[str, Any]]:
        report = getattr(self.gate, "report", None)
        return report() if callable(report) else {}

    def capacity(self) -> dict[str, float] | None:
        cap = getattr(self.gate, "capacity", None)
        return dict(cap) if isinstance(cap, dict) else None

    def set_capacity(self, capacity: Resources) -> None:
        set_capacity = getattr(self.gate, "set_capacity", None)
        if callable(set_capacity):
            set_capacity(capacity)


class RemotePoolGate:
    """A pool gate over the :class:`PoolActor` (the Scheduler's view of the shared pools)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def _call(self, method: str, *args: Any) -> Any:
        return ray.get(getattr(self.handle, method).remote(*args), timeout=CALL_TIMEOUT_S)

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        return self._call("admit", request)

    def release(self, request_id: str) -> None:
        self._call("release", request_id)

    def held(self) -> dict[str, str]:
        return self._call("held")

    def report(self) -> dict[str, dict[str, Any]]:
        return self._call("report")

    @property
    def capacity(self) -> dict[str, float] | None:
        return self._call("capacity")

    def set_capacity(self, capacity: Resources) -> None:
        self._call("set_capacity", capacity)


@ray.remote(num_cpus=0, max_concurrency=8, concurrency_groups={"control": 4})
class SchedulerActor:
    """``cluster`` (optional) brings the ``[fairshare]`` policy for the elastic
    cycle; ``carriers`` maps host names to the actors that carry them and
    ``class_actors`` class names to class actors, for stopping instances."""

    def __init__(self, collection: Any, enactor: Any, classes: list[ClassSpec] | None = None,
                 pools: PoolGate | None = None, name: str = "scheduler", cluster: ClusterSpec | None = None,
                 carriers: dict[str, Any] | None = None, class_actors: dict[str, Any] | None = None,
                 tick_s: float = 1.0, pool_owner: Any = None, state_path: str | None = None,
                 vault_actors: dict[str, Any] | None = None, auth_home: str | None = None) -> None:
        self._carriers = dict(carriers or {})
        self._vaults = dict(vault_actors or {})
        self._class_actors = dict(class_actors or {})
        stop_signer = CallSigner(load_agent(auth_home, SCHEDULER_AGENT), time.time) if auth_home else None
        self_handle = ray.get_runtime_context().current_actor
        coll, enact = RemoteCollection(collection, CALL_TIMEOUT_S), RemoteEnactor(enactor, (self_handle, "approve"))
        if pool_owner is not None:  # the system's shared pools, owned by one PoolActor
            pools = RemotePoolGate(pool_owner)
        cluster = cluster or ClusterSpec()
        self.core = Scheduler(coll, enact, Planner({c.name: c for c in classes or ()}), pools,
                              shares=ShareGate.from_core(core_for_cluster(cluster)), name=name,
                              stopper=ray_stopper(carriers or {}, class_actors or {}, stop_signer),
                              watch=ray_watch(carriers or {}),
                              store=RequestStore(state_path) if state_path else None,
                              also_running=lambda: self.cycle.instance_ids())
        self._ticking = threading.Event()
        threading.Thread(target=self._tick_loop, args=(tick_s,), name="scheduler-tick", daemon=True).start()
        # the cycle's growth is confirmed by approve_growth: the DUCC core decided it already
        grow = RemoteEnactor(enactor, (self_handle, "approve_growth"))
        self.cycle = ElasticCycle(
            core_for_cluster(cluster), grow, ray_stopper(carriers or {}, class_actors or {}, stop_signer), coll,
            interval_s=float(cluster.fairshare.get("interval_s", 10.0)), name=f"{name}-cycle",
            pools=self.core.pools,
        )
        enact.abandon = grow.abandon = self._abandon_enactment
        self.runner = CycleRunner(self.cycle)
        self.runner.start()
        self._auth_setup(auth_home)

    def _abandon_enactment(self, request_id: str) -> int:
        """Ask every host, host group and vault to cancel the unheld
        reservations made for ``request_id`` (the Enactor names them
        ``<request_id>/...``): an enactment nobody finishes leaves nothing
        reserved.  Returns how many were cancelled (unreachable actors: their
        tokens time out)."""
        handles = _unique([*self._carriers.values(), *self._vaults.values()])
        refs = [h.cancel_requests.remote([f"{request_id}/"], True) for h in handles.values()]
        cancelled = 0
        if refs:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=WATCH_TIMEOUT_S)
            for ref in ready:
                try:
                    cancelled += len(ray.get(ref))
                except ray.exceptions.RayError:
                    pass
        log.warning("enactment of %s abandoned: %d reservation(s) cancelled", request_id, cancelled)
        return cancelled

    def _auth_setup(self, auth_home: str | None) -> None:
        """The door every user-facing call goes through (open without a home: no authentication)."""
        self.door = SchedulerDoor(self.core, Guard.for_home(auth_home, by="scheduler") if auth_home else None)
        self._signer: CallSigner | None = None
        self.auth_home = auth_home
        if auth_home:  # the Scheduler signs its own calls to the Collection, as the scheduler agent
            self._signer = CallSigner(load_agent(auth_home, SCHEDULER_AGENT), time.time)
            self.core.getCollection().signer = self._signer
            for enactor in (self.core.getEnactor(), self.cycle.enactor):
                enactor.attester = self._signer.credential

    @ray.method(concurrency_group="control")
    def authenticated(self) -> bool:
        """True when every user-facing call must carry a signed proof."""
        return not self.door.open

    def _tick_loop(self, every_s: float) -> None:
        """Watch instances and re-plan the queue on a timer, off the actor's
        call threads (so approvals never wait for a free thread)."""
        while not self._ticking.wait(every_s):
            try:
                self.core.tick()
            except Exception:  # one bad tick must not stop the watch
                log.exception("scheduler tick failed")

    @ray.method(concurrency_group="control")
    def ping(self) -> str:
        return "ok"

    # --- requests ---------------------------------------------------------------------------

    def list_requests(self, user: str | None = None, state: str | None = None, proof: Any = None) -> list[RequestInfo]:
        return self.door.list_requests(user, state, proof)

    def request_info(self, request_id: str, proof: Any = None) -> RequestInfo:
        return self.door.request_info(request_id, proof)

    def cancel(self, request_id: str, reason: str = "cancelled by its user", proof: Any = None) -> RequestInfo:
        return self.door.cancel(request_id, reason, proof)

    # --- triggers (Legion's monitoring stage) --------------------------------------------

    def register_trigger(self, subject: str, statuses: list[str], handle: Any, method: str = "on_event",
                         proof: Any = None) -> str:
        """Call ``handle.method(event)`` for each of ``statuses`` (none: all) of
        ``subject`` (a request, an instance, or ``*``); returns the trigger id."""
        return self.door.register_trigger(subject, statuses, ActorCallback(handle, method), proof)

    def remove_trigger(self, trigger_id: str, proof: Any = None) -> bool:
        return self.door.remove_trigger(trigger_id, proof)

    @ray.method(concurrency_group="control")
    def events_since(self, request_id: str, cursor: int = 0, proof: Any = None) -> list[StatusEvent]:
        """A request's status events after ``cursor`` (what ``show --follow`` polls)."""
        return self.door.events_since(request_id, cursor, proof)

    def tick(self) -> int:
        """Watch and re-plan now (normally the timer does)."""
        return self.core.tick()

    @ray.method(concurrency_group="control")
    def audit(self) -> list[AuditFinding]:
        """The auditor over the live system: one batched call per host group,
        host, vault and class actor (each with a timeout); a resource that
        cannot be asked is itself a finding."""
        handles = _unique([*self._carriers.values(), *self._vaults.values()])
        refs = {hid: h.audit_views.remote() for hid, h in handles.items()}
        class_refs = {n: h.list_instances.remote() for n, h in self._class_actors.items()}
        views, findings = [], []
        for hid, ref in refs.items():
            try:
                views.extend(ray.get(ref, timeout=WATCH_TIMEOUT_S))
            except ray.exceptions.RayError as exc:
                findings.append(AuditFinding(code="resource.unreachable", subject=str(handles[hid]),
                                             detail=f"{type(exc).__name__}"))
        classes: dict[str, list[str]] = {}
        for name, ref in class_refs.items():
            try:
                classes[name] = [r.instance_id for r in ray.get(ref, timeout=WATCH_TIMEOUT_S)]
            except ray.exceptions.RayError as exc:
                findings.append(AuditFinding(code="resource.unreachable", subject=f"class:{name}",
                                             detail=f"{type(exc).__name__}"))
        return findings + audit(self.core, views, classes, also_running=self.cycle.instance_ids())

    def scheduleObjects(self, request: SchedulingRequest, proof: Any = None) -> SchedulerResponse:
        return self.door.scheduleObjects(request, proof)

    def make_schedules(self, request: SchedulingRequest, proof: Any = None) -> ScheduleSuite:
        return self.door.make_schedules(request, proof)

    def getCandidatePlacements(self, class_info: ObjectRequest, caller: Identity) -> list[str]:
        return self.core.getCandidatePlacements(class_info, caller)

    def explain(self, request: SchedulingRequest, host: str, proof: Any = None) -> str:
        return self.door.explain(request, host, proof)

    # Approvals run on threads of their own ("control"): every scheduleObjects
    # thread may be waiting on the Enactor, which waits on this confirmation.
    @ray.method(concurrency_group="control")
    def approve(self, proposal: ScheduleProposal, proof: Any = None) -> bool | Refusal:
        """Legion's step 6: the enactor reports a fully reserved schedule and
        the scheduler confirms it (:meth:`Scheduler.approve`); only the Enactor asks."""
        return self.door.approve(proposal, proof)

    @ray.method(concurrency_group="control")
    def approve_growth(self, proposal: ScheduleProposal, proof: Any = None) -> bool:
        """The elastic cycle's enactments: the fair-share core chose them."""
        return True

    def getCollection(self) -> Any:
        return self.core.getCollection().handle

    def setCollection(self, handle: Any, proof: Any = None) -> Any:
        self.door.require_admin(proof, "setCollection", {}, "set_collection")
        return self.core.setCollection(RemoteCollection(handle, CALL_TIMEOUT_S, signer=self._signer)).handle

    def getEnactor(self) -> Any:
        return self.core.getEnactor().handle

    def setEnactor(self, handle: Any, proof: Any = None) -> Any:
        self.door.require_admin(proof, "setEnactor", {}, "set_enactor")
        self_handle = ray.get_runtime_context().current_actor
        enactor = RemoteEnactor(handle, (self_handle, "approve"))
        enactor.attester = self._signer.credential if self._signer is not None else None
        enactor.abandon = self._abandon_enactment
        # the elastic cycle enacts its growth through the same Enactor (confirmed by approve_growth)
        grow = RemoteEnactor(handle, (self_handle, "approve_growth"))
        grow.attester, grow.abandon = enactor.attester, self._abandon_enactment
        self.cycle.enactor = grow
        return self.core.setEnactor(enactor).handle

    def instances(self, proof: Any = None) -> list:
        """The running instances this Scheduler started (a user: only theirs)."""
        return self.door.instances(proof)

    @ray.method(concurrency_group="control")
    def status(self, proof: Any = None) -> SchedulerStatus:
        """A summary for operators (``legionrm status``); read-only.  A user sees only their own work."""
        user = self.door.view_user(proof, "status", {})
        hosts: dict[str, int] = {}
        for inst in list(self.core.instances.values()):
            hosts[inst.host] = hosts.get(inst.host, 0) + 1
        last = self.cycle.last_report
        report = getattr(self.core.pools, "report", None)
        states: dict[str, int] = {}
        for info in self.core.list_requests():
            states[info.state] = states.get(info.state, 0) + 1
        full = SchedulerStatus(
            requests=states,
            instances=sum(hosts.values()), hosts=hosts, last_cycle=last.cycle if last else 0,
            elastic={k: j.model_copy(update={"instances": ()}) for k, j in (last.jobs if last else {}).items()},
            pools={path: {k: v for k, v in entry.items() if k in ("entitlement", "allocation")}
                   for path, entry in (report() if report else {}).items()},
        )
        if user is None:
            return full
        mine: dict[str, int] = {}
        for info in self.core.list_requests(user):
            mine[info.state] = mine.get(info.state, 0) + 1
        return own_status(full, user, list(self.core.instances.values()), mine)

    # --- the elastic cycle ------------------------------------------------------------------

    def submit_elastic(self, request: ElasticJobRequest, proof: Any = None) -> None:
        """Admit a long-running elastic job (in the caller's name); the next cycle (at once) grows it."""
        self.cycle.submit(self.door.elastic_request(request, proof))
        self.runner.kick()

    def complete_elastic(self, job_id: str, proof: Any = None) -> bool:
        """The job is done; its instances stop next cycle.  Idempotent.  Its owner's (or an admin's)."""
        self.door.elastic_owner_check(self._elastic_owner(job_id), "complete_elastic", {"job_id": job_id}, proof)
        done = self.cycle.complete(job_id)
        self.runner.kick()
        return done

    def update_elastic(self, job_id: str, fields: dict[str, Any], proof: Any = None) -> ElasticJobRequest:
        self.door.elastic_owner_check(self._elastic_owner(job_id), "update_elastic",
                                      {"job_id": job_id, "fields": fields}, proof)
        if not self.door.open:
            fields = {k: v for k, v in fields.items() if k != "user"}
        return self.cycle.update(job_id, **fields)

    def _elastic_owner(self, job_id: str) -> str | None:
        job = self.cycle._jobs.get(job_id)  # the cycle's table of admitted jobs
        return job.request.user if job is not None else None

    def run_cycle(self) -> CycleReport:
        """Run a cycle now (normally the runner's thread does, when due)."""
        return self.runner.run_now()

    def cycle_reports(self, after: int = 0, timeout_s: float = 0.0, proof: Any = None) -> list[CycleReport]:
        """The reports of the cycles numbered above ``after`` (the last 100
        kept), waiting up to ``timeout_s`` for the first.  A user sees only their own jobs."""
        user = self.door.view_user(proof, "cycle_reports", {"after": after, "timeout_s": timeout_s})
        return [own_report(r, user) for r in self.runner.wait_reports(after, timeout_s)]

    def stop_cycle(self) -> None:
        self._ticking.set()
        self.runner.stop()
