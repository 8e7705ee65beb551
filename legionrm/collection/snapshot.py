"""The Collection's table at one moment: :class:`TableSnapshot` (pure numpy, no Ray).

What planners and queries read.  A snapshot is the first ``n`` rows of every
column the table (:mod:`legionrm.collection.table`) held when it was taken:
``names[row]`` is the resource at ``row`` (row order is not name order), and
later upserts and removals never change it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from legionrm.mil.columns import Column, ColumnTable, StringDict


class TableSnapshot(ColumnTable):
    """An immutable view of the table at one moment: what planners and queries read.

    ``names[row]`` is the resource at ``row`` (live rows only, dense);
    ``column(attr)`` the attribute's Column (None when no resource exports it).
    Later upserts and removals never change a snapshot.
    """

    def __init__(
        self, names: np.ndarray, columns: dict[str, Column], strings: StringDict, version: int,
        order_box: list[np.ndarray | None] | None = None,
    ) -> None:
        self.names = names
        self._columns = columns
        self.strings = strings
        self.version = version
        self._index: dict[str, int] | None = None
        self._order_box: list[np.ndarray | None] = order_box if order_box is not None else [None]

    @property
    def membership(self) -> object:
        """An object that stays the same (``is``) between snapshots with the
        same resources in the same rows: a new one after every join or leave."""
        return self._order_box

    def name_order(self) -> np.ndarray:
        """The rows in name order (read-only).  Computed once per membership:
        snapshots between the same joins and leaves share it."""
        order = self._order_box[0]
        if order is None:
            order = np.asarray(np.argsort(self.names, kind="stable"), dtype=np.int64)
            order.flags.writeable = False
            self._order_box[0] = order
        return order

    def column(self, attr: str) -> Column | None:
        return self._columns.get(attr)

    def attribute_names(self) -> list[str]:
        """Attributes exported by at least one resource, sorted."""
        return sorted(self._columns)

    def query(self, q: Any) -> np.ndarray:
        """Row indices (ascending) where the compiled query ``q`` is exactly true."""
        return np.flatnonzero(q.mask(self))

    def index(self, name: str) -> int | None:
        """The row of ``name`` in this snapshot, or None (index built on first use)."""
        if self._index is None:
            self._index = {str(nm): k for k, nm in enumerate(self.names.tolist())}
        return self._index.get(name)
