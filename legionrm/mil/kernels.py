"""The shared kernels of the vectorized engine: per-evaluation state and column helpers.

Both :mod:`legionrm.mil.vectorize` (operators, compilation) and
:mod:`legionrm.mil.vfuncs` (``match``, ``int()``, ``float()``) build on this
module, and it imports neither, so imports run one way:
``vectorize -> vfuncs -> kernels -> columns -> values``.

Conventions (see :mod:`legionrm.mil.columns`): a value is a
:class:`~legionrm.mil.columns.Column` of ``n`` rows; constants carry 0-d
arrays that numpy broadcasts; a helper never mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from legionrm.mil import values as V
from legionrm.mil.columns import Column, ColumnTable
from legionrm.mil.deadline import Deadline
from legionrm.mil.nodes import Span

UNDEF, ERR, BOOL, INT, FLOAT, STR = V.UNDEF, V.ERR, V.BOOL, V.INT, V.FLOAT, V.STR
NUMERIC_TAGS = (BOOL, INT, FLOAT)


class Ctx:
    """State of one evaluation over one table: row count, string literals that
    are not in the table's dictionary (given negative codes), the evaluation
    deadline (None: none) and ``at``, the clause being computed (for the
    deadline's message)."""

    __slots__ = ("at", "deadline", "local", "n", "table")

    def __init__(self, table: ColumnTable, deadline: Deadline | None = None) -> None:
        self.table = table
        self.n = len(table)
        self.local: list[str] = []
        self.deadline = deadline
        self.at: Span | None = None

    def tick(self) -> None:
        """A safe point: raise MILTimeoutError (at ``self.at``) if the deadline passed."""
        if self.deadline is not None:
            self.deadline.check(self.at, f"over {self.n} rows")

    def code(self, s: str) -> int:
        c = self.table.strings.index.get(s)
        if c is not None:
            return c
        try:
            return -1 - self.local.index(s)
        except ValueError:
            self.local.append(s)
            return -len(self.local)

    def string(self, c: int) -> str:
        return self.table.strings.strings[c] if c >= 0 else self.local[-1 - c]


VecFn = Callable[[Ctx], Column]

BATCH = 1024
"""Distinct strings (or pairs) handled between two deadline checks."""


def per_item(items: list[Any], fn: Callable[[Any], Any], ctx: Ctx) -> list[Any]:
    """``[fn(x) for x in items]`` with a deadline check (:meth:`Ctx.tick`) before
    every :data:`BATCH` items: the loops over distinct strings are where a big
    table spends its time inside one operation."""
    out: list[Any] = []
    for lo in range(0, len(items), BATCH):
        ctx.tick()
        out.extend(fn(x) for x in items[lo : lo + BATCH])
    return out


def const(n: int, tag: int, **data: np.ndarray) -> Column:
    return Column(n, uniform=tag, **data)


def full(n: int, v: V.Value, ctx: Ctx) -> Column:
    t = V.tag_of(v)
    if t == BOOL:
        return const(n, t, b=np.array(v, dtype=bool))
    if t == INT:
        return const(n, t, i=np.array(v, dtype=np.int64))
    if t == FLOAT:
        return const(n, t, f=np.array(v, dtype=np.float64))
    if t == STR:
        return const(n, t, s=np.array(ctx.code(v), dtype=np.int32))  # type: ignore[arg-type]
    return const(n, t)


def bcast(a: np.ndarray | bool, n: int) -> np.ndarray:
    a = np.asarray(a)
    return a if a.shape == (n,) else np.broadcast_to(a, (n,))


# --- kind-wise views --------------------------------------------------------------

_ZERO_I = np.array(0, dtype=np.int64)
FALSE = np.array(False)


def ints(v: Column) -> np.ndarray:
    """int64 values, valid at BOOL and INT rows."""
    if v.uniform == INT:
        return v.i  # type: ignore[return-value]
    if v.uniform == BOOL:
        return v.b.astype(np.int64)  # type: ignore[union-attr]
    i = v.i if v.i is not None else _ZERO_I
    if v.b is not None:
        return np.where(v.tags() == BOOL, v.b, i)
    return i


def floats(v: Column) -> np.ndarray:
    """float64 values, valid at BOOL, INT and FLOAT rows."""
    if v.uniform == FLOAT:
        return v.f  # type: ignore[return-value]
    if v.uniform in (INT, BOOL):
        return ints(v).astype(np.float64)
    if v.f is None:
        return ints(v).astype(np.float64)
    if v.i is None and v.b is None:
        return v.f
    return np.where(v.tags() == FLOAT, v.f, ints(v).astype(np.float64))


def select(n: int, tag: np.ndarray, **data: np.ndarray | None) -> Column:
    """A result column from a per-row tag array, collapsing to uniform if possible."""
    if tag.size and (tag == tag[0]).all():
        return Column(n, uniform=int(tag[0]), **data)
    if n == 0:
        return Column(n, uniform=UNDEF)
    return Column(n, tag=tag, uniform=None, **data)


def strict_tags(ta: np.ndarray, tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows forced to ERROR, rows forced to UNDEFINED (error wins)."""
    err = (ta == ERR) | (tb == ERR)
    und = ~err & ((ta == UNDEF) | (tb == UNDEF))
    return err, und
