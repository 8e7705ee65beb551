"""The class object on Ray: :class:`ClassActor`, a thin shell around a
:class:`~legionrm.hostobj.classobj.ClassObject`, and the remote ports it (and
the Scheduler) reaches host and vault actors through.

A class object's hosts live in host group actors (many simulated hosts each)
or host actors (one real node each); the class keeps one
:class:`RemoteHostPort` per carrying actor, so its core's batched
``create_instances`` asks each carrier once for all its starts, and sends to
every carrier before it waits on any (:meth:`RemoteHostPort.send_starts`).
Every remote call has a timeout.  ``legionrm.hostobj.actor`` re-exports
:class:`ClassActor` and spawns it (:func:`~legionrm.hostobj.actor.spawn_class`).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import ray

from legionrm.auth import CallSigner, Registry, signed
from legionrm.auth.actordoor import ActorDoor, own
from legionrm.auth.guard import Guard
from legionrm.auth.guard import auth_home as auth_home_dir
from legionrm.auth.hostdoor import ClassDoor, create_args
from legionrm.hostobj.build import build_class
from legionrm.models import (
    ClassSpec,
    CreateRequest,
    Holder,
    InstanceRef,
    Refusal,
    ReservationToken,
    Resources,
    StartRequest,
)
from legionrm.naming import class_name

DEFAULT_TIMEOUT_S = 30.0


class RemoteHostPort:
    """A class object's port to a host carried by a HostActor or HostGroupActor
    (both answer ``start_objects`` / ``stop_objects`` batches).  With ``signer``
    (a class object's or the Scheduler's agent) each call carries its proof,
    made out to ``to`` (the host's name: its carrier, a host or a host group, hears it)."""

    def __init__(self, handle: Any, timeout_s: float = DEFAULT_TIMEOUT_S, signer: CallSigner | None = None, to: str = "") -> None:
        self._h, self._timeout, self.signer, self.to = handle, timeout_s, signer, to

    def start_object(
        self, token: ReservationToken, class_name: str, holder: Holder, *, vault: str | None = None,
        args: Mapping[str, Any] | None = None, impl: str | None = None,
    ) -> InstanceRef | Refusal:
        req = StartRequest(token=token, class_name=class_name, holder=holder, vault=vault, args=dict(args or {}), impl=impl)
        return self.start_objects([req])[0]

    def start_objects(self, starts: list[StartRequest]) -> list[InstanceRef | Refusal]:
        """One batched call for ``starts`` (all on hosts this port's actor carries)."""
        return self.send_starts(starts)()

    def send_starts(self, starts: list[StartRequest]) -> Callable[[], list[InstanceRef | Refusal]]:
        """Send ``starts`` in one call now; the function returned waits for the
        answers (up to the port's timeout), so a class object can send to every
        carrier before it waits on any."""
        proof = signed(self.signer, "start_objects", {"starts": starts}, to=self.to)
        ref = self._h.start_objects.remote(starts, proof=proof)
        return lambda: ray.get(ref, timeout=self._timeout)

    def stop_object(self, instance_id: str, reason: str = "stopped") -> Resources | Refusal:
        proof = signed(self.signer, "stop_objects", {"items": [instance_id], "reason": reason}, to=self.to)
        return ray.get(self._h.stop_objects.remote([instance_id], reason, proof=proof), timeout=self._timeout)[0]


class RemoteVaultPort:
    """A class object's port to a vault actor; proofs made out to the vault's name ``to``."""

    def __init__(self, handle: Any, timeout_s: float = DEFAULT_TIMEOUT_S, signer: CallSigner | None = None, to: str = "") -> None:
        self._h, self._timeout, self.signer, self.to = handle, timeout_s, signer, to

    def use(self, token: ReservationToken, host: str, holder: Holder) -> str | Refusal:
        proof = signed(self.signer, "use", {"token": token, "host": host, "holder": holder}, to=self.to)
        return ray.get(self._h.use.remote(token, host, holder, proof=proof), timeout=self._timeout)

    def release(self, use_id: str, *, rollback: bool = False) -> Resources | Refusal:
        proof = signed(self.signer, "release", {"use_id": use_id, "rollback": rollback}, to=self.to)
        return ray.get(self._h.release.remote(use_id, rollback=rollback, proof=proof), timeout=self._timeout)


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
        self._carriers: dict[Any, RemoteHostPort] = {}  # actor handle -> its port (handles compare by actor id)
        # with a home: the class signs its starts, stops and vault uses as its own agent (key in memory only),
        # and creates only what the Enactor asks for
        self._signer: CallSigner | None = None
        if auth_home:
            cred = Registry(auth_home_dir(auth_home)).add_agents("class", [spec.name])[spec.name]
            self._signer = CallSigner(cred, time.time)
        self._add(hosts or {}, vaults or {})
        self.core = build_class(spec, hosts=self._hosts.get, vaults=self._vaults.get)
        guard = Guard.for_home(auth_home, by=class_name(spec.name)) if auth_home else None
        self.door, self.views = ClassDoor(guard, self._instance_user, by=class_name(spec.name)), ActorDoor(
            guard, class_name(spec.name))

    def _instance_user(self, instance_id: str) -> str | None:
        return next((r.user for r in self.core.list_instances() if r.instance_id == instance_id), None)

    def ping(self) -> str:
        return "ok"

    def add_resources(self, hosts: Mapping[str, Any], vaults: Mapping[str, Any] | None = None,
                      proof: Any = None) -> None:
        """Learn (more) host and vault carriers: the system or an admin only (a rogue carrier would see every start)."""
        self.views.require_system(proof, "add_resources", {"hosts": sorted(hosts), "vaults": sorted(vaults or {})},
                                  admin=True)
        self._add(hosts, vaults)

    def _add(self, hosts: Mapping[str, Any], vaults: Mapping[str, Any] | None = None) -> None:
        signer = self._signer
        for n, h in hosts.items():  # one port per carrying actor: its hosts' starts go in one call
            self._hosts[n] = self._carriers.setdefault(h, RemoteHostPort(h, signer=signer, to=n))
        self._vaults.update({n: RemoteVaultPort(v, signer=signer, to=n) for n, v in (vaults or {}).items()})

    def create_instance(self, host: str, vault: str | None, token: ReservationToken, args: dict | None = None,
                        vault_token: ReservationToken | None = None, holder: Holder | None = None,
                        proof: Any = None) -> InstanceRef | Refusal:
        """Create an instance: only the Enactor asks (after the Scheduler approved)."""
        refused = self.door.check_create(proof, create_args(host, vault, token, args, vault_token, holder))
        if refused is not None:
            return refused
        return self.core.create_instance(host, vault, token, args, vault_token=vault_token, holder=holder)

    def create_instances(self, batch: list[CreateRequest], proof: Any = None) -> list[InstanceRef | Refusal]:
        """Create an instance for each request (see ``ClassObject.create_instances``), one answer each, in
        order: only the Enactor asks (after the Scheduler approved), with one proof over the whole batch."""
        refused = self.door.check_create(proof, {"batch": batch}, call="create_instances")
        if refused is not None:
            return [refused for _ in batch]
        return self.core.create_instances(batch)

    def destroy_instance(self, instance_id: str, reason: str = "destroyed", proof: Any = None) -> bool | Refusal:
        """Stop an instance: the Scheduler, the Enactor or the instance's user."""
        refused = self.door.check_destroy(proof, {"instance_id": instance_id, "reason": reason}, instance_id)
        if refused is not None:
            return refused
        return self.core.destroy_instance(instance_id, reason)

    def instance_stopped(self, instance_id: str, proof: Any = None) -> bool:
        """Forget an instance its host stopped: the Scheduler (or Enactor) only."""
        self.views.require_system(proof, "instance_stopped", {"instance_id": instance_id})
        return self.core.instance_stopped(instance_id)

    def adopt(self, refs: list[InstanceRef], proof: Any = None) -> int:
        """Count again the running instances of this class a Scheduler booted anew on its kept
        book still runs (see ``ClassObject.adopt``): the Scheduler only."""
        self.views.require_system(proof, "adopt", {"refs": refs})
        return self.core.adopt(refs)

    def list_instances(self, proof: Any = None) -> list[InstanceRef]:
        """The instances this class created (a user's own only)."""
        return own(self.views.viewer(proof, "list_instances", {}), self.core.list_instances(), lambda i: i.user)
