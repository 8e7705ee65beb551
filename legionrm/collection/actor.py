"""The Collection as a Ray actor: a thin shell that holds one core and forwards.

A background thread polls sub-collections; everything else is a direct
forward.  Created through :mod:`legionrm.system` as a named actor in
the ``legionrm`` namespace.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

import ray

from legionrm.collection.collection import Collection, CollectionSnapshot
from legionrm.models import (
    AttrValue,
    CollectionSettings,
    Identity,
    QueryResult,
    ResourceRecord,
)


class RemoteCollection:
    """The one proxy of a Collection actor: a :class:`CollectionSource` (so one
    Collection can poll another in a different process), the planners'
    ``snapshot()``, and the query tools' ``query`` / ``record`` /
    ``attribute_names``.  Every call waits at most ``timeout_s``."""

    def __init__(self, handle: Any, timeout_s: float = 60.0) -> None:
        self.handle = handle
        self._timeout_s = timeout_s

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult:
        return ray.get(self.handle.query.remote(text, caller, include_unavailable), timeout=self._timeout_s)

    def snapshot(self) -> CollectionSnapshot:
        return ray.get(self.handle.snapshot.remote(), timeout=self._timeout_s)

    def record(self, name: str) -> ResourceRecord:
        return ray.get(self.handle.record.remote(name), timeout=self._timeout_s)

    def attribute_names(self) -> list[str]:
        return self.snapshot().attribute_names()


@ray.remote(num_cpus=0, max_concurrency=8)
class CollectionActor:
    """Forwards to a :class:`Collection` core (which is thread-safe)."""

    def __init__(self, settings: CollectionSettings | None = None, records: list[ResourceRecord] | None = None) -> None:
        s = settings or CollectionSettings()
        self._core = Collection(heartbeat_interval_s=s.heartbeat_interval_s, stale_after=s.stale_after)
        for rec in records or ():
            self._core.join(rec)
        self._stop = threading.Event()
        threading.Thread(target=self._poll_loop, name="subcollections", daemon=True).start()

    def _poll_loop(self) -> None:
        while not self._stop.wait(1.0):
            self._core.poll_subcollections()

    def ping(self) -> str:
        return "ok"

    def join(self, record: ResourceRecord) -> None:
        self._core.join(record)

    def update(self, name: str, attrs: Mapping[str, AttrValue] | None = None) -> None:
        self._core.update(name, attrs)

    def update_many(self, updates: list[tuple[str, dict[str, AttrValue]]]) -> None:
        for name, attrs in updates:
            self._core.update(name, attrs)

    def leave(self, name: str) -> bool:
        return self._core.leave(name)

    def vary_off(self, name: str) -> None:
        self._core.vary_off(name)

    def vary_on(self, name: str) -> None:
        self._core.vary_on(name)

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult:
        return self._core.query(text, caller, include_unavailable)

    def retrieve_all_attributes(self, name: str) -> dict[str, AttrValue]:
        return self._core.retrieve_all_attributes(name)

    def record(self, name: str) -> ResourceRecord:
        return self._core.record(name)

    def snapshot(self) -> CollectionSnapshot:
        return self._core.snapshot()

    def names(self) -> list[str]:
        return self._core.names()

    def add_subcollection(self, name: str, handle: Any, query: str = "true", interval_s: float = 30.0) -> None:
        self._core.add_subcollection(name, RemoteCollection(handle), query, interval_s)

    def shutdown(self) -> None:
        self._stop.set()
