"""One attribute's column as the Collection's table writes it (pure numpy, no Ray).

A :class:`MutableColumn` holds one attribute's arrays at the table's
capacity and counts its live rows by kind; :meth:`MutableColumn.view` hands
out an immutable :class:`~legionrm.mil.columns.Column` over the first ``n``
rows.  Views are copy-on-write: the column copies its arrays (once) only when
it next writes a row a live view can see.  The table
(:mod:`legionrm.collection.table`) owns one per attribute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from legionrm.mil import values as V
from legionrm.mil.columns import Column, StringDict

_DTYPES = {"b": bool, "i": np.int64, "f": np.float64, "s": np.int32}


class MutableColumn:
    """Arrays of one attribute at the table's capacity, plus live-row tag counts.

    The per-row tag array is allocated only once the live rows stop sharing
    one kind (``utag``): a column every resource exports as an int costs its
    int64 array and nothing more.
    """

    __slots__ = ("cap", "tag", "utag", "b", "i", "f", "s", "counts", "shared", "snap_rows", "kept")

    def __init__(self, capacity: int, n: int) -> None:
        self.cap = capacity
        self.tag: np.ndarray | None = None  # None: every live row has kind utag
        self.utag = V.UNDEF
        self.b: np.ndarray | None = None
        self.i: np.ndarray | None = None
        self.f: np.ndarray | None = None
        self.s: np.ndarray | None = None
        self.counts = [0] * 6
        self.counts[V.UNDEF] = n
        self.shared = False  # a snapshot holds views of rows [0, snap_rows)
        self.snap_rows = 0
        self.kept: tuple[int, Column | None] | None = None  # the last view, for its n, until the next write

    def arrays(self) -> Iterable[tuple[str, np.ndarray]]:
        for k in ("tag", "b", "i", "f", "s"):
            a = getattr(self, k)
            if a is not None:
                yield k, a

    def tag_at(self, row: int) -> int:
        return int(self.tag[row]) if self.tag is not None else self.utag

    def set_tag(self, row: int, t: int) -> None:
        """Set a row's kind (after before_write); allocates the tag array on divergence."""
        if self.tag is None:
            if t == self.utag:
                return
            if sum(self.counts) == 0:  # no live row yet: the new kind becomes the shared one
                self.utag = t
                return
            self.tag = np.full(self.cap, self.utag, dtype=np.int8)
        self.tag[row] = t

    def grow(self, capacity: int) -> None:
        self.cap = capacity
        self.kept = None
        for k, a in list(self.arrays()):
            new = np.zeros(capacity, dtype=a.dtype)
            new[: len(a)] = a
            setattr(self, k, new)
        self.shared = False  # fresh arrays: snapshots keep the old ones

    def before_write(self, row: int) -> None:
        """Copy the arrays if a snapshot can see ``row`` (copy-on-write).  Every
        write comes here first: the kept view goes (the next one is made afresh)."""
        self.kept = None
        if self.shared and row < self.snap_rows:
            for k, a in list(self.arrays()):
                setattr(self, k, a.copy())
            self.shared = False

    def data(self, field: str) -> np.ndarray:
        a = getattr(self, field)
        if a is None:
            a = np.zeros(self.cap, dtype=_DTYPES[field])
            setattr(self, field, a)
        return a

    def put(self, row: int, value: V.Value, codes: StringDict, *, new_row: bool = False) -> None:
        """Write a MIL value (never ERROR) at a row (``new_row``: one just appended,
        not yet counted); keeps counts."""
        self.before_write(row)
        t = V.tag_of(value)
        if not new_row:
            self.counts[self.tag_at(row)] -= 1
        self.set_tag(row, t)
        self.counts[t] += 1
        if t == V.BOOL:
            self.data("b")[row] = value
        elif t == V.INT:
            self.data("i")[row] = value
        elif t == V.FLOAT:
            self.data("f")[row] = value
        elif t == V.STR:
            self.data("s")[row] = codes.code(value)  # type: ignore[arg-type]

    def view(self, n: int) -> Column | None:
        """An immutable Column over rows [0, n); None if no row exports it.  The
        same one again while nothing is written (snapshots between heartbeats
        share the columns the heartbeats leave alone)."""
        kept = self.kept
        if kept is not None and kept[0] == n:
            return kept[1]
        col = self._view(n)
        self.kept = (n, col)
        return col

    def _view(self, n: int) -> Column | None:
        if self.counts[V.UNDEF] == n:
            return None
        uniform = next((t for t, c in enumerate(self.counts) if c == n), None)
        # Several snapshots may share these arrays: protect the longest view.
        self.snap_rows = max(self.snap_rows, n) if self.shared else n
        self.shared = True
        kw: dict[str, Any] = {}
        for k in ("b", "i", "f", "s"):
            a = getattr(self, k)
            if a is not None:
                v = a[:n]
                v.flags.writeable = False
                kw[k] = v
        if uniform is not None:
            return Column(n, uniform=uniform, **kw)
        assert self.tag is not None  # mixed kinds always have a tag array
        tag = self.tag[:n]
        tag.flags.writeable = False
        return Column(n, tag=tag, **kw)
