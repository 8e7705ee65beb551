"""The Collection as a Ray actor: a thin shell that holds one core and forwards.

A background thread polls sub-collections; everything else is a direct
forward.  Created through :mod:`legionrm.system` as a named actor in
the ``legionrm`` namespace.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

import ray

from legionrm.auth import CallSigner
from legionrm.auth.guard import Guard
from legionrm.auth.resources import COLLECTION
from legionrm.collection.collection import Collection
from legionrm.collection.door import CollectionDoor
from legionrm.collection.view import CollectionSnapshot
from legionrm.models import (
    AttrValue,
    CollectionSettings,
    Identity,
    QueryResult,
    RefusedWrite,
    ResourceRecord,
)


class RemoteCollection:
    """The one proxy of a Collection actor: a :class:`CollectionSource` (so one
    Collection can poll another in a different process), the planners'
    ``snapshot()``, and the query tools' ``query`` / ``record`` /
    ``attribute_names``.  Every call waits at most ``timeout_s``; with a
    ``signer`` each carries a signed proof of who asks."""

    def __init__(self, handle: Any, timeout_s: float = 60.0, signer: CallSigner | None = None) -> None:
        self.handle = handle
        self._timeout_s = timeout_s
        self.signer = signer

    def _proof(self, call: str, args: Any) -> Any:
        return self.signer.sign(call, args, to=COLLECTION) if self.signer is not None else None

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult:
        proof = self._proof("query", {"text": text, "caller": caller, "include_unavailable": include_unavailable})
        return ray.get(self.handle.query.remote(text, caller, include_unavailable, proof=proof), timeout=self._timeout_s)

    def snapshot(self) -> CollectionSnapshot:
        return ray.get(self.handle.snapshot.remote(proof=self._proof("snapshot", {})), timeout=self._timeout_s)

    def record(self, name: str) -> ResourceRecord:
        return ray.get(self.handle.record.remote(name, proof=self._proof("record", {"name": name})),
                       timeout=self._timeout_s)

    def attribute_names(self) -> list[str]:
        return self.snapshot().attribute_names()


@ray.remote(num_cpus=0, max_concurrency=8)
class CollectionActor:
    """Forwards to a :class:`Collection` core (which is thread-safe)."""

    def __init__(self, settings: CollectionSettings | None = None, records: list[ResourceRecord] | None = None,
                 auth_home: str | None = None) -> None:
        s = settings or CollectionSettings()
        self._core = Collection(heartbeat_interval_s=s.heartbeat_interval_s, stale_after=s.stale_after)
        for rec in records or ():
            self._core.join(rec)
        self.door = CollectionDoor(self._core, Guard.for_home(auth_home, by=COLLECTION) if auth_home else None)
        self._stop = threading.Event()
        threading.Thread(target=self._poll_loop, name="subcollections", daemon=True).start()

    def _poll_loop(self) -> None:
        while not self._stop.wait(1.0):
            self._core.poll_subcollections()

    def ping(self) -> str:
        return "ok"

    def authenticated(self) -> bool:
        """True when every call must carry a signed proof."""
        return not self.door.open

    def join(self, record: ResourceRecord, proof: Any = None) -> None:
        self.door.join(record, proof)

    def update(self, name: str, attrs: Mapping[str, AttrValue] | None = None, proof: Any = None) -> None:
        self.door.update(name, attrs, proof)

    def update_many(self, updates: list[tuple[str, dict[str, AttrValue]]], proofs: list[Any] | None = None) -> None:
        """Heartbeats of many resources; each with its own resource's proof
        (one refused update does not stop the others)."""
        self.door.update_many(updates, proofs)

    def leave(self, name: str, proof: Any = None) -> bool:
        return self.door.leave(name, proof)

    def vary_off(self, name: str, proof: Any = None) -> None:
        self.door.vary_off(name, proof)

    def vary_on(self, name: str, proof: Any = None) -> None:
        self.door.vary_on(name, proof)

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False,
              proof: Any = None) -> QueryResult:
        return self.door.query(text, caller, include_unavailable, proof)

    def retrieve_all_attributes(self, name: str, proof: Any = None) -> dict[str, AttrValue]:
        return self.door.retrieve_all_attributes(name, proof)

    def record(self, name: str, proof: Any = None) -> ResourceRecord:
        return self.door.record(name, proof)

    def snapshot(self, proof: Any = None) -> CollectionSnapshot:
        return self.door.snapshot(proof)

    def names(self, proof: Any = None) -> list[str]:
        return self.door.names(proof)

    def refused_writes(self, proof: Any = None) -> list[RefusedWrite]:
        return self.door.refused_writes(proof)

    def add_subcollection(self, name: str, handle: Any, query: str = "true", interval_s: float = 30.0,
                          proof: Any = None) -> None:
        self.door.require_admin(proof, "add_subcollection", {"name": name, "query": query}, "vary_hosts")
        self._core.add_subcollection(name, RemoteCollection(handle), query, interval_s)

    def shutdown(self, proof: Any = None) -> None:
        """Stop polling sub-collections: an administrator's."""
        self.door.require_admin(proof, "shutdown", {}, "stop_system")
        self._stop.set()
