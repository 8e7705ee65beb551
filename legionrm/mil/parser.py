"""MIL text -> typed syntax tree (:mod:`legionrm.mil.nodes`), with positions.

``parse(text)`` either returns a :class:`~legionrm.mil.nodes.Query` or raises
:class:`~legionrm.errors.MILSyntaxError` with the line, the column, what was
expected and a caret.  It never raises anything else (the fuzz test holds it
to that).  Lark builds a parse tree (LALR, iterative); the tree is converted
to nodes without recursion, so no query text can exhaust Python's stack; a
query nested deeper than :data:`MAX_DEPTH` is refused.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_right
from functools import lru_cache
from importlib import resources
from typing import cast

from lark import Lark, Token, Tree
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
)

from legionrm.errors import MILSyntaxError
from legionrm.mil.nodes import (
    Attr,
    Binary,
    Call,
    Const,
    Logic,
    Node,
    Query,
    Span,
    Unary,
    children,
)

MAX_DEPTH = 200
"""Deepest nesting accepted (and/or/xor chains count as one level)."""

MAX_QUERY_LENGTH = 100_000
"""Longest query text accepted, in characters (parsing costs time linear in it)."""

KEYWORDS = ["and", "or", "xor", "not", "mod", "true", "false", "TRUE", "FALSE", "True", "False"]
FUNCTIONS = ["match", "max", "min", "int", "float"]

_TERM_DESCR = {
    "OR": "'or'",
    "XOR": "'xor'",
    "AND": "'and'",
    "NOT": "'not'",
    "MOD": "'mod'",
    "CMP": "a comparison (== != <> < <= > >=)",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "TILDE": "'~'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "$END": "end of query",
}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = resources.files("legionrm.mil").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=False, maybe_placeholders=False)


# Line breaks as str.splitlines() sees them, so that the line and column an
# error names are those of the line its caret message prints (a form feed or
# a vertical tab is whitespace in MIL, and starts a new line there).
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


@lru_cache(maxsize=16)
def _line_starts(text: str) -> tuple[int, ...]:
    """Offsets at which the lines of ``text`` start (computed once per text)."""
    return (0, *(m.end() for m in _LINE_BREAK.finditer(text)))


def _line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based (line, column) of character offset ``pos`` in ``text``."""
    starts = _line_starts(text)
    k = bisect_right(starts, pos) - 1
    return k + 1, pos - starts[k] + 1


def _span(text: str, start: int, end: int) -> Span:
    line, col = _line_col(text, start)
    return Span(start, end, line, col)


def _fail(text: str, pos: int, message: str, expected: tuple[str, ...] = ()) -> MILSyntaxError:
    line, col = _line_col(text, pos)
    return MILSyntaxError(message, text=text, line=line, column=col, expected=expected)


_ORDER = ["OR", "XOR", "AND", "CMP", "PLUS", "MINUS", "STAR", "SLASH", "MOD", "COMMA", "RPAR", "$END"]


def _open_parens(text: str, pos: int) -> int:
    """How many parentheses are open at ``pos`` (string literals skipped)."""
    depth, k, in_str = 0, 0, False
    while k < min(pos, len(text)):
        ch = text[k]
        if in_str:
            if ch == "\\":
                k += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        k += 1
    return depth


def _describe_expected(names: set[str], text: str, pos: int) -> tuple[str, ...]:
    names = set(names)
    if _open_parens(text, pos) == 0:  # LALR states are shared: drop what cannot close here
        names -= {"COMMA", "RPAR"}
    out: list[str] = []
    if names & {"INT", "FLOAT", "STRING", "TRUE", "FALSE", "ATTR", "LPAR", "FUNC1", "FUNC2"}:
        out.append("an expression")
    for n in _ORDER:
        if n in names and not (n == "MINUS" and out[:1] == ["an expression"]):
            out.append(_TERM_DESCR[n])
    return tuple(out)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _describe_at(text: str, pos: int) -> str:
    """What sits at ``pos``, in words, for an 'unexpected ...' message."""
    if pos >= len(text):
        return "end of query"
    ch = text[pos]
    if ch == '"':
        return "unterminated string constant"
    m = _WORD.match(text, pos)
    if m:
        w = m.group(0)
        if w.lower() in KEYWORDS or w.lower() in FUNCTIONS:
            return f"unexpected word {w!r} (MIL keywords and functions are lowercase)"
        return f"unexpected word {w!r} (attributes are written ${w})"
    if ch == "$":
        return "'$' must be followed by an attribute name ([A-Za-z_][A-Za-z0-9_]*)"
    return f"unexpected character {ch!r}"


