"""The Collection seen at one instant: :class:`CollectionSnapshot`.

A planner reads one snapshot per decision and never re-reads live state half
way.  It answers MIL queries over the snapshot's columnar table with
vectorised numpy: which rows match, which are available (from the reserved
``@expires`` and ``@off`` columns and the view's served query), which accept
a caller (from ``@access``, one verdict per distinct access policy), and any
attribute or MIL expression as numbers.  The reserved bookkeeping names the
Collection writes (:data:`RESERVED_PREFIX`, :data:`ACCESS`,
:data:`HEARTBEAT`, :data:`EXPIRES`, :data:`OFF`) are named here, where they
are read; :mod:`legionrm.collection.collection` says what each holds.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from legionrm.collection.kindmask import KIND_QUERY, kind_mask
from legionrm.collection.snapshot import TableSnapshot
from legionrm.errors import UnknownResourceError
from legionrm.mil import compile_query
from legionrm.mil import values as V
from legionrm.models import AccessPolicy, Identity, QueryResult, ResourceRecord

Caller = Identity | str | None
"""Who asks: an Identity, a bare user name, or None for nobody in particular."""

RESERVED_PREFIX = "@"
ACCESS, HEARTBEAT, EXPIRES, OFF = "@access", "@heartbeat", "@expires", "@off"
"""The Collection's bookkeeping columns (what each holds: :mod:`legionrm.collection.collection`)."""


