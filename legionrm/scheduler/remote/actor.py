"""The Scheduler's ports over Ray: the only places its shell
(:mod:`legionrm.scheduler.actor`) talks to other actors.

The Enactor (:class:`RemoteEnactor`, with the Scheduler as approver), a class
actor (:class:`RemoteClassPort`), the actor carrying a host
(:class:`RemoteCarrier`, the watch's view), the stopper and the watch built
over them (:func:`ray_stopper`, :func:`ray_watch`), and the auditor's repair
of one reservation (:func:`cancel_reservation_at`).  Each call is signed with
the Scheduler agent's signer (when authentication is on) and has a timeout.
"""

from __future__ import annotations

from typing import Any, Callable

import ray

from legionrm import codes
from legionrm.auth import CallSigner, signed
from legionrm.enactor.mapping import attest_schedules
from legionrm.hostobj.classes.actor import RemoteHostPort
from legionrm.models import EnactRequest, EnactResult, PlacementFailure, ReservedStart, ScheduleAttempt
from legionrm.naming import ENACTOR, class_name, host_name, named_actor
from legionrm.scheduler.elastic import HostStopper
from legionrm.scheduler.watch import HostWatch

CALL_TIMEOUT_S = 120.0

WATCH_TIMEOUT_S = 5.0
"""How long the Scheduler's watch waits for a host's carrier to answer."""


class RemoteEnactor:
    """``enact_schedule`` on an Enactor actor, with this scheduler as approver."""

    def __init__(self, handle: Any, approver: tuple[Any, ...] | None = None, *, signer: CallSigner | None = None,
                 abandon: Callable[[str], object] | None = None) -> None:
        self.handle = handle
        self.approver = approver
        self.signer = signer
        """With authentication on: the Scheduler agent's :class:`~legionrm.auth.CallSigner`; each
        ``enact_schedule`` carries its proof (the Enactor runs no one else's)."""
        self.attester = signer.credential if signer is not None else None
        """With authentication on: a :class:`~legionrm.auth.Credential` of the
        Scheduler, which vouches for each request's holder to every resource its
        schedules name (an :class:`~legionrm.auth.Attestation` per resource)."""
        self.abandon = abandon
        """Called with a request id when the Enactor died (or never answered)
        during its enactment: cancels what it may have reserved for it."""

    def enact_schedule(self, schedules: EnactRequest) -> EnactResult:
        # the wire form is plain models: every master goes over anyway, and the actor's
        # side need not unpickle the planner's drafts (the plan's lazy masters) to read them
        schedules = schedules if type(schedules.masters) is tuple else schedules.replaced(masters=tuple(schedules.masters))
        if self.attester is not None:
            schedules = attest_schedules(self.attester, schedules)
        try:
            if self.signer is None:
                return ray.get(self.handle.enact_schedule.remote(schedules, self.approver), timeout=CALL_TIMEOUT_S)
            proof = self.signer.sign("enact_schedule", {"request": schedules, "approver": self.approver[1]
                                                        if self.approver else None}, to=ENACTOR)
            return ray.get(self.handle.enact_schedule.remote(schedules, self.approver, proof=proof),
                           timeout=CALL_TIMEOUT_S)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            # the Enactor died (Ray restarts it) or hung: nothing it reserved for this request
            # is held by anyone now, so cancel it, and answer the request as not placed
            if self.abandon is not None:
                self.abandon(schedules.request_id)
            why = f"the enactor did not finish: {type(exc).__name__}"
            return EnactResult(ok=False, attempts=(ScheduleAttempt(master=0, deltas_tried=0, succeeded=False, failures=(
                PlacementFailure(key="*", resource="enactor", code=codes.ENACTOR_LOST, reason=why),)),))

    def start_reserved(self, held: ReservedStart) -> EnactResult:
        try:
            proof = signed(self.signer, "start_reserved", {"held": held}, to=ENACTOR)
            return ray.get(self.handle.start_reserved.remote(held, self.approver, proof=proof), timeout=CALL_TIMEOUT_S)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
            return EnactResult(ok=False, attempts=(ScheduleAttempt(master=0, deltas_tried=0, succeeded=False, failures=(
                PlacementFailure(key="*", resource="enactor", code=codes.ENACTOR_LOST,
                                 reason=f"the enactor did not start the reservation: {type(exc).__name__}"),)),))


class RemoteClassPort:
    """``instance_stopped`` on a class actor (the stopper tells the class), signed with ``signer``
    and made out to ``to`` (the class actor's name)."""

    def __init__(self, handle: Any, signer: CallSigner | None = None, to: str = "") -> None:
        self.handle, self.signer, self.to = handle, signer, to

    def instance_stopped(self, instance_id: str) -> bool:
        proof = signed(self.signer, "instance_stopped", {"instance_id": instance_id}, to=self.to)
        return ray.get(self.handle.instance_stopped.remote(instance_id, proof=proof), timeout=CALL_TIMEOUT_S)


