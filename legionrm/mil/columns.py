"""The columnar form of attribute values that the vectorized engine reads.

A :class:`Column` holds one attribute (or one intermediate result) for ``n``
rows.  Each row has a kind *tag* (:mod:`legionrm.mil.values`: UNDEF, ERR,
BOOL, INT, FLOAT, STR) and its value sits in the array of that kind:

* ``b`` bool, ``i`` int64, ``f`` float64, ``s`` int32 codes into the table's
  :class:`StringDict` (strings are dictionary-encoded; equal strings have
  equal codes, so string equality is an integer compare);
* an array is ``None`` when no row has that kind, and its entries at rows of
  another kind are meaningless (never read);
* ``uniform`` is the tag shared by every row when there is one (the fast
  path: a pure-int column is compared with one numpy call), else ``None``
  and ``tag`` is the int8 array of per-row tags.  A missing attribute is
  UNDEF, so "one host exports ``$x = 4``, another ``$x = "big"``, a third
  nothing" is a column with tags INT, STR, UNDEF.

Intermediate results in the vectorized engine may carry 0-d arrays
(constants), which numpy broadcasts.  A :class:`ColumnTable` is a set of
equally long columns plus the resource names and the string dictionary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from legionrm.mil import regex
from legionrm.mil import values as V

TAG_DTYPE = np.int8


class StringDict:
    """Append-only string dictionary shared by every column of a table.

    Codes are never reused, so results computed per code (a regular
    expression tried on each distinct string) stay valid as it grows; they are
    cached here.  Not thread-safe (one owner: the Collection's attribute table or a static table).
    """

    __slots__ = ("strings", "index", "regex_results", "_ranks")

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.index: dict[str, int] = {}
        # pattern -> int8 per code: -1 unknown, 0 no match, 1 match, 2 cannot be searched
        self.regex_results: dict[str, np.ndarray] = {}
        self._ranks: tuple[int, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.strings)

    def code(self, s: str) -> int:
        """The code of ``s``, adding it if new."""
        c = self.index.get(s)
        if c is None:
            c = len(self.strings)
            self.strings.append(s)
            self.index[s] = c
        return c

    def ranks(self) -> np.ndarray:
        """rank[code] = position of the string in sorted (code point) order; cached."""
        n = len(self.strings)
        if self._ranks is None or self._ranks[0] != n:
            order = sorted(range(n), key=self.strings.__getitem__)
            r = np.empty(n, dtype=np.int64)
            r[np.asarray(order, dtype=np.int64)] = np.arange(n, dtype=np.int64)
            self._ranks = (n, r)
        return self._ranks[1]

    def regex_over(
        self, pattern: str, codes: np.ndarray, rx: Any, tick: Callable[[], None] | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(found, unsearchable) per entry of ``codes``: does ``rx`` (compiled
        ``pattern``, :mod:`legionrm.mil.regex`) match in that string, and is the
        string one it cannot search (error; None when there is none).  Each
        distinct string is searched once, ever; ``tick`` is called between
        batches of :data:`REGEX_BATCH` searches (an evaluation deadline) and
        may raise, leaving the strings searched so far settled.  Results are
        kept for the last :data:`REGEX_PATTERNS_KEPT` patterns."""
        n = len(self.strings)
        cache = self.regex_results.pop(pattern, None)  # re-inserted last: most recently used
        if cache is None or len(cache) < n:
            grown = np.full(n, -1, dtype=np.int8)
            if cache is not None:
                grown[: len(cache)] = cache
            cache = grown
        while len(self.regex_results) >= REGEX_PATTERNS_KEPT:
            del self.regex_results[next(iter(self.regex_results))]
        self.regex_results[pattern] = cache
        if codes.size == 0:
            return np.zeros(0, dtype=bool), None
        if n <= 4 * codes.size + 1024:
            # small dictionary: settle every entry once; no scan over the rows
            todo = np.flatnonzero(cache < 0)
        else:  # large dictionary (e.g. host names): only the strings these rows use
            present = np.zeros(n, dtype=bool)
            present[codes] = True
            todo = np.flatnonzero(present & (cache < 0))
        strings = self.strings
        for lo in range(0, todo.size, REGEX_BATCH):
            if tick is not None:
                tick()
            batch = todo[lo : lo + REGEX_BATCH]
            cache[batch] = np.fromiter(
                (_SEARCH_CODE[regex.search(rx, strings[c])] for c in batch.tolist()), dtype=np.int8, count=batch.size
            )
        bad = lookup(cache == 2, codes) if (cache == 2).any() else None
        return lookup(cache == 1, codes), bad


REGEX_BATCH = 1024
"""Strings searched between two deadline checks in :meth:`StringDict.regex_over`."""

REGEX_PATTERNS_KEPT = 256
"""Patterns whose per-string results a :class:`StringDict` keeps."""

_SEARCH_CODE = {False: 0, True: 1, None: 2}  # regex.search answer -> cache entry


def lookup(lut: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``lut[codes]`` for a bool table over string codes, fast when few codes are
    true (or few false): a handful of integer compares beat a gather."""
    hits = np.flatnonzero(lut)
    if hits.size <= 4:
        out = np.zeros(codes.shape, dtype=bool)
        for c in hits.tolist():
            out |= codes == c
        return out
    misses = np.flatnonzero(~lut)
    if misses.size <= 4:
        out = np.ones(codes.shape, dtype=bool)
        for c in misses.tolist():
            out &= codes != c
        return out
    return np.take(lut, codes)


class Column:
    """One attribute (or intermediate value) over ``n`` rows; see the module doc."""

    __slots__ = ("n", "tag", "uniform", "b", "i", "f", "s")

    def __init__(
        self,
        n: int,
        *,
        tag: np.ndarray | None = None,
        uniform: int | None = None,
        b: np.ndarray | None = None,
        i: np.ndarray | None = None,
        f: np.ndarray | None = None,
        s: np.ndarray | None = None,
    ) -> None:
        if (tag is None) == (uniform is None):
            raise ValueError("a column has either a uniform tag or a tag array")
        self.n, self.tag, self.uniform = n, tag, uniform
        self.b, self.i, self.f, self.s = b, i, f, s

    def tags(self) -> np.ndarray:
        """Per-row tags as an (n,) int8 array (a read-only view when uniform)."""
        if self.uniform is not None:
            return np.broadcast_to(np.int8(self.uniform), (self.n,))
        return self.tag  # type: ignore[return-value]

    def value(self, row: int, strings: Sequence[str]) -> V.Value:
        """The MIL value at ``row`` (strings looked up in ``strings``)."""
        return value_at(self, self.uniform if self.uniform is not None else int(self.tag[row]), row, strings)  # type: ignore[index]

    def __repr__(self) -> str:
        kind = V.TAG_NAMES[self.uniform] if self.uniform is not None else "mixed"
        return f"Column(n={self.n}, {kind})"


def value_at(col: Any, t: int, row: int, strings: Sequence[str]) -> V.Value:
    """The MIL value of kind ``t`` (the row's tag) at ``row`` of ``col``'s arrays ``b``, ``i``,
    ``f`` and ``s`` (each of a column's length, or 0-d: one value for every row), as a Python
    value: what :meth:`Column.value` reads, for any object holding those arrays (a table's own
    columns read it without a Column made per value)."""
    if t == V.UNDEF:
        return V.UNDEFINED
    if t == V.ERR:
        return V.ERROR
    a = col.f if t == V.FLOAT else col.i if t == V.INT else col.s if t == V.STR else col.b
    if a is None:
        raise ValueError("column has no data of that kind")
    v = a.item() if a.ndim == 0 else a.item(row)
    return strings[v] if t == V.STR else v


def column_from_values(values: Sequence[V.Value], dictionary: StringDict) -> Column:
    """Build a column from MIL values (UNDEFINED allowed), interning strings."""
    n = len(values)
    tag = np.fromiter((V.tag_of(v) for v in values), dtype=TAG_DTYPE, count=n)
    kinds = set(np.unique(tag).tolist()) if n else {V.UNDEF}
    b = i = f = s = None
    if V.BOOL in kinds:
        b = np.fromiter((v is True for v in values), dtype=bool, count=n)
    if V.INT in kinds:
        i = np.fromiter((v if type(v) is int else 0 for v in values), dtype=np.int64, count=n)
    if V.FLOAT in kinds:
        f = np.fromiter((v if type(v) is float else 0.0 for v in values), dtype=np.float64, count=n)
    if V.STR in kinds:
        s = np.fromiter((dictionary.code(v) if type(v) is str else 0 for v in values), dtype=np.int32, count=n)
    if len(kinds) == 1:
        return Column(n, uniform=kinds.pop(), b=b, i=i, f=f, s=s)
    return Column(n, tag=tag, b=b, i=i, f=f, s=s)


class ColumnTable:
    """What the vectorized engine reads: ``len(self)`` rows, ``names[row]``,
    ``column(attr)`` (None when no row exports it) and ``strings``."""

    names: np.ndarray
    strings: StringDict

    def __len__(self) -> int:
        return len(self.names)

    def column(self, attr: str) -> Column | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def attribute_names(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def row(self, i: int) -> dict[str, V.Value]:
        """Row ``i`` as a record (attributes it does not export are absent)."""
        out: dict[str, V.Value] = {}
        for a in self.attribute_names():
            col = self.column(a)
            if col is not None:
                v = col.value(i, self.strings.strings)
                if v is not V.UNDEFINED:
                    out[a] = v
        return out


class StaticTable(ColumnTable):
    """An immutable table built in one go from records (tests, benchmarks, offline)."""

    def __init__(self, names: Sequence[str], columns: Mapping[str, Column], strings: StringDict) -> None:
        self.names = np.asarray(list(names), dtype=object)
        self._columns = dict(columns)
        self.strings = strings

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None) -> "StaticTable":
        """One row per record; a key absent from a record (or None) is undefined there."""
        if names is None:
            names = [f"r{k}" for k in range(len(records))]
        dictionary = StringDict()
        attrs = sorted({a for r in records for a in r})
        cols = {
            a: column_from_values([V.from_attr(r.get(a)) for r in records], dictionary) for a in attrs
        }
        for a, c in cols.items():
            if c.uniform == V.ERR or (c.uniform is None and (c.tags() == V.ERR).any()):
                raise ValueError(f"attribute {a!r}: values must be bool, int (64-bit), float or str")
        return cls(names, cols, dictionary)

    def column(self, attr: str) -> Column | None:
        c = self._columns.get(attr)
        if c is None or c.uniform == V.UNDEF:
            return None
        return c

    def attribute_names(self) -> list[str]:
        return sorted(self._columns)
