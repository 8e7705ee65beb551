"""Static type check: refuse queries whose type error is certain.

Each node gets the set of kinds it can take when it is defined (attributes can
be anything; literals are what they are).  An operation whose operand can only
be of a kind the operation refuses (``"a" + 1``, ``not "x"``, ``~1.5``,
``"a" == 1``, ``match(1, $s)``, ``int("abc")``, a literal regular expression
that RE2 does not accept (:mod:`legionrm.mil.regex`: it does not compile, is
too long, or uses backreferences or lookaround), ``match()`` at all when RE2 is
not installed, a string as the whole query) raises MILTypeError with a
caret under that operand, before any resource is looked at.  Anything that
*might* be fine for some resource is left to run time, where it is an error
value.
"""

from __future__ import annotations

from typing import cast

from legionrm.errors import MILTypeError
from legionrm.mil import regex
from legionrm.mil import values as V
from legionrm.mil.nodes import (
    Attr,
    Binary,
    Call,
    Const,
    Logic,
    Node,
    Query,
    Unary,
    children,
)

ANY = frozenset({V.BOOL, V.INT, V.FLOAT, V.STR})
NUMERIC = frozenset({V.BOOL, V.INT, V.FLOAT})
INTEGRAL = frozenset({V.BOOL, V.INT})


def _err(q: Query, node: Node, message: str) -> MILTypeError:
    return MILTypeError(message, text=q.text, line=node.span.line, column=node.span.column)


def _shown(s: str, limit: int = 60) -> str:
    """``s`` quoted for a message, shortened in the middle when long."""
    return repr(s) if len(s) <= limit else f"{s[: limit // 2]!r}...{s[-limit // 4 :]!r} ({len(s)} characters)"


def _kinds(t: frozenset[int]) -> str:
    """'an int', 'a string or a float' ..."""
    return " or ".join(("an " if V.TAG_NAMES[k][0] in "aeiou" else "a ") + V.TAG_NAMES[k] for k in sorted(t))


def check(q: Query) -> dict[int, frozenset[int]]:
    """Type-check ``q``; returns id(node) -> possible kinds.  Raises MILTypeError."""
    types: dict[int, frozenset[int]] = {}
    # post-order without recursion
    stack: list[tuple[Node, bool]] = [(q.root, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            stack.extend((c, False) for c in children(node))
            continue
        types[id(node)] = _infer(q, node, types)
    if not types[id(q.root)] & NUMERIC:
        raise _err(q, q.root, "a query must be a condition, not " + _kinds(types[id(q.root)]))
    return types


def _need(q: Query, node: Node, t: frozenset[int], allowed: frozenset[int], what: str) -> None:
    if not t & allowed:
        raise _err(q, node, f"{what} cannot take {_kinds(t)}")


def _arith_result(a: frozenset[int], b: frozenset[int]) -> frozenset[int]:
    a, b = a & NUMERIC, b & NUMERIC
    if a <= INTEGRAL and b <= INTEGRAL:
        return frozenset({V.INT})
    if a == {V.FLOAT} or b == {V.FLOAT}:
        return frozenset({V.FLOAT})
    return frozenset({V.INT, V.FLOAT})


def _infer(q: Query, node: Node, types: dict[int, frozenset[int]]) -> frozenset[int]:
    if isinstance(node, Const):
        return frozenset({V.tag_of(node.value)})
    if isinstance(node, Attr):
        return ANY
    if isinstance(node, Unary):
        t = types[id(node.operand)]
        if node.op == "not":
            _need(q, node.operand, t, NUMERIC, "'not'")
            return frozenset({V.BOOL})
        if node.op == "~":
            _need(q, node.operand, t, INTEGRAL, "'~' (bitwise not, integers only)")
            return frozenset({V.INT})
        _need(q, node.operand, t, NUMERIC, "unary '-'")
        return _arith_result(t, frozenset({V.INT}))
    if isinstance(node, Logic):
        for c in node.operands:
            _need(q, c, types[id(c)], NUMERIC, f"'{node.op}'")
        return frozenset({V.BOOL})
    if isinstance(node, Binary):
        a, b = types[id(node.left)], types[id(node.right)]
        if node.is_comparison:
            if a == {V.STR} and not b & {V.STR}:
                raise _err(q, node.right, f"'{node.op}' compares a string with {_kinds(b)}")
            if b == {V.STR} and not a & {V.STR}:
                raise _err(q, node.left, f"'{node.op}' compares {_kinds(a)} with a string")
            return frozenset({V.BOOL})
        _need(q, node.left, a, NUMERIC, f"'{node.op}'")
        _need(q, node.right, b, NUMERIC, f"'{node.op}'")
        return _arith_result(a, b)
    if isinstance(node, Call):
        ts = [types[id(c)] for c in node.args]
        if node.func == "match":
            for c, t in zip(node.args, ts):
                _need(q, c, t, frozenset({V.STR}), "match()")
            if not regex.AVAILABLE:  # no safe engine: refuse, never fall back to a backtracking one
                raise _err(q, node, regex.MISSING)
            p = node.args[0]
            if isinstance(p, Const):
                pattern = cast(str, p.value)  # a str: _need above
                rx = regex.compile_pattern(pattern)
                if type(rx) is regex.BadPattern:
                    raise _err(q, p, f"match(): pattern {_shown(pattern)} refused: {rx.reason}")
            return frozenset({V.BOOL})
        if node.func in ("max", "min"):
            for c, t in zip(node.args, ts):
                _need(q, c, t, NUMERIC, f"{node.func}()")
            return _arith_result(ts[0], ts[1])
        arg = node.args[0]
        # A literal string that is no number is a certain type error; a number
        # beyond int64 (int("1e19")) is a run-time error value, like int(1e19).
        if isinstance(arg, Const) and type(arg.value) is str and V.parse_float(arg.value) is V.ERROR:
            raise _err(q, arg, f"{node.func}(): {arg.value!r} is not a number")
        return frozenset({V.INT}) if node.func == "int" else frozenset({V.FLOAT})
    raise TypeError(node)  # pragma: no cover
