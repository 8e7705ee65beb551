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

import threading
from typing import Any

from legionrm.errors import SchedulingError
from legionrm.models import (
    EnactRequest,
    EnactResult,
    Holder,
    InstanceRef,
    ObjectRequest,
    PlacementFailure,
    Refusal,
    ScheduleProposal,
    SchedulerResponse,
    SchedulingRequest,
)
from legionrm.scheduler.planner import Plan, Planner
from legionrm.scheduler.ports import EnactorPort, OpenGate, PoolGate, SnapshotSource
from legionrm.scheduler.sharegate import ShareGate


class Scheduler:
    """Thread-safe for concurrent requests: planning reads an immutable
    snapshot and the enactor's reservations are the only writes, checked by
    the hosts themselves, so concurrent schedulers never double-book."""

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
    ) -> None:
        self._collection = collection
        self._enactor = enactor
        self.planner = planner or Planner()
        self.pools = pools or OpenGate()
        self.shares = shares
        self.name = name
        self.token_timeout_s = token_timeout_s
        self._lock = threading.Lock()
        self.instances: dict[str, InstanceRef] = {}
        self._by_request: dict[str, list[str]] = {}
        self._enacting: dict[str, frozenset[str]] = {}  # request id -> the placement keys it asked for

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
        _validate(request)
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
        started, or not ok with every placement's failure.  Not idempotent
        (it starts instances); a repeated request id is refused."""
        _validate(request)
        with self._lock:
            if request.request_id in self._by_request:
                raise SchedulingError(f"request id {request.request_id!r} was already scheduled")
            self._by_request[request.request_id] = []
        active, unknown = self._activation(request)
        if unknown:
            return self._failed(request, unknown, 0)
        if not request.objects:
            return self._succeeded(request, active, 0, None, "activated: ")
        request, refused = self._shape(request)
        if refused:
            return self._failed(request, refused, 0)
        refusal = self._admit(request)
        if refusal is not None:
            return self._failed(request, [PlacementFailure(
                key="*", resource=refusal.by, code=refusal.code, reason=refusal.reason, stage="plan")], 0)
        try:
            plan = self.planner.make_schedules(request, self._collection.snapshot())
            if not plan.ok:
                self._release(request.request_id)
                return self._failed(request, plan.failures, 0)
            with self._lock:
                self._enacting[request.request_id] = frozenset(k for op in plan.objects for k in op.keys)
            result = self._enactor.enact_schedule(self._enact_request(request, plan))
        except BaseException:
            self._release(request.request_id)
            raise
        finally:
            with self._lock:
                self._enacting.pop(request.request_id, None)
        if not result.ok:
            self._release(request.request_id)
            failures = [f for a in result.attempts for f in a.failures]
            return self._failed(request, failures, len(plan.masters), result)
        with self._lock:
            for inst in result.instances:
                self.instances[inst.instance_id] = inst
            self._by_request[request.request_id] = [i.instance_id for i in result.instances]
        return self._succeeded(request, active + list(result.instances), len(plan.masters), result,
                               f"master {result.master + 1} of {len(plan.masters)}: ")

    def approve(self, proposal: ScheduleProposal) -> bool | Refusal:
        """Legion's step 6: the enactor reports a fully reserved schedule and
        the scheduler confirms it.  Declines (a Refusal by ``scheduler``) a
        proposal for a request this scheduler is not enacting now
        (``approval.unknown_request``: a stale or foreign enactment) or one
        that does not place exactly the request's instances
        (``approval.keys``).  Pool admission was charged before planning."""
        with self._lock:
            keys = self._enacting.get(proposal.request_id)
        if keys is None:
            return Refusal(code="approval.unknown_request", by="scheduler",
                           reason=f"scheduler {self.name!r} is not scheduling request {proposal.request_id!r}")
        got = frozenset(p.key for p in proposal.placements)
        if got != keys or len(got) != len(proposal.placements):
            missing, extra = sorted(keys - got), sorted(got - keys)
            return Refusal(code="approval.keys", by="scheduler",
                           reason=f"the schedule does not place exactly the request's instances "
                                  f"(missing {missing}, not asked for {extra})")
        return True

    def instances_of(self, request_id: str) -> list[InstanceRef]:
        return [self.instances[i] for i in self._by_request.get(request_id, []) if i in self.instances]

    def forget(self, instance_id: str) -> None:
        """An instance ended: drop it, and release the pool allocation (and
        the allotment) of its request when it was the last one.  Idempotent."""
        with self._lock:
            self.instances.pop(instance_id, None)
            for rid, ids in self._by_request.items():
                if instance_id in ids and not any(i in self.instances for i in ids):
                    self._release(rid)

    # --- helpers --------------------------------------------------------------

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

    def _activation(self, request: SchedulingRequest) -> tuple[list[InstanceRef], list[PlacementFailure]]:
        """The objects ``request`` asks to activate: those running already (an
        instance this scheduler started; activating it is a no-op and the
        response lists it), and a ``activate.unknown`` failure for every
        other name.  Any failure sinks the whole request before anything is
        admitted, planned or reserved."""
        with self._lock:
            known = dict(self.instances)
        active = [known[n] for n in request.activate if n in known]
        unknown = [
            PlacementFailure(key=n, resource=self.name, code="activate.unknown", stage="plan",
                             reason=f"no running object {n!r} is known to scheduler {self.name!r}; "
                                    "inert objects cannot be re-activated here: request a new instance")
            for n in request.activate if n not in known
        ]
        return active, unknown

    def _succeeded(self, request: SchedulingRequest, instances: list[InstanceRef], masters: int,
                   result: EnactResult | None, prefix: str) -> SchedulerResponse:
        where = ", ".join(f"{i.instance_id}@{i.host}" for i in instances)
        return SchedulerResponse(request_id=request.request_id, ok=True, instances=tuple(instances), masters=masters,
                                 enact=result, message=prefix + where)

    def _enact_request(self, request: SchedulingRequest, plan: Plan) -> EnactRequest:
        ident = request.identity
        return EnactRequest(
            request_id=request.request_id,
            holder=Holder(user=ident.user, class_name=None, enactor=self.name, groups=ident.groups),
            masters=tuple(plan.masters),
            timeout_s=self.token_timeout_s,
            # per placement key: two object requests of one class may differ
            duration_s={k: op.request.walltime_s for op in plan.objects if op.request.walltime_s for k in op.keys},
            args={k: dict(op.request.args) for op in plan.objects if op.request.args for k in op.keys},
        )

    def _failed(self, request: SchedulingRequest, failures, masters: int, result: EnactResult | None = None):
        failures = tuple(failures)
        msg = "; ".join(f"{f.key} on {f.resource or '-'}: {f.code}: {f.reason}" for f in failures[:5])
        return SchedulerResponse(request_id=request.request_id, ok=False, failures=failures, masters=masters,
                                 enact=result, message=msg or "no schedule")


def _validate(request: SchedulingRequest) -> None:
    if not request.objects and not request.activate:
        raise SchedulingError(f"request {request.request_id!r} asks for nothing (no objects, nothing to activate)")
