"""Ray shells for host, host group, vault and class objects.

Each actor holds one core and forwards to it; a daemon thread expires
reservations and sends a heartbeat every ``heartbeat_s`` (the cores lock
themselves, so the thread and the calls may interleave).  Every actor asks for
``num_cpus=0`` (a default actor needs a CPU and would sit pending on a node
with none).  Actors are named in the ``legionrm`` namespace:
``host:<name>``, ``hostgroup:<name>``, ``vault:<name>``, ``class:<name>``.

The ``spawn_*`` helpers are what ``legionrm up`` and tests call.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Mapping, Sequence

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from legionrm.auth import CallSigner, Registry, signed
from legionrm.auth.guard import Guard, host_attestations
from legionrm.auth.guard import auth_home as auth_home_dir
from legionrm.auth.hostdoor import ClassDoor, ResourceDoor, create_args
from legionrm.hostobj.build import build_class, build_host, build_vault
from legionrm.hostobj.durable import Keeper
from legionrm.hostobj.group import HostGroup, InstanceKey, TokenRef
from legionrm.hostobj.ray_node import RayNodeHost
from legionrm.hostobj.resource import ResourceObject
from legionrm.models import (
    AttrValue,
    ClassSpec,
    Holder,
    HostSpec,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    ResourceAudit,
    ResourceRecord,
    Resources,
    StartRequest,
    VaultSpec,
)
from legionrm.naming import (
    class_name,
    control_plane,
    group_name,
    host_name,
    vault_name,
)
from legionrm.state import HostStore

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_S = 30.0


class RemoteSink:
    """A collection sink over a Collection actor handle: fire-and-forget calls
    (a heartbeat never waits on the collection).  With ``signers`` (resource
    name -> its own agent's signer) every write carries that resource's proof."""

    def __init__(self, handle: Any, signers: Mapping[str, CallSigner] | None = None) -> None:
        self._h = handle
        self.signers = dict(signers or {})

    def _proof(self, name: str, call: str, args: Any) -> Any:
        signer = self.signers.get(name)
        return signer.sign(call, args) if signer is not None else None

    def join(self, record: ResourceRecord) -> None:
        self._h.join.remote(record, proof=self._proof(record.name, "join", {"record": record}))

    def update(self, name: str, attrs: dict[str, AttrValue | None]) -> None:
        self._h.update.remote(name, attrs, proof=self._proof(name, "update", {"name": name, "attrs": dict(attrs or {})}))

    def update_many(self, updates: list[tuple[str, dict[str, AttrValue | None]]]) -> None:
        if not self.signers:
            self._h.update_many.remote(updates)
            return
        proofs = [self._proof(n, "update", {"name": n, "attrs": dict(a or {})}) for n, a in updates]
        self._h.update_many.remote(updates, proofs)

    def leave(self, name: str) -> None:
        self._h.leave.remote(name, proof=self._proof(name, "leave", {"name": name}))


def _auth_sink(collection: Any, auth_home: str | None, kind: str, names: Sequence[str]) -> RemoteSink | None:
    """The sink of resources ``names``: each gets its own agent key now (in this
    actor's memory only) and signs its own Collection writes."""
    if collection is None:
        return None
    if not auth_home:
        return RemoteSink(collection)
    creds = Registry(auth_home_dir(auth_home)).add_agents(kind, names)
    return RemoteSink(collection, {n: CallSigner(c, time.time) for n, c in creds.items()})


def _guard_resources(cores: Sequence[ResourceObject], auth_home: str | None) -> None:
    """Make each resource check the Scheduler's attestation of who reserves."""
    if auth_home:
        for core in cores:
            core.attestations = host_attestations(auth_home, by=core.name)


def _door(auth_home: str | None, by: str, token_holder: Any, instance_holder: Any = None) -> ResourceDoor:
    """The door of a resource actor: open without a home, else checking each
    cancel, stop and start against the registry (see :mod:`legionrm.auth.hostdoor`)."""
    guard = Guard.for_home(auth_home, by=by) if auth_home else None
    return ResourceDoor(guard, token_holder=token_holder, instance_holder=instance_holder, by=by)


class RemoteHostPort:
    """A class object's port to a host carried by a HostActor or HostGroupActor
    (both answer ``start_objects`` / ``stop_objects`` batches).  With ``signer``
    (a class object's or the Scheduler's agent) each call carries its proof."""

    def __init__(self, handle: Any, timeout_s: float = DEFAULT_TIMEOUT_S, signer: CallSigner | None = None) -> None:
        self._h, self._timeout, self.signer = handle, timeout_s, signer

    def start_object(
        self, token: ReservationToken, class_name: str, holder: Holder, *, vault: str | None = None,
        args: Mapping[str, Any] | None = None, impl: str | None = None,
    ) -> InstanceRef | Refusal:
        req = StartRequest(token=token, class_name=class_name, holder=holder, vault=vault, args=dict(args or {}), impl=impl)
        proof = signed(self.signer, "start_objects", {"starts": [req]})
        return ray.get(self._h.start_objects.remote([req], proof=proof), timeout=self._timeout)[0]

    def stop_object(self, instance_id: str, reason: str = "stopped") -> Resources | Refusal:
        proof = signed(self.signer, "stop_objects", {"items": [instance_id], "reason": reason})
        return ray.get(self._h.stop_objects.remote([instance_id], reason, proof=proof), timeout=self._timeout)[0]


class RemoteVaultPort:
    def __init__(self, handle: Any, timeout_s: float = DEFAULT_TIMEOUT_S, signer: CallSigner | None = None) -> None:
        self._h, self._timeout, self.signer = handle, timeout_s, signer

    def use(self, token: ReservationToken, host: str, holder: Holder) -> str | Refusal:
        proof = signed(self.signer, "use", {"token": token, "host": host, "holder": holder})
        return ray.get(self._h.use.remote(token, host, holder, proof=proof), timeout=self._timeout)

    def release(self, use_id: str, *, rollback: bool = False) -> Resources | Refusal:
        proof = signed(self.signer, "release", {"use_id": use_id, "rollback": rollback})
        return ray.get(self._h.release.remote(use_id, rollback=rollback, proof=proof), timeout=self._timeout)


class _Beating:
    """The heartbeat thread shared by the resource shells."""

    def _start_beat(self, beat: Any, interval: float) -> None:
        self._stop = threading.Event()
        beat()  # join at once

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    beat()
                except Exception:  # a missed beat must not kill the thread; the collection marks us stale
                    log.exception("heartbeat failed")

        threading.Thread(target=loop, name="heartbeat", daemon=True).start()


def _beat_one(core: ResourceObject) -> Any:
    def beat() -> None:
        core.expire()
        core.heartbeat()

    return beat


@ray.remote(num_cpus=0)
class HostActor(_Beating):
    """One host object (a real Ray node when ``node_id`` is given).

    Answers both single calls and the batched calls of a host group, so the
    Enactor can treat a lone host as a group of one.
    """

    def __init__(self, spec: HostSpec, collection: Any = None, heartbeat_s: float = 5.0, node_id: str | None = None,
                 auth_home: str | None = None) -> None:
        sink = _auth_sink(collection, auth_home, "host", [spec.name])
        if node_id is not None:
            self.core = build_host(spec, sink=sink, cls=RayNodeHost, node_id=node_id)
        else:
            self.core = build_host(spec, sink=sink)
        self._batch = HostGroup(self.core.name, [self.core], sink=self.core.sink)  # batches for a group of one
        _guard_resources([self.core], auth_home)
        self.door = _door(auth_home, self.core.name, self._batch.attested_holder, self._batch.instance_holder)
        self._start_beat(_beat_one(self.core), heartbeat_s)

    def ping(self) -> str:
        return "ok"

    def make_reservation(self, request: ReservationRequest) -> ReservationToken | Refusal:
        return self.core.make_reservation(request)

    def make_reservations(self, requests: list[ReservationRequest]) -> list[ReservationToken | Refusal]:
        return self._batch.make_reservations(requests)

    def check_reservation(self, token_id: str) -> ReservationToken | Refusal:
        return self.core.check_reservation(token_id)

    def cancel_reservation(self, token: str | ReservationToken, proof: Any = None) -> bool | Refusal:
        """Cancel one reservation: the Scheduler or Enactor, or its attested holder (a refusal with its code, else)."""
        return self.door.gate_one(proof, "cancel_reservation", {"token": token}, token, self.door.may_cancel,
                                  self.core.cancel_reservation)

    def cancel_reservations(self, items: list[TokenRef], proof: Any = None) -> list[bool | Refusal]:
        return self.door.gate(proof, "cancel_reservations", {"items": items}, items, self.door.may_cancel,
                              self._batch.cancel_reservations)

    def cancel_requests(self, request_ids: list[str], prefix: bool = False) -> list[str]:
        """Cancel what was granted for these caller request ids (see ResourceObject.cancel_requests)."""
        return self.core.cancel_requests(request_ids, prefix=prefix)

    def start_object(self, token: ReservationToken, class_name: str, holder: Holder, vault: str | None = None,
                     args: dict | None = None, impl: str | None = None, proof: Any = None) -> InstanceRef | Refusal:
        req = StartRequest(token=token, class_name=class_name, holder=holder, vault=vault, args=dict(args or {}), impl=impl)
        return self.start_objects([req], proof=proof)[0]

    def start_objects(self, starts: list[StartRequest], proof: Any = None) -> list[InstanceRef | Refusal]:
        """Start each (only with the Scheduler's approval: signed by the Enactor or a class object)."""
        return self.door.gate(proof, "start_objects", {"starts": starts}, starts, self.door.may_start,
                              self._batch.start_objects)

    def stop_object(self, instance_id: str, reason: str = "stopped", proof: Any = None) -> Resources | Refusal:
        return self.stop_objects([instance_id], reason, proof=proof)[0]

    def stop_objects(self, items: list[InstanceKey], reason: str = "stopped", proof: Any = None) -> list[Resources | Refusal]:
        """Stop each: the Scheduler, the Enactor, a class object, or the instance's attested holder."""
        return self.door.gate(proof, "stop_objects", {"items": items, "reason": reason}, items, self.door.may_stop,
                              lambda xs: self._batch.stop_objects(xs, reason))

    def list_instances(self, host: str | None = None) -> list[InstanceRef]:
        """This host's running instances (``host``, when given, must be this host's name)."""
        return self.core.list_instances() if host in (None, self.core.name) else []

    def reservations(self) -> list[ReservationToken]:
        """Tokens of the reservations that still hold capacity here."""
        return self.core.reservations()

    def record(self) -> ResourceRecord:
        return self.core.record()

    def state(self, resources: Resources | None = None, duration_s: float | None = None) -> str:
        """``free`` / ``busy_later`` / ``busy`` now, for the whole host or for one request."""
        return self.core.state(resources, duration_s)

    def audit_views(self) -> list[ResourceAudit]:
        """What this actor's resources hold now, for the auditor."""
        return [self.core.audit_view()]

    def heartbeat(self) -> dict[str, AttrValue]:
        return self.core.heartbeat()

    def expire(self) -> list[str]:
        return self.core.expire()

    def shutdown(self, reason: str = "host stopped") -> None:
        """Stop the heartbeat and every instance, and leave the collection."""
        self._stop.set()
        self.core.shutdown(reason)


@ray.remote(num_cpus=0)
class HostGroupActor(_Beating):
    """Many simulated host objects in one process; one batched call per Enactor step."""

    def __init__(self, name: str, specs: list[HostSpec], collection: Any = None, heartbeat_s: float = 5.0,
                 auth_home: str | None = None, state_path: str | None = None) -> None:
        sink = _auth_sink(collection, auth_home, "host", [s.name for s in specs])
        hosts = [build_host(s) for s in specs]
        _guard_resources(hosts, auth_home)
        self.core = HostGroup(name, hosts, sink=sink)
        # with a state file, what the hosts granted survives a restart of this actor
        self._keeper = Keeper(HostStore(state_path), hosts) if state_path else None
        if self._keeper is not None:
            back = self._keeper.restore()
            if any(back.values()):
                log.warning("host group %s restarted: %d reservation(s) reloaded", name, sum(back.values()))
        self.door = _door(auth_home, f"hostgroup:{name}", self.core.attested_holder, self.core.instance_holder)

        def beat() -> None:
            self.core.expire()
            self._save()
            self.core.heartbeat()

        self._start_beat(beat, heartbeat_s)

    def _save(self) -> None:
        if self._keeper is not None:
            self._keeper.save()

    def ping(self) -> str:
        return "ok"

    def names(self) -> list[str]:
        return self.core.names()

    def make_reservations(self, requests: list[ReservationRequest]) -> list[ReservationToken | Refusal]:
        out = self.core.make_reservations(requests)
        self._save()
        return out

    def check_reservations(self, items: list[TokenRef]) -> list[ReservationToken | Refusal]:
        return self.core.check_reservations(items)

    def cancel_reservations(self, items: list[TokenRef], proof: Any = None) -> list[bool | Refusal]:
        """Cancel each: the Scheduler or Enactor, or the reservation's attested holder."""
        out = self.door.gate(proof, "cancel_reservations", {"items": items}, items, self.door.may_cancel,
                             self.core.cancel_reservations)
        self._save()
        return out

    def cancel_requests(self, request_ids: list[str], prefix: bool = False) -> list[str]:
        """Cancel what any host here granted for these caller request ids
        (see ResourceObject.cancel_requests)."""
        out: list[str] = []
        for name in self.core.names():
            host = self.core.get(name)
            if host is not None:
                out += host.cancel_requests(request_ids, prefix=prefix)
        self._save()
        return out

    def start_objects(self, starts: list[StartRequest], proof: Any = None) -> list[InstanceRef | Refusal]:
        """Start each (only with the Scheduler's approval: signed by the Enactor or a class object)."""
        out = self.door.gate(proof, "start_objects", {"starts": starts}, starts, self.door.may_start,
                             self.core.start_objects)
        self._save()
        return out

    def stop_objects(self, items: list[InstanceKey], reason: str = "stopped", proof: Any = None) -> list[Resources | Refusal]:
        """Stop each: the Scheduler, the Enactor, a class object, or the instance's attested holder."""
        out = self.door.gate(proof, "stop_objects", {"items": items, "reason": reason}, items, self.door.may_stop,
                             lambda xs: self.core.stop_objects(xs, reason))
        self._save()
        return out

    def list_instances(self, host: str | None = None) -> list[InstanceRef]:
        return self.core.list_instances(host)

    def records(self) -> list[ResourceRecord]:
        return self.core.records()

    def audit_views(self) -> list[ResourceAudit]:
        """What this actor's resources hold now, for the auditor."""
        return self.core.audit_views()

    def heartbeat(self) -> dict[str, dict[str, AttrValue]]:
        return self.core.heartbeat()

    def expire(self) -> dict[str, list[str]]:
        return self.core.expire()

    def shutdown(self, reason: str = "host group stopped") -> None:
        self._stop.set()
        self.core.shutdown(reason)


@ray.remote(num_cpus=0)
class VaultActor(_Beating):
    def __init__(self, spec: VaultSpec, collection: Any = None, heartbeat_s: float = 5.0,
                 auth_home: str | None = None) -> None:
        self.core = build_vault(spec, sink=_auth_sink(collection, auth_home, "vault", [spec.name]))
        _guard_resources([self.core], auth_home)
        self.door = _door(auth_home, self.core.name,
                          lambda r, t: self.core.attested_holder(t) if r == self.core.name else None)
        self._start_beat(_beat_one(self.core), heartbeat_s)

    def ping(self) -> str:
        return "ok"

    def make_reservation(self, request: ReservationRequest, for_host: str | None = None) -> ReservationToken | Refusal:
        return self.core.make_reservation(request, for_host)

    def make_reservations(self, requests: list[ReservationRequest]) -> list[ReservationToken | Refusal]:
        return [self.core.make_reservation(r) for r in requests]

    def check_reservation(self, token_id: str) -> ReservationToken | Refusal:
        return self.core.check_reservation(token_id)

    def cancel_reservation(self, token: str | ReservationToken, proof: Any = None) -> bool | Refusal:
        return self.door.gate_one(proof, "cancel_reservation", {"token": token}, token, self.door.may_cancel,
                                  self.core.cancel_reservation)

    def cancel_reservations(self, items: list[str | ReservationToken], proof: Any = None) -> list[bool | Refusal]:
        return self.door.gate(proof, "cancel_reservations", {"items": items}, items, self.door.may_cancel,
                              lambda xs: [self.core.cancel_reservation(t) for t in xs])

    def cancel_requests(self, request_ids: list[str], prefix: bool = False) -> list[str]:
        """Cancel what was granted for these caller request ids (see ResourceObject.cancel_requests)."""
        return self.core.cancel_requests(request_ids, prefix=prefix)

    def use(self, token: ReservationToken, host: str, holder: Holder, proof: Any = None) -> str | Refusal:
        """Take the space for an instance: the Enactor or a class object only."""
        return self.door.gate_one(proof, "use", {"token": token, "host": host, "holder": holder}, token,
                                  lambda who, _t: self.door.may_use_vault(who),
                                  lambda t: self.core.use(t, host, holder))

    def release(self, use_id: str, rollback: bool = False, proof: Any = None) -> Resources | Refusal:
        return self.door.gate_one(proof, "release", {"use_id": use_id, "rollback": rollback}, use_id,
                                  lambda who, _u: self.door.may_use_vault(who),
                                  lambda u: self.core.release(u, rollback=rollback))

    def record(self) -> ResourceRecord:
        return self.core.record()

    def list_uses(self) -> dict[str, str]:
        return self.core.list_uses()

    def audit_views(self) -> list[ResourceAudit]:
        """What this actor's resources hold now, for the auditor."""
        return [self.core.audit_view()]

    def heartbeat(self) -> dict[str, AttrValue]:
        return self.core.heartbeat()

    def expire(self) -> list[str]:
        return self.core.expire()

    def shutdown(self) -> None:
        self._stop.set()
        self.core.leave()


@ray.remote(num_cpus=0)
class ClassActor:
    """A class object.  ``hosts`` maps a host name to the handle of the actor
    carrying it (a HostActor or a HostGroupActor); ``vaults`` a vault name to
    its VaultActor.  It waits on hosts (never the other way round), so a
    synchronous actor cannot deadlock here."""

    def __init__(self, spec: ClassSpec, hosts: Mapping[str, Any] | None = None, vaults: Mapping[str, Any] | None = None,
                 auth_home: str | None = None) -> None:
        self._hosts: dict[str, RemoteHostPort] = {}
        self._vaults: dict[str, RemoteVaultPort] = {}
        # with a home: the class signs its starts, stops and vault uses as its own agent (key in memory only),
        # and creates only what the Enactor asks for
        self._signer: CallSigner | None = None
        if auth_home:
            cred = Registry(auth_home_dir(auth_home)).add_agents("class", [spec.name])[spec.name]
            self._signer = CallSigner(cred, time.time)
        self.add_resources(hosts or {}, vaults or {})
        self.core = build_class(spec, hosts=self._hosts.get, vaults=self._vaults.get)
        self.door = ClassDoor(Guard.for_home(auth_home, by=f"class:{spec.name}") if auth_home else None,
                              self._instance_user, by=f"class:{spec.name}")

    def _instance_user(self, instance_id: str) -> str | None:
        return next((r.user for r in self.core.list_instances() if r.instance_id == instance_id), None)

    def ping(self) -> str:
        return "ok"

    def add_resources(self, hosts: Mapping[str, Any], vaults: Mapping[str, Any] | None = None) -> None:
        """Learn (more) host and vault carriers."""
        signer = getattr(self, "_signer", None)
        self._hosts.update({n: RemoteHostPort(h, signer=signer) for n, h in hosts.items()})
        self._vaults.update({n: RemoteVaultPort(v, signer=signer) for n, v in (vaults or {}).items()})

    def create_instance(self, host: str, vault: str | None, token: ReservationToken, args: dict | None = None,
                        vault_token: ReservationToken | None = None, holder: Holder | None = None,
                        proof: Any = None) -> InstanceRef | Refusal:
        """Create an instance: only the Enactor asks (after the Scheduler approved)."""
        refused = self.door.check_create(proof, create_args(host, vault, token, args, vault_token, holder))
        if refused is not None:
            return refused
        return self.core.create_instance(host, vault, token, args, vault_token=vault_token, holder=holder)

    def destroy_instance(self, instance_id: str, reason: str = "destroyed", proof: Any = None) -> bool | Refusal:
        """Stop an instance: the Scheduler, the Enactor or the instance's user."""
        refused = self.door.check_destroy(proof, {"instance_id": instance_id, "reason": reason}, instance_id)
        if refused is not None:
            return refused
        return self.core.destroy_instance(instance_id, reason)

    def instance_stopped(self, instance_id: str) -> bool:
        return self.core.instance_stopped(instance_id)

    def list_instances(self) -> list[InstanceRef]:
        return self.core.list_instances()


# --- spawning ----------------------------------------------------------------


def _opts(name: str, detached: bool, *, on_head: bool = True) -> dict[str, Any]:
    # never restarted (but a host group with a state file): a host object that
    # lost its calendar and token serials would grant what it had already granted.  On the head node, but for the
    # host object of a Ray node, which lives and dies with its node.
    opts = dict(control_plane(name, detached=detached), get_if_exists=True)
    if not on_head:
        opts.pop("resources")
    return opts


def spawn_host(spec: HostSpec, *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
               auth_home: str | None = None) -> Any:
    """A HostActor for a simulated host, named ``host:<name>``."""
    return HostActor.options(**_opts(host_name(spec.name), detached)).remote(spec, collection, heartbeat_s,
                                                                             auth_home=auth_home)


def spawn_ray_node_host(
    node_id: str, spec: HostSpec | None = None, *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
    auth_home: str | None = None,
) -> Any:
    """A HostActor for the real Ray node ``node_id``, itself pinned to that node.
    ``spec`` gives the name, policy and extra attributes (default name: ``node-<id[:8]>``);
    capacity comes from the node unless the spec's attributes set it."""
    spec = spec or HostSpec(name=f"node-{node_id[:8]}")
    return HostActor.options(
        **_opts(host_name(spec.name), detached, on_head=False),
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
    ).remote(spec, collection, heartbeat_s, node_id, auth_home=auth_home)


def spawn_host_group(
    name: str, host_specs: Sequence[HostSpec], *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
    auth_home: str | None = None, state_path: str | None = None, restarts: int = 0,
) -> Any:
    """A HostGroupActor carrying ``host_specs``, named ``hostgroup:<name>``.
    With ``state_path`` (its SQLite file) its hosts keep their secrets, token
    serials, reservations and instances across a restart; ``restarts`` is how
    many times Ray restarts it (give it only with a state file)."""
    opts = {**_opts(group_name(name), detached), "max_restarts": restarts}
    return HostGroupActor.options(**opts).remote(name, list(host_specs), collection, heartbeat_s,
                                                 auth_home=auth_home, state_path=state_path)


def spawn_vault(spec: VaultSpec, *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
                auth_home: str | None = None) -> Any:
    """A VaultActor, named ``vault:<name>``."""
    return VaultActor.options(**_opts(vault_name(spec.name), detached)).remote(spec, collection, heartbeat_s,
                                                                               auth_home=auth_home)


def spawn_class(
    spec: ClassSpec, *, hosts: Mapping[str, Any] | None = None, vaults: Mapping[str, Any] | None = None, detached: bool = False,
    auth_home: str | None = None,
) -> Any:
    """A ClassActor, named ``class:<name>``; ``hosts`` maps host name -> carrier handle."""
    return ClassActor.options(**_opts(class_name(spec.name), detached)).remote(spec, dict(hosts or {}), dict(vaults or {}),
                                                                               auth_home=auth_home)