class CollectionSnapshot:
    """An immutable view of the Collection at one instant: planners read one of
    these per decision and never re-read live state half way."""

    def __init__(
        self,
        table: TableSnapshot,
        records: Mapping[str, ResourceRecord],
        policies: tuple[AccessPolicy, ...],
        now: float,
        served: str | None = None,
    ) -> None:
        self.table = table
        self._records = records
        self._policies = policies
        self.now = now
        self._served = served
        self._alive_mask: np.ndarray | None = None
        self._made: dict[str, ResourceRecord] = {}  # the records read so far, with the table's values

    @property
    def served_query(self) -> str | None:
        """The MIL query the resources this view serves match (None: every resource)."""
        return self._served

    def served(self, text: str) -> "CollectionSnapshot":
        """This view as one scheduler sees it: the resources not matching the
        MIL ``text`` are unavailable (a scheduler serving some nodepools plans
        over their hosts alone).  Raises MILError on a bad ``text``."""
        compile_query(text)
        both = text if self._served is None else f"({self._served}) and ({text})"
        return CollectionSnapshot(self.table, self._records, self._policies, self.now, both)

    def __len__(self) -> int:
        return len(self._records)

    def mask(self, text: str, caller: Caller = None, include_unavailable: bool = False) -> np.ndarray:
        """A bool per row of ``self.table``: the resource matches ``text``, is
        available (unless ``include_unavailable``) and accepts ``caller`` (a
        bare string is the user name of an Identity without a class).
        Raises MILError on a bad query."""
        query = compile_query(text)
        if KIND_QUERY.fullmatch(text):  # (the hosts, the vaults: kept while the kind column is the same)
            mask = kind_mask(text, self.table, lambda: query.mask(self.table))
        else:
            mask = query.mask(self.table)
        if not include_unavailable:
            mask = mask & self._alive()
        if caller is not None:
            mask = mask & self.accepts(caller)
        return mask

    def accepts(self, caller: Caller) -> np.ndarray:
        """A bool per row: the resource's access policy accepts ``caller``
        (``mask(text, caller)`` is ``mask(text) & accepts(caller)``)."""
        if caller is None:
            return np.ones(len(self.table.names), bool)
        who = Identity(user=caller) if isinstance(caller, str) else caller
        ok = np.array([p.accepts(who) for p in self._policies] or [False], dtype=bool)
        ids = self.numeric(ACCESS, None, -1.0).astype(np.int64)
        return (ids >= 0) & ok[np.clip(ids, 0, len(ok) - 1)]

    @property
    def policies(self) -> tuple[AccessPolicy, ...]:
        """The access policies the ``@access`` column numbers (append-only: a number is never reused)."""
        return self._policies

    def available(self) -> np.ndarray:
        """A bool per row: the resource is available in this view (``mask(text)`` is
        ``mask(text, include_unavailable=True) & available()``).  Do not change it."""
        return self._alive()

    def _alive(self) -> np.ndarray:
        if self._alive_mask is None:
            expires = self.numeric(EXPIRES, None, -np.inf)
            off = self.numeric(OFF, None, 0.0) != 0
            alive = (expires >= self.now) & ~off
            if self._served is not None:
                alive &= compile_query(self._served).mask(self.table)
            self._alive_mask = alive
        return self._alive_mask

    def unavailable(self, text: str, caller: Caller = None) -> list[str]:
        """Names of the resources this view serves that match ``text`` and
        accept ``caller`` but are unavailable now (stale: silent past their
        heartbeat window, or varied off): what work waiting for them may yet
        get when they report again.  Sorted; a pure read.  Raises MILError."""
        down = self.mask(text, caller, include_unavailable=True) & ~self._alive()
        if self._served is not None:  # a resource it does not serve is no one it waits for
            down &= compile_query(self._served).mask(self.table)
        return sorted(str(n) for n in self.table.names[down])

    def stale_at(self, rows: np.ndarray) -> float:
        """The earliest time one of ``rows`` goes stale (its last heartbeat expires; inf: none of them):
        until then the same table shows the same of them available."""
        return float(self.numeric(EXPIRES, rows, np.inf).min(initial=np.inf))

    def alive_until(self) -> float:
        """The earliest time a resource available in this view goes stale (inf: none): until then the same
        table shows the same resources available (one stale now stays stale while its heartbeat is the same)."""
        return self.stale_at(np.flatnonzero(self._alive()))

    def rows(self, text: str = "true", caller: Caller = None, include_unavailable: bool = False) -> np.ndarray:
        """Row indices of matching resources, in name order."""
        mask = self.mask(text, caller, include_unavailable)
        order = self.table.name_order()
        return order[mask[order]]

    def numeric(self, attr: str, rows: np.ndarray | None, default: float) -> np.ndarray:
        """``attr`` as float64 at ``rows`` (all rows when None); ``default``
        where a resource does not export it or exports a non-number."""
        return _floats(self.table.column(attr), len(self.table.names), rows, default)

    def score(self, text: str, rows: np.ndarray | None = None, default: float = 0.0) -> np.ndarray:
        """The MIL expression ``text`` as float64 at ``rows`` (all rows when
        None): a number as it is, a boolean as 0 or 1, and ``default`` where it
        is undefined, an error or not a number (HTCondor's Rank reads those as
        0.0).  Pure read.  Raises MILError on a bad expression."""
        out = _floats(compile_query(text).values(self.table), len(self.table.names), rows, default)
        out[~np.isfinite(out)] = default  # an infinite or NaN rank would not sort as a number
        return out

    def names(self, text: str = "true", caller: Caller = None, include_unavailable: bool = False) -> list[str]:
        """Names of matching resources, sorted.  Raises MILError on a bad query."""
        return [str(n) for n in self.table.names[self.rows(text, caller, include_unavailable)]]

    def query(self, text: str, caller: Caller = None, include_unavailable: bool = False) -> QueryResult:
        """The records matching ``text`` (sorted by name).  Raises MILError."""
        t0 = time.perf_counter()
        rows = self.rows(text, caller, include_unavailable)
        records = self._records_at([str(n) for n in self.table.names[rows]], rows)
        return QueryResult(
            query=text, records=records, considered=len(self._records), elapsed_ms=(time.perf_counter() - t0) * 1e3
        )

    def record(self, name: str) -> ResourceRecord:
        """The record of ``name`` as of this snapshot: its attributes' values from the table,
        its availability computed now."""
        got = self._made.get(name)
        if got is None:
            try:
                rec = self._records[name]
            except KeyError:
                raise UnknownResourceError(f"no resource named {name!r} in the collection") from None
            row = self.table.index(name)
            assert row is not None  # (a record has its row)
            got = self._made[name] = self._current(rec, self.table.row_values(row, rec.attributes))
        return got

    def _records_at(self, names: list[str], rows: np.ndarray) -> tuple[ResourceRecord, ...]:
        """:meth:`record` of each of ``names`` (at ``rows``), the values read column by column."""
        todo = [k for k, name in enumerate(names) if name not in self._made]
        if todo:
            recs = [self._records[names[k]] for k in todo]
            at = rows[todo]
            cols = {a: self.table.values(a, at) for a in set().union(*(r.attributes for r in recs))}
            for j, rec in enumerate(recs):
                self._made[rec.name] = self._current(rec, [cols[a][j] for a in rec.attributes])
        return tuple(map(self._made.__getitem__, names))

    def _current(self, rec: ResourceRecord, values: list[Any]) -> ResourceRecord:
        """``rec`` with the ``values`` of its attributes (in their order) and its availability now."""
        attrs = dict(zip(rec.attributes, values))
        available = _available(attrs, self.now)
        if rec.available == available:
            return rec.replaced(attributes=attrs)
        return rec.replaced(attributes=attrs, available=available)

    def is_available(self, name: str) -> bool:
        if name not in self._records:
            raise UnknownResourceError(f"no resource named {name!r} in the collection")
        row = self.table.index(name)
        assert row is not None  # (a record has its row)
        return _available(dict(zip((OFF, EXPIRES), self.table.row_values(row, (OFF, EXPIRES)))), self.now)

    def attribute_names(self) -> list[str]:
        """Attributes some resource exports (reserved ones left out)."""
        return sorted(a for a in self.table.attribute_names() if not a.startswith(RESERVED_PREFIX))

    def resource_names(self) -> list[str]:
        return sorted(self._records)


def _available(attrs: Mapping[str, Any], now: float) -> bool:
    """Not varied off, and heard from within its window at ``now``."""
    return not attrs.get(OFF, False) and float(attrs.get(EXPIRES, -np.inf)) >= now


def _floats(col: Any, n: int, rows: np.ndarray | None, default: float) -> np.ndarray:
    """A column (None: absent everywhere) as float64 at ``rows`` (all when
    None): ints, floats and booleans as numbers, ``default`` elsewhere.  A
    fresh array: the caller may write to it."""
    if col is not None and col.uniform in (V.INT, V.FLOAT, V.BOOL):  # one kind everywhere: no masks
        arr = {V.INT: col.i, V.FLOAT: col.f, V.BOOL: col.b}[col.uniform]
        if arr is not None:
            vals = arr if arr.shape == (n,) else np.broadcast_to(arr, (n,))  # (a full column as it is: no wrapper)
            return vals.astype(np.float64) if rows is None else vals[rows].astype(np.float64, copy=False)  # (a copy once)
    out = np.full(n, default, dtype=np.float64)
    if col is not None:
        tags = col.tags()
        for tag, arr in ((V.INT, col.i), (V.FLOAT, col.f), (V.BOOL, col.b)):
            if arr is not None:
                sel = tags == tag
                out[sel] = np.broadcast_to(arr, (n,))[sel]
    return out if rows is None else out[rows]
