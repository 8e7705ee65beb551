"""The typed MIL syntax tree.

Every node keeps its source span (``start``/``end`` character offsets into the
query text, and the 1-based ``line``/``column`` of ``start``) so that errors
can put a caret under the spot and ``explain`` can quote each clause.  Nodes
are immutable once the parser hands them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from legionrm.mil.values import Value


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Const:
    """A literal: bool, int, float or string."""

    value: Value
    span: Span


@dataclass(frozen=True, slots=True)
class Attr:
    """``$name``: the value the resource exports, or undefined."""

    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Unary:
    """``-x``, ``~x`` or ``not x`` (op is ``"-"``, ``"~"`` or ``"not"``)."""

    op: str
    operand: "Node"
    span: Span


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic ``+ - * / mod`` or a comparison ``== != < <= > >=``."""

    op: str
    left: "Node"
    right: "Node"
    span: Span

    @property
    def is_comparison(self) -> bool:
        return self.op in COMPARISONS


@dataclass(frozen=True, slots=True)
class Logic:
    """A left-to-right chain ``a or b or c`` (op is ``or``, ``xor`` or ``and``).

    Chains are flattened so that a query listing hundreds of alternatives
    does not nest hundreds deep; the value is the left fold of the binary rule.
    """

    op: str
    operands: tuple["Node", ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Call:
    """``match(p, s)``, ``max(a, b)``, ``min(a, b)``, ``int(x)``, ``float(x)``."""

    func: str
    args: tuple["Node", ...]
    span: Span


Node = Union[Const, Attr, Unary, Binary, Logic, Call]

COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
ARITHMETIC = frozenset({"+", "-", "*", "/", "mod"})


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: the root expression, the source text and the attributes used."""

    text: str
    root: Node
    attributes: frozenset[str] = field(default_factory=frozenset)

    def source(self, node: Node) -> str:
        """The source text of ``node``."""
        return self.text[node.span.start : node.span.end]


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, (Logic,)):
        return node.operands
    if isinstance(node, Call):
        return node.args
    return ()
