"""The Enactor on Ray: a thin async actor around the core, and its port to resource actors.

Every Ray call the enactor makes lives in :class:`RayResourcePort`: reservations
are grouped by host group actor (``Placement.group``) or single resource
actor, one batched call per actor, all actors at once, collected with
``ray.wait`` under one deadline.  A call that raises because its actor died,
or that misses the deadline, becomes ``Refusal(code="resource.dead")``, so
the core treats a dead resource exactly like a veto and tries a delta.

:class:`EnactorActor` is async (it spends its life waiting on others) and
runs each enactment's synchronous core in a worker thread, so several
schedulers can enact at once without blocking each other.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Mapping, Sequence

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from legionrm import codes, metrics
from legionrm.auth import CallSigner
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.actordoor import ActorDoor
from legionrm.auth.guard import ENACTOR, SCHEDULER, Guard, load_agent
from legionrm.enactor.enactor import Approver, Enactor, approve_all
from legionrm.enactor.ports import CreateItem, create_request
from legionrm.models import (
    EnactRequest,
    EnactResult,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    ReservedStart,
    ScheduleProposal,
)
from legionrm.naming import ENACTOR as ENACTOR_ACTOR
from legionrm.naming import SCHEDULER as SCHEDULER_ACTOR
from legionrm.naming import class_name, group_name, host_name, named_actor, vault_name

log = logging.getLogger(__name__)

Handle = Any  # a ray.actor.ActorHandle


class RayResourcePort:
    """The enactor's port to resource actors.

    ``groups``: host group name -> ``HostGroupActor`` handle (batched
    ``make_reservations`` / ``cancel_reservations``).  ``resources``: host or
    vault name -> the actor carrying it: a group handle, or a single
    ``HostActor`` / ``VaultActor`` (``make_reservation`` /
    ``cancel_reservation``); ``batched`` names the handles (by resource) that
    take batches when they are not in ``groups``.  ``classes``: class name ->
    ``ClassActor`` (``create_instances``, ``destroy_instance``).  ``resolve``
    is asked for any name none of those know (e.g. a named-actor lookup) and
    returns ``(handle, is_batched)`` or None; with a resolver the port
    also looks up unknown groups and classes by their actor names
    (``hostgroup:<name>``, ``class:<name>``), so :func:`discover_resource`
    makes a port find everything ``legionrm up`` spawned.  ``members`` maps a host name to
    its group name, for routing cancels of tokens this port did not see
    granted (it learns the rest from the group hints of the reservations it
    sends).  ``deadline_s`` bounds each
    fan-out; what has not answered by then is reported dead.
    """

    def __init__(
        self,
        *,
        groups: Mapping[str, Handle] | None = None,
        resources: Mapping[str, Handle] | None = None,
        batched: Sequence[str] = (),
        classes: Mapping[str, Handle] | None = None,
        resolve: Callable[[str], tuple[Handle, bool] | None] | None = None,
        members: Mapping[str, str] | None = None,
        deadline_s: float = 10.0,
    ) -> None:
        self.groups = dict(groups or {})
        self.resources = dict(resources or {})
        self.batched = set(batched)
        self.classes = dict(classes or {})
        self.resolve = resolve
        self.deadline_s = deadline_s
        # Tokens name their issuer, not its group: remember which group
        # granted for a resource, so a cancel takes the same batched route.
        self._granted_by: dict[str, str] = dict(members or {})
        self.signer: CallSigner | None = None  # with one, cancels, creates and rollbacks carry the Enactor's proof

    def _proof(self, call: str, args: Any, to: str) -> Any:
        return self.signer.sign(call, args, to=to) if self.signer is not None else None

    # --- routing ---------------------------------------------------------------------

    def _route(self, resource: str, group: str | None) -> tuple[str, Handle, bool] | None:
        """(route key, handle, takes batches) for a resource, or None."""
        if group is not None and group not in self.groups and self.resolve is not None:
            h = named_actor(group_name(group))
            if h is not None:
                self.groups[group] = h
        if group is not None and group in self.groups:
            return (f"group:{group}", self.groups[group], True)
        h = self.resources.get(resource)
        if h is not None:
            batched = resource in self.batched or any(h is g for g in self.groups.values())
            return (f"actor:{id(h)}", h, batched)
        if self.resolve is not None:
            found = self.resolve(resource)
            if found is not None:
                handle, batched = found
                self.resources[resource] = handle
                if batched:
                    self.batched.add(resource)
                return (f"actor:{id(handle)}", handle, batched)
        return None

    def _gather(self, refs: list[Any]) -> list[tuple[bool, Any]]:
        """Wait for every ref under one deadline: (ok, value or the error)."""
        if not refs:
            return []
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.deadline_s)
        done = set(ready)
        out: list[tuple[bool, Any]] = []
        for r in refs:
            if r not in done:
                out.append((False, TimeoutError(f"no answer within {self.deadline_s:.1f}s")))
                continue
            try:
                out.append((True, ray.get(r)))
            except (RayActorError, RayTaskError, GetTimeoutError) as exc:
                out.append((False, exc))
        return out

    # --- the port protocol ------------------------------------------------------------

    def reserve(
        self, requests: Sequence[ReservationRequest], groups: Sequence[str | None] | None = None
    ) -> list[ReservationToken | Refusal]:
        out: list[ReservationToken | Refusal | None] = [None] * len(requests)
        batches: dict[str, tuple[Handle, list[int]]] = {}
        singles: list[tuple[int, Any]] = []
        singles_handles: dict[int, Handle] = {}
        for i, rq in enumerate(requests):
            route = self._route(rq.resource, groups[i] if groups is not None else None)
            if route is None:
                out[i] = Refusal(code=codes.RESOURCE_DEAD, reason=f"no actor carries {rq.resource!r}", by=rq.resource)
            elif route[2]:
                batches.setdefault(route[0], (route[1], []))[1].append(i)
                if route[0].startswith("group:"):
                    self._granted_by[rq.resource] = route[0][len("group:") :]
            else:
                singles.append((i, route[1].make_reservation.remote(rq)))
                singles_handles[i] = route[1]
        batch_list = list(batches.values())
        audiences = [_audience(key, requests[idx[0]].resource) for key, (_, idx) in batches.items()]
        refs = [h.make_reservations.remote([requests[i] for i in idx]) for h, idx in batch_list]
        answers = self._gather(refs + [ref for _, ref in singles])
        for (h, idx), to, (ok, value) in zip(batch_list, audiences, answers[: len(refs)]):
            for j, i in enumerate(idx):
                out[i] = value[j] if ok else _dead(requests[i].resource, value)
            if not ok:
                _abandon(h, [requests[i].request_id for i in idx], self.signer, to)
        for (i, _), (ok, value) in zip(singles, answers[len(refs) :]):
            out[i] = value if ok else _dead(requests[i].resource, value)
            if not ok:
                _abandon(singles_handles[i], [requests[i].request_id], self.signer, requests[i].resource)
        return out  # type: ignore[return-value]

    def cancel(self, tokens: Sequence[ReservationToken]) -> None:
        batches: dict[str, tuple[Handle, list[ReservationToken]]] = {}
        refs = []
        for t in tokens:
            route = self._route(t.issuer, self._granted_by.get(t.issuer))
            if route is None:
                continue  # nobody carries it any more; it times out there, if anywhere
            if route[2]:
                batches.setdefault(route[0], (route[1], []))[1].append(t)
            else:
                refs.append(route[1].cancel_reservation.remote(
                    t, proof=self._proof("cancel_reservation", {"token": t}, t.issuer)))
        refs += [h.cancel_reservations.remote(toks, proof=self._proof("cancel_reservations", {"items": toks},
                                                                      _audience(key, toks[0].issuer)))
                 for key, (h, toks) in batches.items()]
        for ok, err in self._gather(refs):
            if not ok:
                log.info("cancel did not reach its resource (%s); the token will time out", err)

    def _class(self, name: str) -> Handle | None:
        h = self.classes.get(name)
        if h is None and self.resolve is not None:
            h = named_actor(class_name(name))
            if h is not None:
                self.classes[name] = h
        return h

    def create_instances(self, items: Sequence[CreateItem]) -> list[InstanceRef | Refusal]:
        """One ``create_instances`` call per class actor carrying the items' creates (one proof each),
        all classes at once under the port's deadline; a class that does not answer in time
        (or died) refuses its items with ``resource.dead``."""
        out: list[InstanceRef | Refusal | None] = [None] * len(items)
        by_class: dict[str, list[int]] = {}
        for i, it in enumerate(items):
            by_class.setdefault(it.class_name, []).append(i)
        calls: list[tuple[list[int], Any]] = []
        for name, idx in by_class.items():
            cls = self._class(name)
            if cls is None:
                for i in idx:
                    out[i] = Refusal(code=codes.RESOURCE_DEAD, reason=f"no class actor {name!r}", by=name)
                continue
            batch = [create_request(items[i]) for i in idx]
            proof = self._proof("create_instances", {"batch": batch}, class_name(name))
            calls.append((idx, cls.create_instances.remote(batch, proof=proof)))
        for (idx, _), (ok, value) in zip(calls, self._gather([r for _, r in calls])):
            for j, i in enumerate(idx):
                out[i] = value[j] if ok else _dead(items[i].class_name, value)
        return out  # type: ignore[return-value]

    def stop_instances(self, instances: Sequence[InstanceRef]) -> None:
        refs = []
        for ref in instances:
            cls = self._class(ref.class_name)
            if cls is not None:
                reason = "enactment rolled back"
                refs.append(cls.destroy_instance.remote(ref.instance_id, reason, proof=self._proof(
                    "destroy_instance", {"instance_id": ref.instance_id, "reason": reason}, class_name(ref.class_name))))
        for ok, err in self._gather(refs):
            if not ok:
                log.warning("could not stop an instance during rollback: %s", err)


def discover_resource(resource: str) -> tuple[Handle, bool] | None:
    """A resolver for :class:`RayResourcePort`: the resource's own named actor
    (``host:<name>``, else ``vault:<name>``, as ``legionrm.hostobj.actor``
    names them); both take batched calls."""
    for name in (host_name(resource), vault_name(resource)):
        h = named_actor(name)
        if h is not None:
            return h, True
    return None


def _audience(route_key: str, resource: str) -> str:
    """Whom a call on a route is made out to: a host group by its actor name, else
    the resource itself (a host group hears the names of the hosts it carries)."""
    return group_name(route_key[len("group:"):]) if route_key.startswith("group:") else resource


def _abandon(handle: Handle, request_ids: list[str], signer: CallSigner | None = None, to: str = "") -> None:
    """The port gave up on a reservation call (its deadline passed, or the
    actor died and may come back): tell the actor to cancel whatever it
    granted for those request ids, so nothing granted to nobody is left to
    expire.  Fire and forget; Ray runs it after the reservation call (one
    caller's calls to an actor run in order), and an actor that is gone for
    good has nothing to cancel."""
    try:
        proof = signer.sign("cancel_requests", {"request_ids": request_ids, "prefix": False}, to=to) if signer else None
        handle.cancel_requests.remote(request_ids, False, proof=proof)
    except Exception:  # noqa: BLE001 - best effort; the tokens time out anyway
        log.info("could not ask %s to cancel abandoned reservations", handle, exc_info=True)


def _dead(name: str, err: Any) -> Refusal:
    return Refusal(code=codes.RESOURCE_DEAD, reason=f"{type(err).__name__}: {err}"[:300], by=name)


@ray.remote(num_cpus=0)
class EnactorActor:
    """The Enactor as an async Ray actor holding one :class:`Enactor` core.

    Constructed with the same routing tables as :class:`RayResourcePort`; with
    ``discover`` (default) it also finds host groups, hosts, vaults and
    classes by their ``legionrm.hostobj.actor`` names.
    ``approver``, when given, is ``(actor handle, method name)``: the
    scheduler actor whose method receives a :class:`ScheduleProposal` and
    returns True / False / a Refusal (Legion's step 6).  That actor must be
    async (or threaded): it is waiting on this enactor while it confirms.
    """

    def __init__(
        self,
        *,
        groups: Mapping[str, Handle] | None = None,
        resources: Mapping[str, Handle] | None = None,
        batched: Sequence[str] = (),
        classes: Mapping[str, Handle] | None = None,
        members: Mapping[str, str] | None = None,
        discover: bool = True,
        deadline_s: float = 10.0,
        name: str = "enactor",
        min_token_life_s: float = 0.0,
        auth_home: str | None = None,
    ) -> None:
        # with a home: approvals are signed as the Enactor agent, and nothing is enacted without one
        self._signer = CallSigner(load_agent(auth_home, ENACTOR), time.time) if auth_home else None
        self.port = RayResourcePort(
            groups=groups, resources=resources, batched=batched, classes=classes, members=members,
            resolve=discover_resource if discover else None, deadline_s=deadline_s,
        )
        self.port.signer = self._signer
        self.core = Enactor(self.port, name=name, min_token_life_s=min_token_life_s)
        self.door = ActorDoor(Guard.for_home(auth_home, by=ENACTOR_ACTOR) if auth_home else None, "enactor")

    async def enact_schedule(self, request: EnactRequest, approver: tuple[Handle, str] | tuple[Handle, str, str]
                             | None = None, proof: Any = None) -> EnactResult:
        """Legion's ``enact_schedule``: see :meth:`Enactor.enact_schedule`.  With
        authentication, only the Scheduler asks (its proof over the request and the
        approving method), and always with itself as approver: ``(handle, method)``,
        or ``(handle, method, its actor's name)`` (``scheduler:NAME``: whom the approval's proof is for)."""
        if self._signer is not None:
            if approver is None:
                raise AuthRefusedError(codes.AUTH_FORBIDDEN, "enact_schedule needs the Scheduler as approver; "
                                       "only the Scheduler's own enactments run here", "enactor")
            self.door.require_system(proof, "enact_schedule", {"request": request, "approver": approver[1]},
                                     agents=(SCHEDULER,))
        approve: Approver = approve_all if approver is None else _remote_approver(*approver, signer=self._signer)
        result = await asyncio.to_thread(self.core.enact_schedule, request, approve=approve)
        metrics.record_enactment(result)  # placements, and vetoes by code
        return result

    async def start_reserved(self, held: ReservedStart, approver: tuple[Handle, str] | None = None,
                             proof: Any = None) -> EnactResult:
        """Start what an advance reservation holds: see :meth:`Enactor.start_reserved`
        (with authentication on, only the Scheduler's signed call, as ``enact_schedule``)."""
        if self._signer is not None:
            self.door.require_system(proof, "start_reserved", {"held": held}, agents=(SCHEDULER,))
        return await asyncio.to_thread(self.core.start_reserved, held)

    async def add_group(self, name: str, handle: Handle, proof: Any = None) -> None:
        """Route placements whose ``group`` is ``name`` to ``handle``.  Idempotent.  An administrator's
        (or the Scheduler's): a rogue route would take every reservation and start."""
        self.door.require_system(proof, "add_group", {"name": name}, admin=True)
        self.port.groups[name] = handle

    async def add_resource(self, name: str, handle: Handle, batched: bool = False, proof: Any = None) -> None:
        """Route the host or vault ``name`` to ``handle``.  Idempotent.  An administrator's."""
        self.door.require_system(proof, "add_resource", {"name": name, "batched": batched}, admin=True)
        self.port.resources[name] = handle
        if batched:
            self.port.batched.add(name)

    async def add_class(self, name: str, handle: Handle, proof: Any = None) -> None:
        """Route class ``name`` to ``handle``.  An administrator's."""
        self.door.require_system(proof, "add_class", {"name": name}, admin=True)
        self.port.classes[name] = handle

    async def stats(self, proof: Any = None) -> dict[str, int]:
        """Counters of enactments (no one's work in them): any verified caller."""
        self.door.caller(proof, "stats", {})
        return dict(self.core.stats)

    async def ping(self) -> str:
        return "pong"


APPROVAL_TIMEOUT_S = 30.0
"""How long the Enactor waits for the Scheduler's confirmation before declining itself."""


def _remote_approver(handle: Handle, method: str, to: str = SCHEDULER_ACTOR, *,
                     signer: CallSigner | None = None) -> Approver:
    def approve(proposal: ScheduleProposal) -> bool | Refusal:
        try:
            if signer is None:
                return ray.get(getattr(handle, method).remote(proposal), timeout=APPROVAL_TIMEOUT_S)
            proof = signer.sign(method, {"proposal": proposal}, to=to)
            return ray.get(getattr(handle, method).remote(proposal, proof=proof), timeout=APPROVAL_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            return Refusal(code=codes.APPROVAL_TIMEOUT, by="enactor",
                           reason=f"the scheduler did not confirm within {APPROVAL_TIMEOUT_S:g} s")

    return approve
