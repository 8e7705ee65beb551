"""Vectorized MIL functions: ``match``, ``int()``, ``float()`` over columns.

Split from :mod:`legionrm.mil.vectorize` (same rules, same conventions; the
shared helpers live in :mod:`legionrm.mil.kernels`, so this module never
imports the engine that calls it).  Strings are handled once per distinct
dictionary code, never per row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from legionrm.mil import regex
from legionrm.mil import values as V
from legionrm.mil.columns import Column
from legionrm.mil.kernels import (
    BOOL,
    ERR,
    FLOAT,
    INT,
    STR,
    UNDEF,
    Ctx,
    bcast,
    const,
    floats,
    ints,
    per_item,
    select,
    strict_tags,
)

# -------------------------------------------------------------------------------


def match(p: Column, s: Column, ctx: Ctx) -> Column:
    """``match(pattern, subject)`` per row: an RE2 search (:mod:`legionrm.mil.regex`),
    each distinct subject (or (pattern, subject) pair) searched once."""
    n = ctx.n
    tp, ts = p.tags(), s.tags()
    up, us = p.uniform, s.uniform
    if up is not None and us is not None:
        r = V.strict(up, us)
        if r is not None:
            return const(n, V.tag_of(r))
        if up != STR or us != STR:
            return const(n, ERR)
        if p.s.ndim == 0 and s.s.ndim == 1:  # type: ignore[union-attr]
            # the common case: a literal pattern over a string column
            pattern = ctx.string(int(p.s))  # type: ignore[arg-type]
            rx = regex.compile_pattern(pattern)
            if type(rx) is regex.BadPattern:
                return const(n, ERR)
            found, bad = ctx.table.strings.regex_over(pattern, s.s, rx, ctx.tick)  # type: ignore[arg-type]
            if bad is None:
                return Column(n, uniform=BOOL, b=found)
            return select(n, np.where(bad, np.int8(ERR), np.int8(BOOL)).astype(np.int8), b=found)
    err, und = strict_tags(tp, ts)
    ok = ~err & ~und & (tp == STR) & (ts == STR)
    bad = ~err & ~und & ~ok
    res = np.zeros(n, dtype=bool)
    tag = np.full(n, BOOL, dtype=np.int8)
    tag[und] = UNDEF
    tag[err | bad] = ERR
    if ok.any():
        # both tags are STR wherever ok holds, so both string code arrays exist
        pc, sc = cast(np.ndarray, p.s), cast(np.ndarray, s.s)
        if pc.ndim == 0:  # one pattern for every row: search each distinct subject once
            pattern = ctx.string(int(pc))
            rx = regex.compile_pattern(pattern)
            if type(rx) is regex.BadPattern:
                tag[ok] = ERR
            else:
                subj = bcast(sc, n)[ok]
                if subj.size and subj.min() < 0:  # a literal subject outside the dictionary
                    one = regex.search(rx, ctx.string(int(subj[0])))
                    res[ok] = bool(one)
                    if one is None:
                        tag[ok] = ERR
                else:
                    hit, unsearchable = ctx.table.strings.regex_over(pattern, subj, rx, ctx.tick)
                    res[ok] = hit
                    if unsearchable is not None:
                        sub = tag[ok]
                        sub[unsearchable] = ERR
                        tag[ok] = sub
        else:  # patterns vary per row: decide each distinct (pattern, subject) pair once
            pcs = bcast(pc, n)[ok].astype(np.int64)
            scs = bcast(sc, n)[ok].astype(np.int64)
            pairs = np.stack([pcs, scs], axis=1)
            uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
            vals = per_item(uniq.tolist(), lambda xy: V.match(ctx.string(xy[0]), ctx.string(xy[1])), ctx)
            r_ok = np.array([v is True for v in vals], dtype=bool)[inv.reshape(-1)]
            r_err = np.array([v is V.ERROR for v in vals], dtype=bool)[inv.reshape(-1)]
            res[ok] = r_ok
            sub = tag[ok]
            sub[r_err] = ERR
            tag[ok] = sub
    return select(n, tag, b=res)


def _parse_strings(codes: np.ndarray, ctx: Ctx, conv: Callable[[str], V.Value], kind: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, ok) for string codes converted by ``conv`` once per distinct string."""
    dtype = np.int64 if kind == INT else np.float64
    uniq, inv = np.unique(codes, return_inverse=True)
    vals = per_item(uniq.tolist(), lambda c: conv(ctx.string(c)), ctx)
    good = np.array([v is not V.ERROR for v in vals], dtype=bool)
    num = np.array([v if v is not V.ERROR else 0 for v in vals], dtype=dtype)
    inv = inv.reshape(codes.shape)
    return num[inv], good[inv]


def to_int(a: Column, ctx: Ctx) -> Column:
    n = ctx.n
    ta = a.tags()
    tag = ta.copy()
    i = np.zeros(n, dtype=np.int64)
    if a.b is not None or a.i is not None:
        m = (ta == BOOL) | (ta == INT)
        i[m] = bcast(ints(a), n)[m]
        tag[m] = INT
    if a.f is not None:
        m = ta == FLOAT
        fv = bcast(a.f, n)[m]
        inrange = (fv >= -V.TWO63_F) & (fv < V.TWO63_F)  # as V.float_to_int
        iv = np.zeros(fv.shape, dtype=np.int64)
        iv[inrange] = np.trunc(fv[inrange]).astype(np.int64)
        i[m] = iv
        tag[m] = np.where(inrange, np.int8(INT), np.int8(ERR))
    if a.s is not None:
        m = ta == STR
        if m.any():
            vals, good = _parse_strings(bcast(a.s, n)[m], ctx, V.parse_int, INT)
            i[m] = vals
            tag[m] = np.where(good, np.int8(INT), np.int8(ERR))
    return select(n, tag, i=i)


def to_float(a: Column, ctx: Ctx) -> Column:
    n = ctx.n
    if a.uniform == FLOAT:
        return a
    if a.uniform in (INT, BOOL):
        return Column(n, uniform=FLOAT, f=floats(a))
    ta = a.tags()
    tag = ta.copy()
    f = np.zeros(n, dtype=np.float64)
    num = (ta == BOOL) | (ta == INT) | (ta == FLOAT)
    if num.any():
        f[num] = bcast(floats(a), n)[num]
        tag[num] = FLOAT
    if a.s is not None:
        m = ta == STR
        if m.any():
            vals, good = _parse_strings(bcast(a.s, n)[m], ctx, V.parse_float, FLOAT)
            f[m] = vals
            tag[m] = np.where(good, np.int8(FLOAT), np.int8(ERR))
    return select(n, tag, f=f)


