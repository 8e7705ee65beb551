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
from operator import itemgetter
from typing import Any, cast

import numpy as np

from legionrm.collection.attrvalues import as_column, check_values, common_tag, typed_values
from legionrm.collection.column import MutableColumn
from legionrm.collection.snapshot import TableSnapshot
from legionrm.errors import CollectionError, UnknownResourceError
from legionrm.mil import values as V
from legionrm.mil.columns import Column, StringDict, value_at

_FIELD = {V.BOOL: "b", V.INT: "i", V.FLOAT: "f", V.STR: "s"}
"""The array a column keeps values of each kind in."""


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
        self._order_box: list[Any] = [None, None]  # name order and index, shared by snapshots of one membership

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
        self._order_box = [None, None]
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

    def update_many(
        self, updates: Sequence[tuple[str, Mapping[str, Any]]], same: Mapping[str, Any] | None = None
    ) -> list[tuple[int, Exception]]:
        """Merge attributes into many existing resources at once (heartbeats):
        as :meth:`upsert` of each with ``same`` added to it (values every
        update writes: the batch's time), but written column by column, one
        numpy write per attribute where the rows keep their kind.  An update
        naming an unknown resource, or with a value that is not bool / int
        (64-bit) / float / str, changes nothing and comes back as an error;
        the others are applied.  Returns the refused ones: (position, error), in order."""
        return self.write_many(updates, same)[0]

    def write_many(
        self, updates: Sequence[tuple[str, Mapping[str, Any]]], same: Mapping[str, Any] | None = None
    ) -> tuple[list[tuple[int, Exception]], list[int]]:
        """:meth:`update_many`, telling also which updates add an attribute to their resource or
        withdraw one (a None, had it the attribute or not): (refused, reshaped), as positions."""
        if not updates:
            return [], []
        same = dict(same or {})
        names, attrs = zip(*updates)
        rows = list(map(self._index.get, names))
        if None in rows or len(set(rows)) < len(rows):
            return self._update_each(updates, same)  # an unknown resource, or one twice: update by update
        at = np.asarray(rows, dtype=np.int64)
        columns = {**_by_attribute(at, attrs), **{attr: (at, [v]) for attr, v in same.items()}}
        typed = [typed_values(attr, vals) for attr, (_, vals) in columns.items()]
        if None in typed:
            return self._update_each(updates, same)  # a value to refuse or convert somewhere (the rare path)
        reshaped: set[int] = set()
        for (attr, (where, vals)), (tag, arr) in zip(columns.items(), typed):  # type: ignore[misc]
            if attr in same:
                vals, arr = vals * len(rows), arr if arr is None else arr[0]  # (one value, every row)
            reshaped.update(self._write_column(attr, where, vals, tag, arr))
        if columns:
            self._changed()
        return [], sorted(map(dict(zip(rows, range(len(rows)))).__getitem__, reshaped)) if reshaped else []

    def _update_each(
        self, updates: Sequence[tuple[str, Mapping[str, Any]]], same: Mapping[str, Any]
    ) -> tuple[list[tuple[int, Exception]], list[int]]:
        """:meth:`write_many` checking update by update (unknown names, values to refuse or
        convert, a resource updated twice: the last write wins)."""
        errors: list[tuple[int, Exception]] = []
        by_attr: dict[str, tuple[list[int], list[Any]]] = {}
        at: dict[int, list[int]] = {}  # row -> the positions of its updates
        withdrawn: set[int] = set()  # the rows an update withdraws an attribute of
        for k, (name, attrs) in enumerate(updates):
            row = self._index.get(name)
            if row is None:
                errors.append((k, UnknownResourceError(f"unknown resource {name!r}")))
                continue
            try:
                values = check_values(name, {**attrs, **same})
            except CollectionError as exc:
                errors.append((k, exc))
                continue
            at.setdefault(row, []).append(k)
            if V.UNDEFINED in values.values():
                withdrawn.add(row)
            for attr, v in values.items():
                where, vals = by_attr.setdefault(attr, ([], []))
                where.append(row)
                vals.append(v)
        reshaped = withdrawn
        for attr, (where, vals) in by_attr.items():
            if attr not in self._cols and all(v is V.UNDEFINED for v in vals):
                continue
            reshaped.update(self._write_column(attr, np.asarray(where, dtype=np.int64), vals, common_tag(vals),
                                               distinct=len(set(where)) == len(where)))
        if by_attr:
            self._changed()
        return errors, sorted(k for row in reshaped for k in at[row])

    def _write_column(self, attr: str, rows: np.ndarray, vals: Sequence[V.Value], tag: int | None,
                      arr: Any = None, distinct: bool = True) -> list[int]:
        """Write ``vals`` (MIL values, all of the one kind ``tag`` unless it is None; ``arr``: them
        as an array, or one value for every row, if at hand) at ``rows`` of one attribute (unless
        ``distinct``, a row may repeat: the last wins).  Returns the rows that gained or lost it."""
        c = self._column(attr)
        field = _FIELD.get(tag)  # type: ignore[arg-type]
        if field and distinct and (c.utag == tag if c.tag is None else bool((c.tag[rows] == tag).all())):
            # every row already has this kind and keeps it: the counts stand, one write of the values
            # that differ (none: the column, and the view snapshots share, stay as they are)
            data = c.data(field)
            new = np.broadcast_to(np.asarray(list(map(self._strings.code, cast("Sequence[str]", vals))) if field == "s"
                                             else vals if arr is None else arr, dtype=data.dtype), rows.shape)
            old = data[rows]
            differ = old != new
            if field == "f":  # (bit for bit: -0.0 is not 0.0 here, and a NaN is always written)
                differ |= np.signbit(old) != np.signbit(new)
            if differ.any():
                at = rows[differ]
                c.before_write(int(at.min()))
                c.data(field)[at] = new[differ]
            return []
        reshaped = []
        for row, v in zip(rows.tolist(), vals):  # kinds change (or a row repeats): row by row, keeping counts
            had = c.tag_at(row) != V.UNDEF
            c.put(row, v, self._strings)
            if had == (v is V.UNDEFINED):
                reshaped.append(row)
        return reshaped

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
        self._order_box = [None, None]
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
        self._order_box = [None, None]
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
            out[attr] = value_at(c, t, row, strings)
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


def _by_attribute(rows: np.ndarray, attrs: Sequence[Mapping[str, Any]]) -> dict[str, tuple[np.ndarray, list[Any]]]:
    """The updates' values column by column: attribute -> (its rows, its values), the attributes
    in the order they first appear.  Read out whole for the updates with the same attribute names
    (a host group's hosts report the same ones), not value by value."""
    names = set().union(*attrs)  # every attribute some update names
    if sum(map(len, attrs)) == len(names) * len(attrs):  # (every update names them all: the common case)
        return {attr: (rows, list(map(itemgetter(attr), attrs))) for attr in attrs[0]}
    groups: dict[tuple[str, ...], list[int]] = {}
    for k, shape in enumerate(map(tuple, attrs)):
        groups.setdefault(shape, []).append(k)
    at: dict[str, tuple[list[int], list[Any]]] = {}
    for shape, ks in groups.items():
        mine = [attrs[k] for k in ks]
        for attr in shape:
            where, got = at.setdefault(attr, ([], []))
            where += ks
            got += map(itemgetter(attr), mine)
    return {attr: (rows[where], vals) for attr, (where, vals) in at.items()}

