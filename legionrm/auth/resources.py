"""How a resource actor (host, host group, vault) is wired to the auth core:
each resource's own agent key signing its Collection writes
(:class:`RemoteSink`), the Scheduler's attestations it checks
(:func:`guard_resources`) and its two doors (:func:`resource_doors`).

No Ray import: a sink only calls ``.remote`` on the handle it is given.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from legionrm.auth.actordoor import ActorDoor
from legionrm.auth.guard import Guard, host_attestations
from legionrm.auth.guard import auth_home as auth_home_dir
from legionrm.auth.hostdoor import ResourceDoor
from legionrm.auth.proof import CallSigner
from legionrm.auth.registry import Registry
from legionrm.models import AttrValue, ResourceRecord

COLLECTION = "collection"
"""The Collection actor's audience (as legionrm.naming.COLLECTION, which imports Ray)."""


class RemoteSink:
    """A collection sink over a Collection actor handle: fire-and-forget calls
    (a heartbeat never waits on the collection).  With ``signers`` (resource
    name -> its own agent's signer) every write carries that resource's proof."""

    def __init__(self, handle: Any, signers: Mapping[str, CallSigner] | None = None) -> None:
        self._h = handle
        self.signers = dict(signers or {})

    def _proof(self, name: str, call: str, args: Any) -> Any:
        signer = self.signers.get(name)
        return signer.sign(call, args, to=COLLECTION) if signer is not None else None

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


def auth_sink(collection: Any, auth_home: str | None, kind: str, names: Sequence[str]) -> RemoteSink | None:
    """The sink of resources ``names``: each gets its own agent key now (in this
    actor's memory only) and signs its own Collection writes."""
    if collection is None:
        return None
    if not auth_home:
        return RemoteSink(collection)
    creds = Registry(auth_home_dir(auth_home)).add_agents(kind, names)
    return RemoteSink(collection, {n: CallSigner(c, time.time) for n, c in creds.items()})


def guard_resources(cores: Sequence[Any], auth_home: str | None) -> None:
    """Make each resource check the Scheduler's attestation of who reserves."""
    if auth_home:
        for core in cores:
            core.attestations = host_attestations(auth_home, by=core.name)


def resource_doors(auth_home: str | None, by: str, token_holder: Any,
                   instance_holder: Any = None, audience: Sequence[str] = ()) -> tuple[ResourceDoor, ActorDoor]:
    """The two doors of a resource actor, open without a home: the one of its
    work-changing calls (cancel, stop, start: :mod:`legionrm.auth.hostdoor`) and
    the one of its views and housekeeping (:mod:`legionrm.auth.actordoor`), over one guard
    that hears proofs made out to ``by`` or to a name in ``audience`` (a host
    group: the hosts it carries, each carried by this actor alone)."""
    guard = Guard.for_home(auth_home, by=by, audience=audience) if auth_home else None
    return (ResourceDoor(guard, token_holder=token_holder, instance_holder=instance_holder, by=by),
            ActorDoor(guard, by))


__all__ = ["RemoteSink", "auth_sink", "guard_resources", "resource_doors"]
