"""Where a resource reports itself: the Collection, or a stand-in.

A resource joins with its record, pushes partial attribute updates on each
heartbeat (the load travels as ``load``), and leaves when it stops.
"""

from __future__ import annotations

from typing import Any, Protocol

from legionrm.models import AttrValue, ResourceRecord


class CollectionSink(Protocol):
    """Where a resource reports itself: the Collection (or a fake in tests).
    ``update`` takes a partial attribute dict (None withdraws an attribute);
    the load travels as ``load``."""

    def join(self, record: ResourceRecord) -> Any: ...

    def update(self, name: str, attrs: dict[str, AttrValue | None]) -> Any: ...

    def leave(self, name: str) -> Any: ...


class NullSink:
    """A sink that drops everything (a resource not attached to a collection)."""

    def join(self, record: ResourceRecord) -> None:
        pass

    def update(self, name: str, attrs: dict[str, AttrValue | None]) -> None:
        pass

    def leave(self, name: str) -> None:
        pass


__all__ = ["CollectionSink", "NullSink"]
