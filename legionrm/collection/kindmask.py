"""The mask of a query on the ``kind`` column alone (``$kind == "host"``), kept
while that column is the same: a pass's every snapshot asks for its hosts (and
vaults) anew, while the hosts' reports change other columns.  Pure; no Ray.

A snapshot's column is a view of the table's arrays, and the table copies an
array before writing a row a snapshot can see (copy-on-write,
:meth:`legionrm.collection.column.Column.before_write`): so a column whose
arrays are the same objects, over the same number of rows, holds the same
values, and the query's mask on it is the one worked out before.  The kept
entry holds those arrays, so their memory cannot be reused by another while
they are compared by identity.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from legionrm.mil.columns import Column, ColumnTable

KIND_QUERY = re.compile(r'\$kind == "[A-Za-z0-9_]*"')
"""The queries kept: one comparison of ``$kind`` with a string, which reads that column (and the strings) only."""

_kept: dict[str, tuple[tuple[object, ...], np.ndarray]] = {}


def kind_mask(text: str, table: ColumnTable, work_out: Callable[[], np.ndarray]) -> np.ndarray:
    """``work_out()`` (the mask of ``text`` on ``table``), or the one kept for the same ``kind``
    column (see the module); a fresh array either way.  ``text`` must match :data:`KIND_QUERY`."""
    key = (table.strings, *_arrays(table.column("kind"), len(table)))
    got = _kept.get(text)
    if got is not None and _same(got[0], key):
        return got[1].copy()
    mask = work_out()
    _kept[text] = (key, mask.copy())
    return mask


def _arrays(col: Column | None, n: int) -> tuple[object, ...]:
    """What a column's values are read from: its length and uniform tag, and the arrays' owners."""
    if col is None:
        return (n, None)
    return (n, col.n, col.uniform, *(None if a is None else _owner(a) for a in (col.tag, col.b, col.i, col.f, col.s)))


def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Equal lengths, tags and strings, and the very same arrays (by identity, never by value)."""
    return len(a) == len(b) and all(x is y or (isinstance(x, int) and type(x) is type(y) and x == y)
                                    for x, y in zip(a, b))