def parse(text: str) -> Query:
    """Parse a MIL query.  Raises MILSyntaxError (never anything else)."""
    if not isinstance(text, str):
        raise MILSyntaxError(f"a query is text, not {type(text).__name__}")
    if not text.strip():
        raise _fail(text, len(text), "empty query", ("an expression",))
    if len(text) > MAX_QUERY_LENGTH:
        # no text, so no caret: the message would print the whole over-long line
        raise MILSyntaxError(f"query is {len(text)} characters long; the limit is {MAX_QUERY_LENGTH}")
    try:
        tree = _lark().parse(text)
    except UnexpectedCharacters as e:
        pos = e.pos_in_stream if e.pos_in_stream is not None else 0
        raise _fail(text, pos, _describe_at(text, pos), _describe_expected(set(e.allowed or ()), text, pos)) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            # just after the last token, so that the caret sits on a line the
            # message prints (not on the empty line after a trailing newline)
            pos = len(text.rstrip(" \t\r\n\f\v"))
            msg = "query ends too early"
        else:
            pos = tok.start_pos if tok.start_pos is not None else 0
            msg = f"unexpected {_token_words(tok)}"
            if tok.type == "CMP" and "CMP" not in (e.expected or ()):
                msg += " (comparisons do not chain: write a < b and b < c)"
        raise _fail(text, pos, msg, _describe_expected(set(e.expected or ()), text, pos)) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark input errors
        pos = getattr(e, "pos_in_stream", 0) or 0
        raise _fail(text, pos, "malformed query") from None
    except (LarkError, RecursionError) as e:  # pragma: no cover - defensive
        raise _fail(text, 0, f"malformed query ({type(e).__name__})") from None
    root = _build(text, tree.children[0])
    return Query(text=text, root=root, attributes=frozenset(_attributes(root)))


def _token_words(tok: Token) -> str:
    if tok.type in ("INT", "FLOAT"):
        return f"number {tok.value}"
    if tok.type == "STRING":
        return f"string {tok.value}"
    if tok.type == "ATTR":
        return f"attribute {tok.value}"
    if tok.type in ("TRUE", "FALSE", "FUNC1", "FUNC2") or tok.type in _TERM_DESCR:
        return f"{tok.value!r}"
    return repr(tok.value)


def _attributes(root: Node) -> set[str]:
    out: set[str] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if isinstance(n, Attr):
            out.add(n.name)
        stack.extend(children(n))
    return out


# --- literals -------------------------------------------------------------------

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


def _int_literal(text: str, tok: Token) -> int:
    s = tok.value
    start = cast(int, tok.start_pos)  # lark types it Optional; this lexer always sets it
    octal = len(s) > 1 and s[0] == "0"  # octal, as in C: 0[0-7]*
    if octal:
        for k, ch in enumerate(s):
            if ch in "89":
                raise _fail(text, start + k, f"digit {ch!r} in octal constant {s}", ("an octal digit 0-7",))
    # 2**63 - 1 has 19 decimal and 21 octal digits: anything longer cannot fit,
    # and is refused before int() (which refuses strings of over 4300 digits).
    if len(s.lstrip("0")) > (21 if octal else 19) or (v := int(s, 8 if octal else 10)) > 2**63 - 1:
        shown = s if len(s) <= 40 else f"{s[:20]}...{s[-8:]} ({len(s)} digits)"
        raise _fail(text, start, f"integer constant {shown} does not fit in 64 bits")
    return v


