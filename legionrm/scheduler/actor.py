"""The Scheduler as a Ray actor: a thin shell over :class:`Scheduler`.

Threaded (``max_concurrency``) because the Enactor calls back for approval
while a ``scheduleObjects`` call is waiting on it, and because several
users' requests may be planned at once.  The adapters in
:mod:`legionrm.scheduler.remote.actor` are the only places this shell talks
to other actors.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from functools import partial
from typing import Any

import ray

from legionrm import codes
from legionrm.auth import CallSigner, signed
from legionrm.auth.guard import SCHEDULER as SCHEDULER_AGENT
from legionrm.auth.guard import Guard, load_agent
from legionrm.collection.actor import RemoteCollection
from legionrm.events.actor import ActorCallback
from legionrm.homefs import private_umask
from legionrm.hostobj.runner.owner import owner_gate
from legionrm.models import (
    AuditFinding,
    ClassSpec,
    ClusterSpec,
    CycleReport,
    ElasticJobRequest,
    Identity,
    NodeBinding,
    ObjectRequest,
    ObjectStatus,
    Refusal,
    RequestInfo,
    ScheduleProposal,
    SchedulerResponse,
    SchedulerSettings,
    SchedulerStatus,
    ScheduleSuite,
    SchedulingRequest,
    StatusChange,
    StatusEvent,
)
from legionrm.naming import (
    SCHEDULER,
    class_name,
    host_name,
    named_actor,
    scheduler_name,
)
from legionrm.objstate.actor import RayStatePort
from legionrm.scheduler.audit import audit, repair as repair_findings
from legionrm.scheduler.intake.door import IntakeCalls
from legionrm.scheduler.door import SchedulerDoor, own_report, status_for
from legionrm.scheduler.elastic import CycleRunner
from legionrm.scheduler.ports import PoolGate
from legionrm.scheduler.priority.calls import QueueCalls
from legionrm.scheduler.remote.actor import (
    CALL_TIMEOUT_S,
    WATCH_TIMEOUT_S,
    RemoteCarrier,
    RemoteEnactor,
    cancel_reservation_at,
    one_per_actor,
    ray_stopper,
    ray_watch,
)
from legionrm.scheduler.several.kept import KeptReload
from legionrm.scheduler.several.actor import PoolActor, RemotePoolGate  # noqa: F401 - re-exported (legionrm.system.bootstrap)
from legionrm.scheduler.several.actor import NodeJoins, ReloadCalls
from legionrm.scheduler.watch.calls import HistoryCalls, WorkCalls
from legionrm.scheduler.grow.actor import request_resources
from legionrm.scheduler.wiring import SchedulerPorts, wire
from legionrm.state import AccountingStore, ElasticStore, RequestStore
from legionrm.state.reloaded import ReloadedStore

log = logging.getLogger(__name__)


@ray.remote(num_cpus=0, max_concurrency=8, concurrency_groups={"control": 4})
class SchedulerActor(WorkCalls, HistoryCalls, QueueCalls, NodeJoins, IntakeCalls, ReloadCalls):
    """``cluster`` (optional) brings the ``[fairshare]`` policy for the elastic
    cycle; ``carriers`` maps host names to the actors that carry them and
    ``class_actors`` class names to class actors, for stopping instances;
    with ``nodes`` (the default scheduler of a system that bound its Ray
    nodes) it binds the nodes that join later."""

    def __init__(self, collection: Any, enactor: Any, classes: list[ClassSpec] | None = None,
                 pools: PoolGate | None = None, name: str = "scheduler", cluster: ClusterSpec | None = None,
                 carriers: dict[str, Any] | None = None, class_actors: dict[str, Any] | None = None,
                 tick_s: float = 1.0, pool_owner: Any = None, state_path: str | None = None,
                 vault_actors: dict[str, Any] | None = None, auth_home: str | None = None,
                 nodes: NodeBinding | None = None) -> None:
        if state_path:  # it writes the home: what it (and SQLite) creates is the service's alone
            private_umask()
        self._carriers = dict(carriers or {})
        self._vaults = dict(vault_actors or {})
        self._class_actors = dict(class_actors or {})
        self._actor_name = scheduler_name(name)  # whom the Enactor's approvals are made out to
        self.auth_home = auth_home
        # the Scheduler signs its own calls (Collection, Enactor, pools, hosts) as the scheduler agent
        self._signer = CallSigner(load_agent(auth_home, SCHEDULER_AGENT), time.time) if auth_home else None
        if pool_owner is not None:  # the system's shared pools, owned by one PoolActor
            pools = RemotePoolGate(pool_owner, self._signer, name)
        cluster = cluster or ClusterSpec()
        if classes is not None:  # the classes this Scheduler places (the cluster's, as the system passes them)
            cluster = cluster.model_copy(update={"classes": tuple(classes)})
        # what the reloads of this boot changed (Ray restarts an actor with its first arguments and its id)
        self._kept = KeptReload(ReloadedStore(state_path) if state_path else None,
                                ray.get_runtime_context().get_actor_id(), name)
        cluster = self._kept.cluster(cluster)
        wired = wire(SchedulerSettings(cluster=cluster, name=name), SchedulerPorts(
            collection=RemoteCollection(collection, CALL_TIMEOUT_S, signer=self._signer),
            enactor=lambda approval: self._remote_enactor(enactor, "approve"), pools=pools,
            stopper=ray_stopper(self._carriers, self._class_actors, self._signer),
            watch=ray_watch(self._carriers, self._signer),
            store=RequestStore(state_path) if state_path else None,
            objects=RayStatePort(self._carriers, self._vaults, self._signer),  # deactivate / activate / migrate
            grow=self._remote_enactor(enactor, "approve_growth"),  # the cycle's: the DUCC core decided it already
            autoscaler=request_resources,  # with [autoscaler]: work that no node can take asks Ray for nodes
            cycle_store=ElasticStore(state_path) if state_path else None,
            accounting=AccountingStore(state_path) if state_path else None,
            owner_gate=owner_gate(cluster.classes, cluster.runner, auth_home)))
        self.core = wired.scheduler
        assert wired.mobility is not None and wired.cycle is not None  # both ports were given
        self.mobility, self.cycle = wired.mobility, wired.cycle
        # the door every user-facing call goes through (open without a home: no authentication)
        # proofs are made out to this actor (scheduler:NAME); the default scheduler also hears
        # "scheduler", what a caller of a single-scheduler system signs to
        default = name in (SCHEDULER, cluster.scheduler_specs()[0].name)
        guard = Guard.for_home(auth_home, by=scheduler_name(name), audience=(SCHEDULER,) if default else ()) if (
            auth_home) else None
        self.door = SchedulerDoor(self.core, guard, mobility=self.mobility)
        self.runner = CycleRunner(self.cycle)
        self.runner.start()
        self._nodes_from(nodes, collection, cluster)
        self._ticking = threading.Event()
        threading.Thread(target=self._tick_loop, args=(tick_s,), name="scheduler-tick", daemon=True).start()
        # what boot made lives as long as the actor: out of the collector's way, so a full collection
        # no longer walks Ray's and the book's objects (py-spy saw its pauses in a busy intake)
        gc.freeze()

    def _classes_adopt(self) -> None:
        """Booted on a kept book: each class actor (new, its count empty) counts again the running
        instances of its class the book holds; the watch ends, and the class forgets, any that
        did not survive.  A class that does not answer is the audit's ``class.count`` to show."""
        running = self.core.book.running_instances()
        for name, handle in self._class_actors.items():
            refs = [r for r in running if r.class_name == name]
            if not refs:
                continue
            try:
                ray.get(handle.adopt.remote(refs, proof=signed(self._signer, "adopt", {"refs": refs},
                                                               to=class_name(name))), timeout=CALL_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - the audit shows what a class does not count
                log.warning("class %s did not take back its %d running instances", name, len(refs), exc_info=True)

    def _remote_enactor(self, handle: Any, approve: str) -> RemoteEnactor:
        """The Enactor actor ``handle``, its enactments confirmed by this actor's ``approve`` method
        (the Scheduler's approval, or ``approve_growth`` for the elastic cycle's)."""
        self_handle = ray.get_runtime_context().current_actor
        return RemoteEnactor(handle, (self_handle, approve, self._actor_name), signer=self._signer,
                             abandon=self._abandon_enactment)

    def _abandon_enactment(self, request_id: str) -> int:
        """Ask every host, host group and vault to cancel the unheld
        reservations made for ``request_id`` (the Enactor names them
        ``<request_id>/...``): an enactment nobody finishes leaves nothing
        reserved.  Returns how many were cancelled (unreachable actors: their
        tokens time out)."""
        handles = one_per_actor({**self._carriers, **self._vaults})
        ids = [f"{request_id}/"]
        refs = [h.cancel_requests.remote(ids, True, proof=signed(self._signer, "cancel_requests",
                                                                  {"request_ids": ids, "prefix": True}, to=name))
                for name, h in handles.values()]
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

    @ray.method(concurrency_group="control")
    def authenticated(self) -> bool:
        """True when every user-facing call must carry a signed proof."""
        return not self.door.open

    def _tick_loop(self, every_s: float) -> None:
        """Watch instances and re-plan the queue on a timer, off the actor's
        call threads (so approvals never wait for a free thread).  First the
        class actors take back what the book runs (before any tick stops one)."""
        self._classes_adopt()
        while not self._ticking.wait(every_s):
            try:
                self._join_nodes()
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

    # --- the queue's views (its verbs: QueueCalls; see the door: who may call which) -------------

    @ray.method(concurrency_group="control")
    def share(self, proof: Any = None) -> Any:
        return self.door.share(proof)

    @ray.method(concurrency_group="control")
    def prio(self, proof: Any = None) -> Any:
        return self.door.prio(proof)

    # --- objects: deactivate / migrate (activate: scheduleObjects with ``activate``) -----------

    def deactivate(self, object_id: str, reason: str = "deactivated by its user", proof: Any = None
                   ) -> ObjectStatus | Refusal:
        """Save the object's state to a vault and stop its active copy (its owner or an admin)."""
        return self.door.deactivate(object_id, reason, proof)

    def activate(self, object_id: str, constraint: str = "true", proof: Any = None) -> ObjectStatus | Refusal:
        """Place an inert object on a host matching ``constraint`` and restore it (its owner or an admin)."""
        return self.door.activate(object_id, constraint, proof)

    def migrate(self, object_id: str, constraint: str = "true", proof: Any = None) -> ObjectStatus | Refusal:
        """Move a running object to a host matching ``constraint`` (its owner or an admin)."""
        return self.door.migrate(object_id, constraint, proof)

    def object_status(self, object_id: str, proof: Any = None) -> ObjectStatus | Refusal:
        return self.door.object_status(object_id, proof)

    @ray.method(concurrency_group="control")
    def status_changes(self, after: float = 0.0, proof: Any = None) -> list[StatusChange]:
        """Objects' status changes recorded after time ``after`` (a user: their own objects')."""
        user = self.door.view_user(proof, "status_changes", {"after": after})
        return [c for c in list(self.mobility.changes) if c.at > after and (user is None or c.user == user)]

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


    @ray.method(concurrency_group="control")
    def drain(self, host: str, reason: str | None, proof: Any = None) -> bool:
        """Drain ``host`` for ``reason`` (it finishes its work and takes no new work),
        or with None resume it: an administrator's.  False: no actor carries it."""
        self.door.require_admin(proof, "drain", {"host": host, "reason": reason}, "vary_hosts")
        handle = self._carriers.get(host) or named_actor(host_name(host))
        return handle is not None and RemoteCarrier(handle, self._signer, host).set_drain(host, reason)

    def tick(self, proof: Any = None) -> int:
        """Watch and re-plan now (normally the timer does): an administrator's."""
        self.door.require_admin(proof, "tick", {}, "tick")
        return self.core.tick()

    @ray.method(concurrency_group="control")
    def audit(self, repair: bool = False, proof: Any = None) -> list[AuditFinding]:
        """The auditor over the live system (an administrator's): one batched call per host group,
        host, vault and class actor (each with a timeout); a resource that cannot be asked is itself a finding."""
        self.door.require_admin(proof, "audit", {"repair": True} if repair else {}, "audit")
        handles, s = one_per_actor({**self._carriers, **self._vaults}), self._signer
        refs = {hid: h.audit_views.remote(proof=signed(s, "audit_views", {}, to=name))
                for hid, (name, h) in handles.items()}
        class_refs = {n: h.list_instances.remote(proof=signed(s, "list_instances", {}, to=class_name(n)))
                      for n, h in self._class_actors.items()}
        views, findings = [], []
        for hid, ref in refs.items():
            try:
                views.extend(ray.get(ref, timeout=WATCH_TIMEOUT_S))
            except ray.exceptions.RayError as exc:
                findings.append(AuditFinding(code=codes.RESOURCE_UNREACHABLE, subject=handles[hid][0],
                                             detail=f"{type(exc).__name__}"))
        classes: dict[str, list[str]] = {}
        for name, ref in class_refs.items():
            try:
                classes[name] = [r.instance_id for r in ray.get(ref, timeout=WATCH_TIMEOUT_S)]
            except ray.exceptions.RayError as exc:
                findings.append(AuditFinding(code=codes.RESOURCE_UNREACHABLE, subject=f"class:{name}",
                                             detail=f"{type(exc).__name__}"))
        findings += audit(self.core, views, classes, also_running=self.cycle.instance_ids(),
                          elastic=self.cycle.charged_jobs())
        return repair_findings(self.core, findings, views, partial(cancel_reservation_at, self._vaults, self._carriers,
                                                                   self._signer)) if repair else findings

    def scheduleObjects(self, request: SchedulingRequest, proof: Any = None) -> SchedulerResponse:
        return self.door.scheduleObjects(request, proof)

    def make_schedules(self, request: SchedulingRequest, proof: Any = None) -> ScheduleSuite:
        return self.door.make_schedules(request, proof)

    def getCandidatePlacements(self, class_info: ObjectRequest, caller: Identity, proof: Any = None) -> list[str]:
        """Feasible hosts for one instance; a user's are judged as the verified user, whatever ``caller`` claims."""
        who = self.door.viewer(proof, "getCandidatePlacements", {"class_info": class_info, "caller": caller})
        if who is not None:
            caller = who.identity(caller.class_name)
        return self.core.getCandidatePlacements(class_info, caller)

    def explain(self, request: SchedulingRequest, host: str, proof: Any = None) -> str:
        return self.door.explain(request, host, proof)

    # Approvals run on threads of their own ("control"): every scheduleObjects
    # thread may be waiting on the Enactor, which waits on this confirmation.
    @ray.method(concurrency_group="control")
    def approve(self, proposal: ScheduleProposal, proof: Any = None) -> bool | Refusal:
        """Legion's step 6: the enactor reports a fully reserved schedule and
        the scheduler confirms it (:meth:`Enactment.approve`); only the Enactor asks."""
        return self.door.approve(proposal, proof)

    @ray.method(concurrency_group="control")
    def approve_growth(self, proposal: ScheduleProposal, proof: Any = None) -> bool | Refusal:
        """The elastic cycle's enactments: the fair-share core chose them (only the Enactor asks)."""
        refused = self.door.approve_growth(proposal, proof)
        return True if refused is None else refused

    def getCollection(self) -> Any:
        return self.core.getCollection().handle

    def setCollection(self, handle: Any, proof: Any = None) -> Any:
        self.door.require_admin(proof, "setCollection", {}, "set_collection")
        return self.core.setCollection(RemoteCollection(handle, CALL_TIMEOUT_S, signer=self._signer)).handle

    def getEnactor(self) -> Any:
        return self.core.getEnactor().handle

    def setEnactor(self, handle: Any, proof: Any = None) -> Any:
        self.door.require_admin(proof, "setEnactor", {}, "set_enactor")
        # the elastic cycle enacts its growth through the same Enactor (confirmed by approve_growth)
        self.cycle.enactor = self._remote_enactor(handle, "approve_growth")
        return self.core.setEnactor(self._remote_enactor(handle, "approve")).handle

    def instances(self, proof: Any = None) -> list:
        """The running instances this Scheduler started (a user: only theirs)."""
        return self.door.instances(proof)

    @ray.method(concurrency_group="control")
    def status(self, proof: Any = None) -> SchedulerStatus:
        """A summary for operators (``legionrm status``); read-only.  A user sees only their own work."""
        return status_for(self.core, self.cycle.last_report, self.door.view_user(proof, "status", {}))

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
            fields = {k: v for k, v in fields.items() if k not in ("user", "groups")}  # who it is stays proven
        return self.cycle.update(job_id, **fields)

    def _elastic_owner(self, job_id: str) -> str | None:
        job = self.cycle.ledger.jobs.get(job_id)  # the cycle's table of admitted jobs
        return job.request.user if job is not None else None

    def run_cycle(self, proof: Any = None) -> CycleReport:
        """Run a cycle now (normally the runner's thread does, when due): an administrator's."""
        self.door.require_admin(proof, "run_cycle", {}, "run_cycle")
        return self.runner.run_now()

    def cycle_reports(self, after: int = 0, timeout_s: float = 0.0, proof: Any = None) -> list[CycleReport]:
        """The reports of the cycles numbered above ``after`` (the last 100
        kept), waiting up to ``timeout_s`` for the first.  A user sees only their own jobs."""
        user = self.door.view_user(proof, "cycle_reports", {"after": after, "timeout_s": timeout_s})
        return [own_report(r, user) for r in self.runner.wait_reports(after, timeout_s)]

    def stop_cycle(self, proof: Any = None) -> list[str]:
        """Stop the timer and the cycle (stopping the system): an administrator's.  Answers the hosts
        it bound as Ray nodes joined after boot (the stopper stops those too: no booted list names them)."""
        self.door.require_admin(proof, "stop_cycle", {}, "stop_system")
        self._ticking.set()
        self.runner.stop()
        return self._joined()
