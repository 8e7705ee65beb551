"""A running system's handles: :class:`System`, the actors of one system and the
calls a driver makes on them, each signed as the driver's user when the system
checks who calls."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import ray

from legionrm.auth import CallSigner, signed
from legionrm.models import (
    ClusterSpec,
    Identity,
    ObjectStatus,
    QueryResult,
    Refusal,
    SchedulerResponse,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.naming import (
    COLLECTION,
    ENACTOR,
    POOLS,
    SCHEDULER,
    class_name,
    group_name,
    host_name,
    instance_actor_names,
    kill_named,
    named_actor,
    scheduler_name,
    vault_name,
)
from legionrm.system.driver import call, caller_name


@dataclass
class System:
    """Handles to the actors of one running system."""

    spec: ClusterSpec
    collection: Any
    scheduler: Any = None  # the default scheduler (the first), as ``schedulers[name]``
    enactor: Any = None
    pools: Any = None  # the PoolActor every scheduler admits through
    groups: dict[str, Any] = field(default_factory=dict)
    vaults: dict[str, Any] = field(default_factory=dict)
    classes: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, Any] = field(default_factory=dict)  # hosts bound to real Ray nodes
    detached: bool = False
    signer: CallSigner | None = None  # signs each call as this driver's user (None: the system checks nobody)
    resources: tuple[str, ...] = ()  # every host and vault booted: what the Collection should hold
    schedulers: dict[str, Any] = field(default_factory=dict)  # every scheduler actor by name, the default first

    def handles(self) -> list[Any]:
        return [*self.schedulers.values(), self.enactor, self.pools, *self.classes.values(), *self.nodes.values(),
                *self.groups.values(), *self.vaults.values(), self.collection]

    def names(self) -> list[str]:
        """The named actors of this system (what `legionrm down` kills)."""
        return ([*map(scheduler_name, self.schedulers), ENACTOR, POOLS, COLLECTION] + [group_name(g) for g in self.groups]
                + [vault_name(v) for v in self.vaults] + [class_name(c) for c in self.classes]
                + [host_name(n) for n in self.nodes])

    def schedule(self, request: SchedulingRequest, timeout: float = 120.0) -> SchedulerResponse:
        """``scheduleObjects`` on this system's Scheduler actor."""
        return self._signed("scheduleObjects", {"request": request}, timeout)

    def _signed(self, call_name: str, args: dict[str, Any], timeout: float = 120.0, /, **unsigned: Any) -> Any:
        """``call_name`` on the Scheduler actor, with this driver's proof over ``args``
        when the system checks who calls (``unsigned`` arguments go along unsigned)."""
        proof = signed(self.signer, call_name, args, to=SCHEDULER)
        return call(getattr(self.scheduler, call_name).remote(**args, **unsigned, proof=proof), timeout)

    def deactivate(self, object_id: str, reason: str = "deactivated by its user") -> ObjectStatus | Refusal:
        """Save a running object's state to a vault and stop its active copy; it stays known, inert."""
        return self._signed("deactivate", {"object_id": object_id, "reason": reason})

    def activate_on(self, object_id: str, constraint: str = "true") -> ObjectStatus | Refusal:
        """Re-activate an inert object on a host matching the MIL ``constraint``, its state restored."""
        return self._signed("activate", {"object_id": object_id, "constraint": constraint})

    def activate(self, *object_ids: str, user: str | None = None) -> SchedulerResponse:
        """``scheduleObjects`` activating ``object_ids`` as ``user`` (a system that checks
        who calls uses the signer's): an inert object is placed anew and restored."""
        who = Identity(user=user or caller_name() or "anonymous")
        return self.schedule(SchedulingRequest(request_id=f"activate-{secrets.token_hex(4)}", identity=who,
                                               activate=tuple(object_ids), wait=False))

    def migrate(self, object_id: str, constraint: str = "true") -> ObjectStatus | Refusal:
        """Move a running object to a host matching the MIL ``constraint``, its state kept."""
        return self._signed("migrate", {"object_id": object_id, "constraint": constraint})

    def object_status(self, object_id: str) -> ObjectStatus | Refusal:
        """Where the object is now: running (its instance) or inert (its vault)."""
        return self._signed("object_status", {"object_id": object_id})

    def subscribe(self, subject: str, statuses: list[str], handle: Any, method: str = "on_event",
                  timeout: float = 30.0) -> str:
        """Call ``handle.method(event)`` (a :class:`~legionrm.models.StatusEvent`)
        for each of ``statuses`` (none: all) of ``subject``: a request id, an
        instance id, or ``*``; returns the trigger id (:meth:`unsubscribe`)."""
        return self._signed("register_trigger", {"subject": subject, "statuses": list(statuses)}, timeout,
                            handle=handle, method=method)

    def unsubscribe(self, trigger_id: str, timeout: float = 30.0) -> bool:
        return self._signed("remove_trigger", {"trigger_id": trigger_id}, timeout)

    def events_since(self, request_id: str, cursor: int = 0, timeout: float = 30.0) -> list[StatusEvent]:
        """``request_id``'s status events after ``cursor`` (each event's ``seq`` is the next cursor)."""
        return self._signed("events_since", {"request_id": request_id, "cursor": cursor}, timeout)

    def query(self, text: str, caller: Identity | None = None) -> QueryResult:
        if self.signer is None:
            return call(self.collection.query.remote(text, caller))
        proof = self.signer.sign("query", {"text": text, "caller": caller, "include_unavailable": False},
                                 to=COLLECTION)
        return call(self.collection.query.remote(text, caller, False, proof=proof))

    def shutdown(self) -> None:
        """Stop every actor of this system, instances first (the hosts of Ray nodes that joined after
        boot too), and any instance actor of its Ray-node hosts still running after them (idempotent)."""
        joined: list[str] = []  # the hosts the default scheduler bound as nodes joined: no booted list names them
        for name, handle in self.schedulers.items():
            try:
                joined += call(handle.stop_cycle.remote(proof=signed(self.signer, "stop_cycle", {},
                                                                     to=scheduler_name(name))), 10) or []
            except Exception:  # already gone
                pass
        nodes = {**{h: a for h in joined if (a := named_actor(host_name(h))) is not None}, **self.nodes}
        carriers = [*nodes.items(), *((group_name(g), h) for g, h in self.groups.items())]
        for to, h in carriers:
            try:  # as this driver's user: an administrator's shutdown (else refused, and the actors are killed)
                reason = "host group stopped" if to.startswith(group_name("")) else "host stopped"
                call(h.shutdown.remote(reason, proof=signed(self.signer, "shutdown", {"reason": reason}, to=to)), 10)
            except Exception:  # already gone
                pass
        for name, v in self.vaults.items():  # a vault drops its temporary shelf
            try:
                call(v.shutdown.remote(proof=signed(self.signer, "shutdown", {}, to=name)), 10)
            except Exception:  # already gone
                pass
        for h in [*self.handles(), *nodes.values()]:
            try:
                ray.kill(h)
            except Exception:  # already gone (or None)
                pass
        # instance actors are detached: those a dead host could not stop would outlive everything
        kill_named([n for host in nodes for n in instance_actor_names(host + "~")])