def _string_literal(text: str, tok: Token) -> str:
    """The value of a string constant: ``\\"`` ``\\\\`` ``\\n`` ``\\t`` are escapes;
    any other backslash stays as written, so that a regular expression reads
    as it would anywhere else (``match("\\d+\\.edu$", $host)``)."""
    body = tok.value[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    k = 0
    while k < len(body):
        ch = body[k]
        if ch == "\\":
            nxt = body[k + 1]  # the lexer guarantees a character after a backslash
            out.append(_ESCAPES.get(nxt, ch + nxt))
            k += 2
        else:
            out.append(ch)
            k += 1
    return "".join(out)


def _float_literal(text: str, tok: Token) -> float:
    return float(tok.value)  # Python's float() accepts exactly these spellings


# --- tree -> nodes (iterative) -------------------------------------------------------


def _first_pos(item: Tree | Token | Node) -> int:
    if isinstance(item, Token):
        return cast(int, item.start_pos)  # lark types it Optional; this lexer always sets it
    return item.span.start  # type: ignore[union-attr]


def _last_pos(item: Tree | Token | Node) -> int:
    if isinstance(item, Token):
        return cast(int, item.end_pos)
    return item.span.end  # type: ignore[union-attr]


def _build(text: str, top: Tree | Token) -> Node:
    """Convert the lark tree bottom-up with an explicit stack."""
    done: dict[int, tuple[Node, int]] = {}  # id(tree) -> (node, depth)
    parens: set[int] = set()  # ids of nodes written in parentheses
    stack: list[tuple[Tree | Token, bool]] = [(top, False)]
    while stack:
        item, expanded = stack.pop()
        if isinstance(item, Tree) and not expanded:
            stack.append((item, True))
            for c in item.children:
                if isinstance(c, Tree):
                    stack.append((c, False))
            continue
        if isinstance(item, Token):  # a bare token as the whole tree cannot happen
            raise _fail(text, item.start_pos or 0, "malformed query")
        kids: list[Token | Node] = []
        depth = 0
        for c in item.children:
            if isinstance(c, Tree):
                node, d = done.pop(id(c))
                kids.append(node)
                depth = max(depth, d)
            else:
                kids.append(c)
        if item.data == "paren":
            # The node keeps its own kind but its span covers the parentheses,
            # so explanations quote "(a or b)" and chains do not absorb it.
            # children: "(" expr ")" -- the tokens' positions are always set by this lexer
            inner, lpar, rpar = cast(Node, kids[1]), cast(Token, kids[0]), cast(Token, kids[-1])
            node = dataclasses.replace(inner, span=_span(text, cast(int, lpar.start_pos), cast(int, rpar.end_pos)))
            parens.add(id(node))
        else:
            node = _make(text, item.data, kids, parens)
        if isinstance(node, Logic) or item.data == "paren":
            nd = depth  # flattened chains and parentheses add no depth of their own
        else:
            nd = depth + 1
        if nd > MAX_DEPTH:
            raise _fail(text, node.span.start, f"query nested more than {MAX_DEPTH} levels deep")
        done[id(item)] = (node, nd)
    return done[id(top)][0]


def _make(text: str, rule: str, kids: list, parens: set[int]) -> Node:
    span = _span(text, _first_pos(kids[0]), _last_pos(kids[-1]))
    if rule == "int_const":
        return Const(_int_literal(text, kids[0]), span)
    if rule == "float_const":
        return Const(_float_literal(text, kids[0]), span)
    if rule == "string_const":
        return Const(_string_literal(text, kids[0]), span)
    if rule == "bool_const":
        return Const(kids[0].type == "TRUE", span)
    if rule == "attr":
        return Attr(kids[0].value[1:], span)
    if rule == "unary":
        op = kids[0].value
        return Unary("not" if op == "not" else op, kids[1], span)
    if rule == "binary":
        op = kids[1].value
        op = "!=" if op == "<>" else op
        return Binary(op, kids[0], kids[2], span)
    if rule == "logic":
        op = kids[1].value
        left, right = kids[0], kids[2]
        flat = isinstance(left, Logic) and left.op == op and id(left) not in parens
        ops = left.operands if flat else (left,)
        return Logic(op, (*ops, right), span)
    if rule == "call":
        name = kids[0].value
        args = tuple(k for k in kids[1:] if not isinstance(k, Token))
        return Call(name, args, span)
    raise _fail(text, span.start, f"internal: unknown rule {rule}")  # pragma: no cover
