"""The reference engine: evaluate a MIL tree on one record.

The tree is compiled once into nested Python closures (one per node), so a
record costs one call per node and no dispatch on node kinds.  The rules are
those of :mod:`legionrm.mil.values`; this engine is the definition the
vectorized engine is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from legionrm.mil import values as V
from legionrm.mil.nodes import Attr, Binary, Call, Const, Logic, Node, Query, Unary

Record = Mapping[str, Any]
Evaluator = Callable[[Record], V.Value]


def compile_node(node: Node) -> Evaluator:
    """A function record -> value for ``node`` (recursion depth is bounded by the parser)."""
    if isinstance(node, Const):
        value = node.value
        return lambda r: value
    if isinstance(node, Attr):
        name = node.name
        from_attr = V.from_attr

        def attr(r: Record) -> V.Value:
            v: Any = r.get(name)  # narrowed by type(v) below, which mypy does not follow
            t = type(v)
            if t is int:
                return v if -(2**63) <= v < 2**63 else V.ERROR
            if t is float or t is str or t is bool:
                return v
            return from_attr(v)

        return attr
    if isinstance(node, Unary):
        f = compile_node(node.operand)
        op = {"not": V.logic_not, "-": V.negate, "~": V.bitnot}[node.op]
        return lambda r: op(f(r))
    if isinstance(node, Logic):
        fs = [compile_node(c) for c in node.operands]
        step = {"and": V.logic_and, "or": V.logic_or, "xor": V.logic_xor}[node.op]
        first, rest = fs[0], fs[1:]

        def logic(r: Record) -> V.Value:
            acc = first(r)
            for g in rest:
                acc = step(acc, g(r))
            # A one-operand chain never occurs; step() already maps to bool/unknown.
            return acc

        return logic
    if isinstance(node, Binary):
        fa, fb = compile_node(node.left), compile_node(node.right)
        bop = node.op
        if node.is_comparison:
            cmp = V.compare
            return lambda r: cmp(bop, fa(r), fb(r))
        ar = V.arith
        return lambda r: ar(bop, fa(r), fb(r))
    if isinstance(node, Call):
        fs = [compile_node(c) for c in node.args]
        if node.func == "match":
            fp, fsub = fs
            return lambda r: V.match(fp(r), fsub(r))
        if node.func in ("max", "min"):
            fa, fb = fs
            fn = node.func
            return lambda r: V.maxmin(fn, fa(r), fb(r))
        conv = V.to_int if node.func == "int" else V.to_float
        fx = fs[0]
        return lambda r: conv(fx(r))
    raise TypeError(f"not a MIL node: {node!r}")  # pragma: no cover


@dataclass(frozen=True)
class ClauseExplanation:
    """One clause of a query's and/or/xor/not skeleton, as evaluated on one record.

    ``depth`` is the nesting level in that skeleton (0 is the whole query),
    ``kind`` is ``and``/``or``/``xor``/``not`` for connectives and ``clause``
    for a leaf condition; ``value`` is the clause's MIL value and ``matches``
    whether that value is exactly true.
    """

    text: str
    value: V.Value
    depth: int
    kind: str

    @property
    def matches(self) -> bool:
        return V.truth(self.value) is True

    def render(self) -> str:
        mark = "yes" if self.matches else "no "
        return f"{'  ' * self.depth}{mark}  {self.text}  =>  {V.format_value(self.value)}"


def explain(query: Query, record: Record) -> list[ClauseExplanation]:
    """Pre-order list of the query's and/or/xor/not skeleton with each part's value."""
    out: list[ClauseExplanation] = []

    def walk(node: Node, depth: int) -> None:
        value = compile_node(node)(record)
        if isinstance(node, Logic):
            out.append(ClauseExplanation(query.source(node), value, depth, node.op))
            for c in node.operands:
                walk(c, depth + 1)
        elif isinstance(node, Unary) and node.op == "not":
            out.append(ClauseExplanation(query.source(node), value, depth, "not"))
            walk(node.operand, depth + 1)
        else:
            out.append(ClauseExplanation(query.source(node), value, depth, "clause"))

    walk(query.root, 0)
    return out