class RemoteCarrier:
    """``list_instances(host)`` on the actor carrying a host (the watch's view), signed with ``signer``
    and made out to ``to`` (a host that actor carries)."""

    def __init__(self, handle: Any, signer: CallSigner | None = None, to: str = "") -> None:
        self.handle, self.signer, self.to = handle, signer, to

    def list_instances(self, host: str | None) -> list:
        proof = signed(self.signer, "list_instances", {"host": host}, to=self.to)
        return ray.get(self.handle.list_instances.remote(host, proof=proof), timeout=WATCH_TIMEOUT_S)

    def work_results(self, host: str, instance_ids: list[str]) -> dict:
        if not hasattr(self.handle, "work_results"):  # a host group: simulated hosts run no work
            return {}
        proof = signed(self.signer, "work_results", {"instance_ids": instance_ids}, to=self.to)
        return ray.get(self.handle.work_results.remote(instance_ids, proof=proof), timeout=WATCH_TIMEOUT_S)

    def set_drain(self, host: str, reason: str | None) -> bool:
        """Drain ``host`` for ``reason`` (None: resume it); False when this actor does not carry it."""
        proof = signed(self.signer, "drain", {"host": host, "reason": reason}, to=self.to)
        return bool(ray.get(self.handle.drain.remote(host, reason, proof=proof), timeout=WATCH_TIMEOUT_S))

    def work_output(self, host: str, instance_id: str, stream: str, offset: int, limit: int) -> tuple[bytes, int]:
        args = {"instance_id": instance_id, "stream": stream, "offset": offset, "limit": limit}
        proof = signed(self.signer, "work_output", args, to=self.to)
        return ray.get(self.handle.work_output.remote(**args, proof=proof), timeout=WATCH_TIMEOUT_S)


def ray_stopper(carriers: dict[str, Any], classes: dict[str, Any], signer: CallSigner | None = None) -> HostStopper:
    """A stopper over Ray: a host's carrier from ``carriers`` (host name ->
    host or host-group actor), else the host's own named actor.  With
    ``signer`` (the Scheduler agent's) each stop carries its proof."""

    def port(host: str) -> RemoteHostPort | None:
        handle = carriers.get(host) or named_actor(host_name(host))
        return RemoteHostPort(handle, CALL_TIMEOUT_S, signer=signer, to=host) if handle is not None else None

    return HostStopper(port, {name: RemoteClassPort(h, signer, class_name(name)) for name, h in classes.items()})


def one_per_actor(named: dict[str, Any]) -> dict[Any, tuple[str, Any]]:
    """(a resource name it carries, its handle) by actor, from resource name -> carrier actor (a group carries
    many hosts, each with its own copy of the handle): one call per actor, made out to that name (a group hears it).
    Ray's actor handles are equal (and hash alike) when they name the same actor."""
    return {h: (name, h) for name, h in named.items()}


def ray_watch(carriers: dict[str, Any], signer: CallSigner | None = None) -> HostWatch:
    """The instance watch over Ray: a host's carrier, else the host's own named actor."""

    def carrier(host: str) -> RemoteCarrier | None:
        handle = carriers.get(host) or named_actor(host_name(host))
        return RemoteCarrier(handle, signer, host) if handle is not None else None

    def every() -> list[RemoteCarrier]:
        return [RemoteCarrier(h, signer, name) for name, h in one_per_actor(carriers).values()]

    return HostWatch(carrier, every)


def cancel_reservation_at(vaults: dict[str, Any], carriers: dict[str, Any], signer: Any, resource: str,
                          token_id: str) -> bool:
    """Cancel one reservation at the actor of ``vaults`` or ``carriers`` that carries ``resource``,
    signed by ``signer`` (the auditor's repair); False when it could not."""
    try:
        if (vault := vaults.get(resource)) is not None:  # one resource: by its token id
            return ray.get(vault.cancel_reservation.remote(token_id, proof=signed(
                signer, "cancel_reservation", {"token": token_id}, to=resource)), timeout=WATCH_TIMEOUT_S) is True
        carrier = carriers.get(resource)  # a host or host group actor: (host, token id)
        if carrier is None:
            return False
        items = [(resource, token_id)]
        got = ray.get(carrier.cancel_reservations.remote(items, proof=signed(
            signer, "cancel_reservations", {"items": items}, to=resource)), timeout=WATCH_TIMEOUT_S)
    except ray.exceptions.RayError:
        return False
    return bool(got) and got[0] is True
