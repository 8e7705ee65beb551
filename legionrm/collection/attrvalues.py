"""Attribute values as callers give them, checked and made MIL values (no Ray).

One resource's attributes (:func:`check_values`), many updates' values of one
attribute at once (:func:`typed_values`, the heartbeats' fast path), or a
whole column of a bulk insert (:func:`as_column`).  A value that is not bool,
int (64-bit), float or str is refused with a
:class:`~legionrm.errors.CollectionError` naming the resource or column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from legionrm.errors import CollectionError
from legionrm.mil import values as V
from legionrm.mil.columns import Column, StringDict, column_from_values

_ARRAY_OF = {bool: bool, int: np.int64, float: np.float64, str: None}
"""The numpy dtype of the values of each plain type (strings are coded by the table)."""

TAG_OF = {bool: V.BOOL, int: V.INT, float: V.FLOAT, str: V.STR}
"""The tag of a plain value by its type (:func:`legionrm.mil.values.tag_of`'s first cases)."""


def common_tag(vals: Sequence[V.Value]) -> int | None:
    """The MIL tag every one of ``vals`` (MIL values) has, or None when they have several (or none).
    Reads the tags of the few distinct plain types, not of every value."""
    kinds = set(map(type, vals))
    tags = {TAG_OF[k] for k in kinds} if kinds <= TAG_OF.keys() else {V.tag_of(v) for v in vals}
    return tags.pop() if len(tags) == 1 else None


def typed_values(attr: object, vals: Sequence[Any]) -> tuple[int | None, np.ndarray | None] | None:
    """``attr``'s values in many updates, when ``attr`` is a good name and every value is a MIL
    value as it stands (bool, float, str, or an int within 64 bits): what :func:`check_values`
    would pass unchanged, checked per column.  Returns (tag, array): the one kind they share and
    their numpy array (None for strings), or (None, None) when they are of several kinds; None
    when one must be refused or converted (for :func:`check_values`, update by update)."""
    if not isinstance(attr, str) or not attr:
        return None
    kinds = set(map(type, vals))
    if not kinds <= _ARRAY_OF.keys():
        return None
    if len(kinds) != 1:
        ints = [v for v in vals if type(v) is int]
        return (None, None) if not ints or V.INT64_MIN <= min(ints) and max(ints) <= V.INT64_MAX else None
    kind = kinds.pop()
    dtype = _ARRAY_OF[kind]
    try:  # (an int beyond 64 bits overflows)
        return TAG_OF[kind], None if dtype is None else np.array(vals, dtype=dtype)
    except OverflowError:
        return None


def check_values(name: str, attrs: Mapping[str, Any]) -> dict[str, V.Value]:
    out: dict[str, V.Value] = {}
    for k, v in attrs.items():
        if not isinstance(k, str) or not k:
            raise CollectionError(f"resource {name!r}: attribute names are non-empty strings, got {k!r}")
        mv = V.from_attr(v)
        if mv is V.ERROR:
            raise CollectionError(
                f"resource {name!r}: attribute {k!r} = {v!r}: values must be bool, int (64-bit), float or str"
            )
        out[k] = mv
    return out


def as_column(attr: str, col: Any, strings: StringDict) -> Column:
    """A bulk column as a Column (full length) with codes in ``strings``."""
    m = len(col)
    if isinstance(col, np.ndarray) and col.dtype != object:
        kind = col.dtype.kind
        if kind == "b":
            return Column(m, uniform=V.BOOL, b=col.astype(bool))
        if kind in "iu":
            if kind == "u" and m and col.max() > V.INT64_MAX:
                raise CollectionError(f"bulk_insert: column {attr!r} has integers beyond 64 bits")
            return Column(m, uniform=V.INT, i=col.astype(np.int64))
        if kind == "f":
            return Column(m, uniform=V.FLOAT, f=col.astype(np.float64))
        if kind in "US":
            uniq, inv = np.unique(col, return_inverse=True)
            codes = np.fromiter((strings.code(str(u)) for u in uniq.tolist()), dtype=np.int32, count=len(uniq))
            return Column(m, uniform=V.STR, s=codes[inv.reshape(-1)])
        raise CollectionError(f"bulk_insert: column {attr!r} has unsupported dtype {col.dtype}")
    vals = []
    for v in col:
        mv = V.from_attr(v)
        if mv is V.ERROR:
            raise CollectionError(f"bulk_insert: column {attr!r}: {v!r} is not bool, int (64-bit), float or str")
        vals.append(mv)
    return column_from_values(vals, strings)
