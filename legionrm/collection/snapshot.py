"""The Collection's table at one moment: :class:`TableSnapshot` (pure numpy, no Ray).

What planners and queries read.  A snapshot is the first ``n`` rows of every
column the table (:mod:`legionrm.collection.table`) held when it was taken:
``names[row]`` is the resource at ``row`` (row order is not name order), and
later upserts and removals never change it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from legionrm.mil import values as V
from legionrm.mil.columns import Column, ColumnTable, StringDict, value_at


class TableSnapshot(ColumnTable):
    """An immutable view of the table at one moment: what planners and queries read.

    ``names[row]`` is the resource at ``row`` (live rows only, dense);
    ``column(attr)`` the attribute's Column (None when no resource exports it).
    Later upserts and removals never change a snapshot.
    """

    def __init__(
        self, names: np.ndarray, columns: dict[str, Column], strings: StringDict, version: int,
        order_box: list[Any] | None = None,
    ) -> None:
        self.names = names
        self._columns = columns
        self.strings = strings
        self.version = version
        self._order_box: list[Any] = order_box if order_box is not None else [None, None]

    @property
    def membership(self) -> object:
        """An object that stays the same (``is``) between snapshots with the
        same resources in the same rows: a new one after every join or leave.  It holds
        what is worked out once per membership: the name order, and the rows by name."""
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
        """The row of ``name`` in this snapshot, or None (the index is built on first use, once
        per membership: snapshots between the same joins and leaves share it)."""
        index = self._order_box[1]
        if index is None:
            index = self._order_box[1] = {str(nm): k for k, nm in enumerate(self.names.tolist())}
        return index.get(name)

    def row_values(self, row: int, attrs: Iterable[str]) -> list[V.Value]:
        """The values of ``attrs`` at ``row``, as Python values (UNDEFINED where not exported)."""
        cols, strings = self._columns, self.strings.strings
        return [V.UNDEFINED if (c := cols.get(a)) is None
                else value_at(c, c.uniform if c.uniform is not None else c.tag.item(row), row, strings)  # type: ignore[union-attr]
                for a in attrs]

    def values(self, attr: str, rows: np.ndarray) -> list[V.Value]:
        """``attr``'s values at ``rows`` (row indices), as Python values (UNDEFINED where not
        exported): :meth:`row_values` of many rows, read one kind at a time."""
        m = len(rows)
        out: list[V.Value] = [V.UNDEFINED] * m
        col = self._columns.get(attr)
        if col is None or m == 0:
            return out
        tags = col.tags()[rows]
        for t, arr in ((V.BOOL, col.b), (V.INT, col.i), (V.FLOAT, col.f), (V.STR, col.s), (V.ERR, None)):
            at = np.flatnonzero(tags == t)
            if at.size == 0:
                continue
            if arr is None:  # (errors: a table holds none)
                vals: list[Any] = [V.ERROR] * at.size
            else:
                vals = np.broadcast_to(arr, (col.n,))[rows[at]].tolist()
                if t == V.STR:
                    vals = list(map(self.strings.strings.__getitem__, vals))
            if at.size == m:
                return vals
            for k, v in zip(at.tolist(), vals):
                out[k] = v
        return out
