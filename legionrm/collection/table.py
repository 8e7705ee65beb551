"""The Collection's columnar attribute table (pure numpy, no Ray).

One row per resource, one :class:`~legionrm.mil.columns.Column`-shaped set of
arrays per attribute; a column appears the first time any resource exports
that attribute.  Rows stay dense: removing a resource moves the last row into
its place, so a snapshot is simply the first ``n`` rows of every array and
``mask()`` output lines up with ``snapshot.names``.  Row order is therefore
not name order.

Growth doubles capacity (amortised O(1) per upsert).  Snapshots are
copy-on-write: taking one is O(number of attributes) and copies nothing; the
table copies a column (once) only when it next writes a row that a live
snapshot can see.  Appending rows beyond what the snapshot sees copies
nothing.  Strings go into one append-only dictionary shared with snapshots
(codes are never reused; a string outlives the rows that used it).

Each column is a :class:`~legionrm.collection.column.MutableColumn`, a
snapshot a :class:`~legionrm.collection.snapshot.TableSnapshot`; values are
checked by :mod:`legionrm.collection.attrvalues`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from legionrm.collection.attrvalues import as_column, check_values, plain_values
from legionrm.collection.column import MutableColumn
from legionrm.collection.snapshot import TableSnapshot
from legionrm.errors import CollectionError, UnknownResourceError
from legionrm.mil import values as V
from legionrm.mil.columns import Column, StringDict

_TAG_OF = {bool: V.BOOL, int: V.INT, float: V.FLOAT, str: V.STR}
"""The tag of a plain value by its type (:func:`legionrm.mil.values.tag_of`'s first cases)."""


class AttributeTable:
    """The mutable table; single owner (the Collection core), not thread-safe."""

    def __init__(self, capacity: int = 16) -> None:
        self._cap = max(int(capacity), 1)
        self._n = 0
        self._names = np.empty(self._cap, dtype=object)
        self._names_shared = False
        self._snap_rows = 0
        self._index: dict[str, int] = {}
        self._cols: dict[str, MutableColumn] = {}
        self._strings = StringDict()
        self._version = 0
        self._snapshot: TableSnapshot | None = None
        self._order_box: list[np.ndarray | None] = [None]  # name order, shared by snapshots of one membership

    # --- size -------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def __contains__(self, name: object) -> bool:
        return name in self._index

    @property
    def version(self) -> int:
        """Incremented by every change; equal versions mean equal contents."""
        return self._version

    def _grow(self, needed: int) -> None:
        if needed <= self._cap:
            return
        cap = max(needed, 2 * self._cap)
        names = np.empty(cap, dtype=object)
        names[: self._n] = self._names[: self._n]
        self._names, self._names_shared = names, False
        for c in self._cols.values():
            c.grow(cap)
        self._cap = cap

    def _names_before_write(self, row: int) -> None:
        if self._names_shared and row < self._snap_rows:
            self._names = self._names.copy()
            self._names_shared = False

    def _column(self, attr: str) -> MutableColumn:
        c = self._cols.get(attr)
        if c is None:
            c = self._cols[attr] = MutableColumn(self._cap, self._n)
        return c

    def _append_row(self, name: str, values: dict[str, V.Value]) -> int:
        """Add a row holding ``values`` (undefined elsewhere; rows past n hold leftovers)."""
        self._grow(self._n + 1)
        for attr, v in values.items():
            if v is not V.UNDEFINED:
                self._column(attr)
        row = self._n
        self._names_before_write(row)
        self._order_box = [None]
        self._names[row] = name
        self._index[name] = row
        self._n += 1
        for attr, c in self._cols.items():
            c.put(row, values.get(attr, V.UNDEFINED), self._strings, new_row=True)
        return row

    def _changed(self) -> None:
        self._version += 1
        self._snapshot = None

    # --- mutation ------------------------------------------------------------------

    def upsert(self, name: str, attrs: Mapping[str, Any], *, replace: bool = False) -> None:
        """Add resource ``name`` or merge ``attrs`` into it.

        A value of None removes that attribute from the resource.  With
        ``replace=True`` every attribute not in ``attrs`` is removed too.
        Raises CollectionError (and changes nothing) for a value that is not
        bool / int (64-bit) / float / str.  Idempotent.
        """
        if not isinstance(name, str) or not name:
            raise CollectionError(f"a resource name is a non-empty string, got {name!r}")
        values = check_values(name, attrs)
        row = self._index.get(name)
        if row is None:
            self._append_row(name, values)
            self._changed()
            return
        if replace:
            for attr, c in self._cols.items():
                if attr not in values and c.tag_at(row) != V.UNDEF:
                    c.put(row, V.UNDEFINED, self._strings)
        for attr, v in values.items():
            if v is V.UNDEFINED and attr not in self._cols:
                continue
            self._column(attr).put(row, v, self._strings)
        self._changed()

    def update_many(self, updates: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[int, Exception]]:
        """Merge attributes into many existing resources at once (heartbeats):
        as :meth:`upsert` of each, but written column by column, one numpy
        write per attribute where the rows keep their kind.  An update naming
        an unknown resource, or with a value that is not bool / int (64-bit)
        / float / str, changes nothing and comes back as an error; the
        others are applied.  Returns the refused ones: (position, error), in order."""
        errors: list[tuple[int, Exception]] = []
        by_attr: dict[str, tuple[list[int], list[Any]]] = {}
        for k, (name, attrs) in enumerate(updates):
            row = self._index.get(name)
            if row is None:
                errors.append((k, UnknownResourceError(f"unknown resource {name!r}")))
                continue
            for attr, v in attrs.items():
                rows, vals = by_attr.setdefault(attr, ([], []))
                rows.append(row)
                vals.append(v)
        if any(not plain_values(attr, vals) for attr, (_, vals) in by_attr.items()):
            # a value to refuse or convert somewhere: check update by update (the rare path)
            good: list[tuple[str, Mapping[str, Any]]] = []
            for k, (name, attrs) in enumerate(updates):
                if name not in self._index:
                    continue
                try:
                    good.append((name, check_values(name, attrs)))
                except CollectionError as exc:
                    errors.append((k, exc))
            errors.sort(key=lambda e: e[0])
            by_attr = {}
            for name, values in good:
                for attr, v in values.items():
                    rows, vals = by_attr.setdefault(attr, ([], []))
                    rows.append(self._index[name])
                    vals.append(v)
        for attr, (rows, vals) in by_attr.items():
            self._write_column(attr, rows, vals)
        if by_attr:
            self._changed()
        return errors

    def _write_column(self, attr: str, rows: list[int], vals: list[V.Value]) -> None:
        """Write ``vals`` at ``rows`` of one attribute (a row may repeat: the last wins)."""
        if attr not in self._cols and all(v is V.UNDEFINED for v in vals):
            return
        c = self._column(attr)
        kinds = set(map(type, vals))  # (the tags of few distinct types, not of every value)
        tags = {_TAG_OF[k] for k in kinds} if kinds <= _TAG_OF.keys() else {V.tag_of(v) for v in vals}
        t = tags.pop() if len(tags) == 1 else None
        field = {V.BOOL: "b", V.INT: "i", V.FLOAT: "f"}.get(t) if t is not None else None
        if field is None or c.tag is not None or c.utag != t or len(set(rows)) != len(rows):
            for row, v in zip(rows, vals):  # kinds change (or a row repeats): row by row, keeping counts
                c.put(row, v, self._strings)
            return
        # every row already has this kind and keeps it: the counts stand, one write
        c.before_write(min(rows))
        c.data(field)[np.asarray(rows, dtype=np.int64)] = vals

    def remove(self, name: str) -> None:
        """Drop resource ``name``; raises UnknownResourceError if it is not here."""
        row = self._index.pop(name, None)
        if row is None:
            raise UnknownResourceError(f"unknown resource {name!r}")
        last = self._n - 1
        for c in self._cols.values():
            c.counts[c.tag_at(row)] -= 1
            if row != last:  # move the last row into the hole
                c.before_write(row)
                for k, a in list(c.arrays()):
                    a[row] = a[last]
        self._order_box = [None]
        if row != last:
            self._names_before_write(row)
            moved = self._names[last]
            self._names[row] = moved
            self._index[moved] = row
        self._n = last
        self._changed()

    def bulk_insert(self, names: Sequence[str], columns: Mapping[str, Any]) -> None:
        """Add many new resources at once, column-wise (loading a cluster or a benchmark).

        ``columns[attr]`` is a numpy array (bool, integer, float or string
        dtype: every row exports it) or a sequence of values with None for
        "not exported".  Names must be new and distinct.  Raises
        CollectionError (and changes nothing) otherwise.
        """
        names = [str(x) for x in names]
        m = len(names)
        if len(set(names)) != m or any(x in self._index for x in names):
            raise CollectionError("bulk_insert: resource names must be new and distinct")
        prepared: dict[str, Column] = {}
        scratch = StringDict()  # validate before touching the table
        for attr, col in columns.items():
            if len(col) != m:
                raise CollectionError(f"bulk_insert: column {attr!r} has {len(col)} values for {m} resources")
            prepared[attr] = as_column(attr, col, scratch)
        if m == 0:  # nothing to add (and no row at index n to touch when the table is full)
            return
        start = self._n
        self._grow(start + m)
        for attr in prepared:  # new columns: undefined on the existing rows only
            self._column(attr)
        self._names_before_write(start)
        self._order_box = [None]
        self._names[start : start + m] = np.asarray(names, dtype=object)
        for k, nm in enumerate(names):
            self._index[nm] = start + k
        self._n = start + m
        # remap the scratch dictionary's codes into the table's
        remap = np.fromiter((self._strings.code(s) for s in scratch.strings), dtype=np.int32, count=len(scratch))
        for attr, c in self._cols.items():
            if attr not in prepared:
                c.before_write(start)
                c.set_tag(start, V.UNDEF)  # allocates the tag array unless already all-undefined
                if c.tag is not None:
                    c.tag[start : start + m] = V.UNDEF
                c.counts[V.UNDEF] += m
        for attr, src in prepared.items():
            c = self._column(attr)
            c.before_write(start)
            if src.uniform is not None:
                c.set_tag(start, src.uniform)
            elif c.tag is None:
                c.tag = np.full(c.cap, c.utag, dtype=np.int8)
            if c.tag is not None:
                c.tag[start : start + m] = src.tags()
            if src.uniform is not None:
                c.counts[src.uniform] += m
            else:
                for t, cnt in enumerate(np.bincount(src.tags(), minlength=6).tolist()):
                    c.counts[t] += cnt
            for field in ("b", "i", "f", "s"):
                a = getattr(src, field)
                if a is None:
                    continue
                dst = c.data(field)
                dst[start : start + m] = remap[a] if field == "s" and len(remap) else a
        self._changed()

    # --- reading -----------------------------------------------------------------------

    def get(self, name: str) -> dict[str, Any]:
        """The attributes resource ``name`` exports; UnknownResourceError if unknown."""
        row = self._index.get(name)
        if row is None:
            raise UnknownResourceError(f"unknown resource {name!r}")
        out: dict[str, Any] = {}
        strings = self._strings.strings
        for attr, c in self._cols.items():
            t = c.tag_at(row)
            if t == V.UNDEF:
                continue
            out[attr] = Column(1, uniform=t, b=c.b, i=c.i, f=c.f, s=c.s).value(row, strings)
        return out

    def names(self) -> list[str]:
        return [str(x) for x in self._names[: self._n]]

    def snapshot(self) -> TableSnapshot:
        """An immutable view of the current contents; O(attributes), copies nothing now."""
        if self._snapshot is not None:
            return self._snapshot
        n = self._n
        names = self._names[:n]
        names.flags.writeable = False
        self._snap_rows = max(self._snap_rows, n) if self._names_shared else n
        self._names_shared = True
        cols: dict[str, Column] = {}
        for attr, c in self._cols.items():
            col = c.view(n)
            if col is not None:
                cols[attr] = col
        self._snapshot = TableSnapshot(names, cols, self._strings, self._version, self._order_box)
        return self._snapshot
