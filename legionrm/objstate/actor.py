"""The Ray side of objects' persistent state: the state calls of the host,
host-group and vault actors, and the Scheduler's port to them.

:class:`HostStateCalls` and :class:`VaultStateCalls` are mixins of the
actors in :mod:`legionrm.hostobj.actor` (each forwards to its core, through
the actor's door); :class:`RayStatePort` is the
:class:`~legionrm.scheduler.mobility.StatePort` the Scheduler actor moves
states with.  Only the Scheduler and the Enactor agents may save, restore,
put, read or delete an object's state (``auth.forbidden`` for anyone
else): a user moves their objects through the Scheduler, which checks that
they own them.  A call carrying bytes is signed over their SHA-256, not the
bytes themselves.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

import ray

from legionrm import codes
from legionrm.auth import CallSigner, VerifiedCaller, signed
from legionrm.auth.guard import ENACTOR, SCHEDULER
from legionrm.models import InstanceRef, Refusal
from legionrm.objstate.shelf import DirectoryShelf

STATE_CALL_TIMEOUT_S = 60.0
"""How long the Scheduler waits for one state call (a save waits on the instance)."""


def digest(data: bytes) -> str:
    """What a proof of a call carrying ``data`` is bound to."""
    return hashlib.sha256(bytes(data)).hexdigest()


def _managers_only(door_by: str) -> Any:
    def decide(who: VerifiedCaller, _item: Any) -> Refusal | None:
        if who.name in (SCHEDULER, ENACTOR):
            return None
        return Refusal(code=codes.AUTH_FORBIDDEN, by=door_by,
                       reason=f"{who.name!r} may not move objects' state directly: ask the Scheduler")
    return decide


class HostStateCalls:
    """``save_object`` / ``restore_object`` on a host or host-group actor
    (``self.door``, and ``self._batch`` or ``self.core``: a HostGroup)."""

    door: Any
    core: Any

    def _state_group(self) -> Any:
        batch = getattr(self, "_batch", None)
        return batch if batch is not None else self.core

    def save_object(self, host: str, instance_id: str, proof: Any = None) -> bytes | Refusal:
        """The persistent state of a running instance on ``host``."""
        door = self.door
        return door.gate_one(proof, "save_object", {"host": host, "instance_id": instance_id}, instance_id,
                             _managers_only(door.by), lambda iid: self._state_group().save_object(host, iid))

    def restore_object(self, host: str, instance_id: str, data: bytes, proof: Any = None) -> bool | Refusal:
        """Put ``data`` into the running instance ``instance_id`` on ``host``."""
        door = self.door
        args = {"host": host, "instance_id": instance_id, "sha256": digest(data)}
        return door.gate_one(proof, "restore_object", args, instance_id, _managers_only(door.by),
                             lambda iid: self._state_group().restore_object(host, iid, data))


class VaultStateCalls:
    """A vault actor's state calls (``self.door``, ``self.core``: a VaultObject)."""

    door: Any
    views: Any
    core: Any
    shelf_dir: str | None = None
    ephemeral = False

    def _open_shelf(self, name: str, shelf_dir: str | None) -> DirectoryShelf:
        """The vault's shelf: ``shelf_dir``, else a fresh temporary directory on
        this node (removed by :meth:`_drop_shelf`, when the vault shuts down)."""
        self.ephemeral = shelf_dir is None
        self.shelf_dir = shelf_dir or tempfile.mkdtemp(prefix=f"lrm-{name}-")
        return DirectoryShelf(self.shelf_dir)

    def _drop_shelf(self) -> None:
        if self.ephemeral and self.shelf_dir:
            shutil.rmtree(self.shelf_dir, ignore_errors=True)

    def _gate(self, proof: Any, call: str, args: dict[str, Any], run: Any) -> Any:
        door = self.door
        return door.gate_one(proof, call, args, args["object_id"], _managers_only(door.by), lambda _o: run())

    def put_state(self, object_id: str, data: bytes, user: str, host: str | None = None, proof: Any = None
                  ) -> int | Refusal:
        args = {"object_id": object_id, "sha256": digest(data), "user": user, "host": host}
        return self._gate(proof, "put_state", args, lambda: self.core.put_state(object_id, data, user, host))

    def get_state(self, object_id: str, proof: Any = None) -> bytes | Refusal:
        return self._gate(proof, "get_state", {"object_id": object_id},
                          lambda: self.core.get_state(object_id))

    def delete_state(self, object_id: str, proof: Any = None) -> bool | Refusal:
        return self._gate(proof, "delete_state", {"object_id": object_id},
                          lambda: self.core.delete_state(object_id))

    def stored(self, proof: Any = None) -> dict[str, int]:
        """Object id -> bytes of every state stored here (the system's or an
        administrator's read: the ids name other users' objects)."""
        self.views.require_system(proof, "stored", {}, admin=True)
        return self.core.stored()


class RayStatePort:
    """The Scheduler's :class:`~legionrm.scheduler.mobility.StatePort` over Ray:
    ``carriers`` maps a host name to the actor carrying it, ``vaults`` a vault
    name to its actor; with ``signer`` (the Scheduler agent's) every call
    carries its proof.  An actor that cannot be reached answers a refusal
    (``resource.unreachable``), never an exception."""

    def __init__(self, carriers: Mapping[str, Any], vaults: Mapping[str, Any], signer: CallSigner | None = None,
                 timeout_s: float = STATE_CALL_TIMEOUT_S) -> None:
        self.carriers, self.vaults, self.signer, self.timeout_s = carriers, vaults, signer, timeout_s

    def _call(self, handle: Any, name: str, method: str, args: dict[str, Any], signed_args: dict[str, Any]) -> Any:
        if handle is None:
            return Refusal(code=codes.RESOURCE_UNKNOWN, reason=f"no actor carries {name!r}", by=name)
        try:
            proof = signed(self.signer, method, signed_args, to=name)
            return ray.get(getattr(handle, method).remote(**args, proof=proof), timeout=self.timeout_s)
        except (ray.exceptions.RayError, AttributeError) as exc:
            return Refusal(code=codes.RESOURCE_UNREACHABLE, reason=f"{method} on {name}: {type(exc).__name__}", by=name)

    def save(self, ref: InstanceRef) -> bytes | Refusal:
        args = {"host": ref.host, "instance_id": ref.instance_id}
        return self._call(self.carriers.get(ref.host), ref.host, "save_object", args, args)

    def restore(self, ref: InstanceRef, data: bytes) -> bool | Refusal:
        args = {"host": ref.host, "instance_id": ref.instance_id}
        return self._call(self.carriers.get(ref.host), ref.host, "restore_object", {**args, "data": data},
                          {**args, "sha256": digest(data)})

    def put(self, vault: str, object_id: str, data: bytes, user: str, host: str | None) -> int | Refusal:
        args = {"object_id": object_id, "user": user, "host": host}
        return self._call(self.vaults.get(vault), vault, "put_state", {**args, "data": data},
                          {**args, "sha256": digest(data)})

    def get(self, vault: str, object_id: str) -> bytes | Refusal:
        args = {"object_id": object_id}
        return self._call(self.vaults.get(vault), vault, "get_state", args, args)

    def delete(self, vault: str, object_id: str) -> bool:
        args = {"object_id": object_id}
        return self._call(self.vaults.get(vault), vault, "delete_state", args, args) is True
