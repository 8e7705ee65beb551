"""The vectorized engine: a MIL tree compiled into numpy operations over columns.

``compile_vector(node)`` returns a function ``ctx -> Column`` that computes
the node's value for every row of a :class:`~legionrm.mil.columns.ColumnTable`
at once.  The rules are exactly those of :mod:`legionrm.mil.values` (the
per-record reference); each operation has

* a fast path when both operands have one kind on every row (a pure int
  column against an int literal is one numpy compare; string equality with a
  literal compares dictionary codes), and
* a general path over per-row tags for mixed columns, undefined cells and
  errors, which computes every candidate result and selects per row.

Constants are 0-d arrays that numpy broadcasts.  Integer arithmetic wraps
like C int64 (numpy's own behaviour); division and ``mod`` guard their
divisors so no row can trap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from legionrm.mil import values as V
from legionrm.mil.columns import Column, ColumnTable
from legionrm.mil.deadline import Deadline
from legionrm.mil.kernels import (
    BOOL,
    ERR,
    FALSE,
    FLOAT,
    INT,
    STR,
    UNDEF,
    Ctx,
    VecFn,
    bcast,
    const,
    floats,
    full,
    ints,
    per_item,
    select,
    strict_tags,
)
from legionrm.mil.nodes import Attr, Binary, Call, Const, Logic, Node, Unary
from legionrm.mil.vfuncs import match, to_float, to_int

# --- arithmetic -----------------------------------------------------------------------


def _int_op(op: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(result, rows dividing by zero or None) for int64 operands (C semantics)."""
    if op == "+":
        return x + y, None
    if op == "-":
        return x - y, None
    if op == "*":
        return x * y, None
    zero = y == 0
    minus1 = y == -1
    ys = np.where(zero | minus1, 1, y)  # no row can trap: INT64_MIN / -1 is handled below
    if op == "/":
        q = np.floor_divide(x, ys)
        r = x - q * ys
        q = q + ((r != 0) & ((x < 0) != (ys < 0)))  # floor -> truncate toward zero
        q = np.where(minus1, np.negative(x), q)  # wraps INT64_MIN like C int64
        return q, zero
    return np.fmod(x, ys), zero  # fmod on ints: C remainder, sign of the dividend


def _float_op(op: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    if op == "+":
        return x + y, None
    if op == "-":
        return x - y, None
    if op == "*":
        return x * y, None
    zero = y == 0.0
    if op == "/":
        return x / y, zero
    return np.fmod(x, y), zero


def numeric_tags(a: Column, b: Column, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The result tags of a numeric operation on the mixed columns ``a`` and ``b``, and the
    rows it computes as int and as float: error when either is (or is a string), undefined
    when either is, float when either is, else int."""
    ta, tb = a.tags(), b.tags()
    err, und = strict_tags(ta, tb)
    bad = ~err & ~und & ((ta == STR) | (tb == STR))
    ok = ~(err | und | bad)
    isf = ok & ((ta == FLOAT) | (tb == FLOAT))
    isi = ok & ~isf
    tag = np.full(n, INT, dtype=np.int8)
    tag[isf] = FLOAT
    tag[und] = UNDEF
    tag[err | bad] = ERR
    return tag, isi, isf


def arith(op: str, a: Column, b: Column, n: int) -> Column:
    ua, ub = a.uniform, b.uniform
    if ua is not None and ub is not None:
        s = V.strict(ua, ub)
        if s is not None:
            return const(n, V.tag_of(s))
        if ua == STR or ub == STR:
            return const(n, ERR)
        if ua == FLOAT or ub == FLOAT:
            r, zero = _float_op(op, floats(a), floats(b))
            kind, data = FLOAT, {"f": r}
        else:
            r, zero = _int_op(op, ints(a), ints(b))
            kind, data = INT, {"i": r}
        if zero is not None and zero.any():
            tag = np.where(bcast(zero, n), np.int8(ERR), np.int8(kind)).astype(np.int8)
            if r.ndim == 0:
                data = {k: bcast(v, n) for k, v in data.items()}
            return select(n, tag, **data)
        return const(n, kind, **data) if r.ndim == 0 else Column(n, uniform=kind, **data)
    tag, isi, isf = numeric_tags(a, b, n)
    i = f = None
    if isi.any():
        i, zero = _int_op(op, ints(a), ints(b))
        i = bcast(i, n)
        if zero is not None:
            tag[isi & zero] = ERR
    if isf.any():
        f, zero = _float_op(op, floats(a), floats(b))
        f = bcast(f, n)
        if zero is not None:
            tag[isf & zero] = ERR
    return select(n, tag, i=i, f=f)


def maxmin(fn: str, a: Column, b: Column, n: int) -> Column:
    def fmax(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        pick = (y > x) if fn == "max" else (y < x)
        return np.where(pick, y, x)

    def ffloat(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(x) | np.isnan(y), np.nan, fmax(x, y))

    ua, ub = a.uniform, b.uniform
    if ua is not None and ub is not None:
        s = V.strict(ua, ub)
        if s is not None:
            return const(n, V.tag_of(s))
        if ua == STR or ub == STR:
            return const(n, ERR)
        if ua == FLOAT or ub == FLOAT:
            return Column(n, uniform=FLOAT, f=ffloat(floats(a), floats(b)))
        return Column(n, uniform=INT, i=fmax(ints(a), ints(b)))
    tag, isi, isf = numeric_tags(a, b, n)
    i = bcast(fmax(ints(a), ints(b)), n) if isi.any() else None
    f = bcast(ffloat(floats(a), floats(b)), n) if isf.any() else None
    return select(n, tag, i=i, f=f)


def negate(a: Column, n: int) -> Column:
    u = a.uniform
    if u is not None:
        if u in (UNDEF, ERR):
            return a
        if u == FLOAT:
            return Column(n, uniform=FLOAT, f=np.negative(cast(np.ndarray, a.f)))
        if u in (INT, BOOL):
            return Column(n, uniform=INT, i=np.negative(ints(a)))
        return const(n, ERR)
    ta = a.tags()
    tag = ta.copy()
    tag[ta == BOOL] = INT
    tag[ta == STR] = ERR
    i = np.negative(ints(a)) if (a.i is not None or a.b is not None) else None
    f = np.negative(a.f) if a.f is not None else None
    return select(n, tag, i=None if i is None else bcast(i, n), f=f)


def bitnot(a: Column, n: int) -> Column:
    u = a.uniform
    if u is not None:
        if u in (UNDEF, ERR):
            return a
        if u in (INT, BOOL):
            return Column(n, uniform=INT, i=np.invert(ints(a)))
        return const(n, ERR)
    ta = a.tags()
    tag = ta.copy()
    tag[ta == BOOL] = INT
    tag[(ta == STR) | (ta == FLOAT)] = ERR
    i = np.invert(ints(a)) if (a.i is not None or a.b is not None) else None
    return select(n, tag, i=None if i is None else bcast(i, n))


# --- comparison ---------------------------------------------------------------------------

_NP_CMP = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _str_cmp(op: str, x: np.ndarray, y: np.ndarray, ctx: Ctx) -> np.ndarray:
    """Compare string codes: equality on codes, order via sorted ranks."""
    if op in ("==", "!="):
        return _NP_CMP[op](x, y)
    fn = V.COMPARE[op]
    if x.ndim == 0 and y.ndim == 0:
        return np.array(fn(ctx.string(int(x)), ctx.string(int(y))))
    if x.ndim == 0 or y.ndim == 0:  # one literal: decide once per distinct string
        lit, arr, lit_left = (x, y, True) if x.ndim == 0 else (y, x, False)
        ls = ctx.string(int(lit))
        out = np.zeros(arr.shape, dtype=bool)
        uniq, inv = np.unique(arr, return_inverse=True)
        if lit_left:
            vals = per_item(uniq.tolist(), lambda c: fn(ls, ctx.string(c)), ctx)
        else:
            vals = per_item(uniq.tolist(), lambda c: fn(ctx.string(c), ls), ctx)
        res = np.array(vals, dtype=bool)
        out[...] = res[inv.reshape(arr.shape)] if uniq.size else out
        return out
    if ctx.local:  # only literals get local codes, and two arrays hold none
        raise AssertionError("local string codes in a column")  # pragma: no cover
    ranks = ctx.table.strings.ranks()
    return _NP_CMP[op](ranks[x], ranks[y])


def compare(op: str, a: Column, b: Column, ctx: Ctx) -> Column:
    n = ctx.n
    npop = _NP_CMP[op]
    ua, ub = a.uniform, b.uniform
    if ua is not None and ub is not None:
        s = V.strict(ua, ub)
        if s is not None:
            return const(n, V.tag_of(s))
        if ua == STR or ub == STR:
            if ua != ub:
                return const(n, ERR)
            return Column(n, uniform=BOOL, b=_str_cmp(op, a.s, b.s, ctx))  # type: ignore[arg-type]
        if ua == FLOAT or ub == FLOAT:
            return Column(n, uniform=BOOL, b=npop(floats(a), floats(b)))
        return Column(n, uniform=BOOL, b=npop(ints(a), ints(b)))
    ta, tb = a.tags(), b.tags()
    err, und = strict_tags(ta, tb)
    sa, sb = ta == STR, tb == STR
    live = ~err & ~und
    strs = live & sa & sb
    bad = live & (sa ^ sb)
    nums = live & ~sa & ~sb
    isf = nums & ((ta == FLOAT) | (tb == FLOAT))
    isi = nums & ~isf
    res = np.zeros(n, dtype=bool)
    if isi.any():
        r = bcast(npop(ints(a), ints(b)), n)
        res[isi] = r[isi]
    if isf.any():
        r = bcast(npop(floats(a), floats(b)), n)
        res[isf] = r[isf]
    if strs.any():
        xs, ys = a.s, b.s
        xs = xs[strs] if xs.ndim else xs  # type: ignore[union-attr,index]
        ys = ys[strs] if ys.ndim else ys  # type: ignore[union-attr,index]
        r = _str_cmp(op, xs, ys, ctx)  # type: ignore[arg-type]
        res[strs] = r
    tag = np.full(n, BOOL, dtype=np.int8)
    tag[und] = UNDEF
    tag[err | bad] = ERR
    return select(n, tag, b=res)


# --- logic ---------------------------------------------------------------------------------


def truth(v: Column, n: int) -> Column:
    """The value in a boolean position: tags become BOOL, UNDEF or ERR."""
    u = v.uniform
    if u is not None:
        if u == BOOL or u in (UNDEF, ERR):
            return v
        if u == INT:
            return Column(n, uniform=BOOL, b=cast(np.ndarray, v.i) != 0)
        if u == FLOAT:
            return Column(n, uniform=BOOL, b=cast(np.ndarray, v.f) != 0.0)
        return const(n, ERR)
    ta = v.tags()
    tag = ta.copy()
    num = (ta == INT) | (ta == FLOAT)
    tag[num] = BOOL
    tag[ta == STR] = ERR
    b = np.zeros(n, dtype=bool)
    if v.b is not None:
        m = ta == BOOL
        b[m] = bcast(v.b, n)[m]
    if v.i is not None:
        m = ta == INT
        b[m] = bcast(v.i != 0, n)[m]
    if v.f is not None:
        m = ta == FLOAT
        b[m] = bcast(v.f != 0.0, n)[m]
    return select(n, tag, b=b)


def _tv(v: Column, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(known-true rows, known-false rows, error rows) of a truth column."""
    t = v.tags()
    b = v.b if v.b is not None else FALSE
    known = t == BOOL
    return known & b, known & ~b, t == ERR


def logic(op: str, a: Column, b: Column, n: int) -> Column:
    a, b = truth(a, n), truth(b, n)
    if a.uniform == BOOL and b.uniform == BOOL:  # fast path: no unknowns
        fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
        return Column(n, uniform=BOOL, b=fn(cast(np.ndarray, a.b), cast(np.ndarray, b.b)))
    ta_, fa, ea = _tv(a, n)
    tb_, fb, eb = _tv(b, n)
    if op == "and":
        t, f = ta_ & tb_, fa | fb
    elif op == "or":
        t, f = ta_ | tb_, fa & fb
    else:
        ka, kb = ta_ | fa, tb_ | fb
        t = ka & kb & (ta_ ^ tb_)
        f = ka & kb & ~(ta_ ^ tb_)
    t, f = bcast(t, n), bcast(f, n)
    known = t | f
    tag = np.where(known, np.int8(BOOL), np.where(bcast(ea | eb, n), np.int8(ERR), np.int8(UNDEF))).astype(np.int8)
    return select(n, tag, b=np.array(t))


def logic_not(a: Column, n: int) -> Column:
    a = truth(a, n)
    if a.b is None:
        return a
    return Column(n, tag=a.tag, uniform=a.uniform, b=np.logical_not(a.b))


# --- compilation -----------------------------------------------------------------------------



def compile_vector(node: Node) -> VecFn:
    """A function ctx -> Column computing ``node`` for every row.

    Every operation node ends in a safe point (:meth:`Ctx.tick`): once the
    evaluation's deadline has passed, the next node to finish raises
    MILTimeoutError with a caret under it.  Operations that loop over distinct
    strings set ``ctx.at`` to their clause and tick inside the loop too."""
    fn = _node_fn(node)
    if isinstance(node, (Const, Attr)):
        return fn  # no work worth a check
    span = node.span

    def checked(ctx: Ctx) -> Column:
        out = fn(ctx)
        ctx.at = span
        ctx.tick()
        return out

    return checked


def _node_fn(node: Node) -> VecFn:
    """The unchecked function for ``node`` (its operands are compiled checked)."""
    if isinstance(node, Const):
        value = node.value
        return lambda ctx: full(ctx.n, value, ctx)
    if isinstance(node, Attr):
        name = node.name

        def attr(ctx: Ctx) -> Column:
            col = ctx.table.column(name)
            return col if col is not None else const(ctx.n, UNDEF)

        return attr
    if isinstance(node, Unary):
        f = compile_vector(node.operand)
        if node.op == "not":
            return lambda ctx: logic_not(f(ctx), ctx.n)
        if node.op == "-":
            return lambda ctx: negate(f(ctx), ctx.n)
        return lambda ctx: bitnot(f(ctx), ctx.n)
    if isinstance(node, Logic):
        fs = [compile_vector(c) for c in node.operands]
        op = node.op

        def chain(ctx: Ctx) -> Column:
            acc = fs[0](ctx)
            for g in fs[1:]:
                acc = logic(op, acc, g(ctx), ctx.n)
            return acc

        return chain
    span = node.span
    if isinstance(node, Binary):
        fa, fb = compile_vector(node.left), compile_vector(node.right)
        op = node.op
        if node.is_comparison:

            def cmp(ctx: Ctx) -> Column:
                a, b = fa(ctx), fb(ctx)
                ctx.at = span  # string order compares loop over distinct strings
                return compare(op, a, b, ctx)

            return cmp
        return lambda ctx: arith(op, fa(ctx), fb(ctx), ctx.n)
    if isinstance(node, Call):
        fs = [compile_vector(c) for c in node.args]
        fn = node.func
        if fn in ("max", "min"):
            return lambda ctx: maxmin(fn, fs[0](ctx), fs[1](ctx), ctx.n)
        kernels: dict[str, Callable[..., Column]] = {"match": match, "int": to_int, "float": to_float}
        kernel = kernels[fn]

        def call(ctx: Ctx) -> Column:
            args = [f(ctx) for f in fs]
            ctx.at = span  # these loop over distinct strings
            return kernel(*args, ctx)

        return call
    raise TypeError(f"not a MIL node: {node!r}")  # pragma: no cover


def run(fn: VecFn, table: ColumnTable, deadline: Deadline | None = None) -> Column:
    """Evaluate a compiled vector function over ``table`` (numpy warnings silenced:
    overflow wraps and division by zero is an error value by design).  With a
    ``deadline``, raises MILTimeoutError once it has passed (checked at every
    node and inside loops over distinct strings)."""
    with np.errstate(all="ignore"):
        return fn(Ctx(table, deadline))


def exactly_true(col: Column, n: int) -> np.ndarray:
    """A fresh (n,) bool array: rows whose value is exactly true in a boolean position."""
    with np.errstate(all="ignore"):
        t = truth(col, n)
    if t.uniform is not None:
        if t.uniform != BOOL:
            return np.zeros(n, dtype=bool)
        return np.array(bcast(t.b, n), dtype=bool)  # type: ignore[arg-type]
    return (t.tag == BOOL) & bcast(t.b, n)  # type: ignore[arg-type]
