"""PBS select / place requests: the syntax, the pydantic models, the values.

A request is a list of chunks (``2:ncpus=12:mem=16gb+1:ncpus=6:color=red``)
and a place spec (``scatter:excl``, ``free``, ``pack:shared:group=switch``).
:func:`parse_select`, :func:`parse_place` and :func:`parse_request` read the
text with the lark grammar in ``select.lark``; a request that does not parse
raises :class:`~legionrm.errors.SelectSyntaxError` with a caret under the
offending character.  The same request can be built directly from the
models (``SelectRequest(chunks=(Chunk(count=2, resources={"ncpus": 12}),),
place=Place(arrangement="scatter", sharing="excl"))``) or from an
:class:`~legionrm.models.ObjectRequest` (:meth:`SelectRequest.from_object`).

Values are typed the way PBS writes them: ``true``/``false`` (any case) are
booleans, digits are numbers, digits with ``b kb mb gb tb pb`` (any case) are
sizes (kept as written in the model; :func:`classify` turns them into
kilobytes, rounding up), anything else is a string.  Quote a string that
looks like a number (``color="12"``).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Union, cast

from lark import Lark, Token, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

from legionrm.errors import SelectSyntaxError
from legionrm.models import ObjectRequest

ResValue = Union[bool, int, float, str]
"""A requested value as written: bool, number, or string (sizes stay strings like ``"16gb"``)."""

ParseTree = Any
"""A select.lark tree as the walkers read it: lark types each child ``Token | Tree``
and each position optional, but the grammar fixes which each child is and the
LALR lexer sets every token's line and column; the checker cannot see that."""

Arrangement = Literal["pack", "scatter", "vscatter", "free"]
Sharing = Literal["excl", "exclhost", "shared"]

ARRANGEMENTS: tuple[str, ...] = ("pack", "scatter", "vscatter", "free")
SHARINGS: tuple[str, ...] = ("excl", "exclhost", "shared")

# --- values -------------------------------------------------------------------

_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(b|kb|mb|gb|tb|pb)$", re.IGNORECASE)
_INT_RE = re.compile(r"^[0-9]+$")
_FLOAT_RE = re.compile(r"^(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_UNIT_SHIFT = {"b": -1, "kb": 0, "mb": 1, "gb": 2, "tb": 3, "pb": 4}
_UNITS_DESC = (("pb", 4), ("tb", 3), ("gb", 2), ("mb", 1), ("kb", 0))
MAX_CHUNKS = 100_000
"""The most chunks one select may ask for (counts summed)."""
MAX_VALUE = 1e18
"""The largest number (or size, in kb) a select value may be."""


class Size(float):
    """A size in kilobytes (PBS keeps sizes in kb; ``1gb`` is ``Size(1048576)``)."""

    def __repr__(self) -> str:
        return f"Size({float(self):g}kb)"


def size_kb(text: str) -> Size | None:
    """``"16gb"`` -> ``Size(16777216)``; None when ``text`` is not a size.  Rounds up to whole kb."""
    m = _SIZE_RE.match(text.strip())
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2).lower()
    shift = _UNIT_SHIFT[unit]
    kb = number / 1024 if shift < 0 else number * (1024**shift)
    if not math.isfinite(kb):
        return Size(kb)  # callers bound sizes (MAX_VALUE); math.ceil(inf) would raise
    return Size(math.ceil(kb - 1e-9))


def classify(value: object) -> object:
    """Normalize a written value: sizes -> :class:`Size` (kb), ints/floats stay,
    bools stay, lists -> tuple of str (a string array), other strings stay."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    if isinstance(value, str):
        size = size_kb(value)
        return size if size is not None else value
    raise TypeError(f"unsupported resource value {value!r}")


def format_size(kb: float) -> str:
    """kb -> the largest unit that divides it exactly (``16777216`` -> ``16gb``)."""
    k = int(math.ceil(kb))
    for unit, shift in _UNITS_DESC:
        div = 1024**shift
        if k and k % div == 0:
            return f"{k // div}{unit}"
    return f"{k}kb"


def format_value(value: object) -> str:
    """A value as PBS prints it in comments (sizes in their largest exact unit)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, Size):
        return format_size(value)
    if isinstance(value, float):
        return f"{value:g}" if value != int(value) else str(int(value))
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def exec_amount(value: object) -> str:
    """A value as exec_vnode writes it: sizes in kb (``1048576kb``), whole numbers without a point."""
    if isinstance(value, Size):
        return f"{int(math.ceil(value))}kb"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def _typed_literal(text: str) -> ResValue:
    """Type a bare (unquoted) value the way the select syntax writes it."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if _INT_RE.match(text):
        return int(text)
    if _FLOAT_RE.match(text):
        return float(text)
    return text


def _bounded_literal(raw: str, text: str, tok: ParseTree) -> ResValue:
    """:func:`_typed_literal`, refusing (with a caret) a number or size past
    :data:`MAX_VALUE` or not finite, before any ``int()`` of a huge digit string."""
    m = _SIZE_RE.match(raw.strip())
    digits = m.group(1) if m else raw
    if (m or _INT_RE.match(raw) or _FLOAT_RE.match(raw)) and len(digits) > 40:
        raise _error(f"number too large (at most {MAX_VALUE:g})", text, tok.line, tok.column)
    value = _typed_literal(raw)
    number = size_kb(raw) if m else value
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        if not math.isfinite(number) or abs(number) > MAX_VALUE:
            raise _error(f"number too large (at most {MAX_VALUE:g})", text, tok.line, tok.column)
    return value


# --- models -----------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Chunk(_Frozen):
    """``count`` identical chunks, each asking for ``resources`` on one host.

    Resource order is kept: it decides which mismatch a refusal names first
    and the order of resources in exec_vnode.
    """

    count: int = Field(1, ge=1)
    resources: dict[str, ResValue] = Field(default_factory=dict)

    @field_validator("resources")
    @classmethod
    def _check(cls, value: dict[str, ResValue]) -> dict[str, ResValue]:
        for name in value:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_.\-]*$", name):
                raise ValueError(f"bad resource name {name!r}")
        return value

    def text(self) -> str:
        """The chunk in select syntax (``2:ncpus=12:mem=16gb``)."""
        parts = [str(self.count)]
        for k, v in self.resources.items():
            if isinstance(v, bool):
                s = "True" if v else "False"
            elif isinstance(v, str) and (
                _typed_literal(v) != v or re.search(r"[\s:+='\"]", v) or v == ""
            ) and size_kb(v) is None:
                s = f'"{v}"'
            else:
                s = str(v)
            parts.append(f"{k}={s}")
        return ":".join(parts)


class Place(_Frozen):
    """The place spec: arrangement, sharing and an optional grouping resource."""

    arrangement: Arrangement = "free"
    sharing: Sharing | None = None
    group: str | None = None

    @property
    def excl(self) -> bool:
        """True for ``excl`` and ``exclhost`` (exclhost implies excl)."""
        return self.sharing in ("excl", "exclhost")

    def text(self) -> str:
        parts: list[str] = [self.arrangement]
        if self.sharing:
            parts.append(self.sharing)
        if self.group:
            parts.append(f"group={self.group}")
        return ":".join(parts)


class SelectRequest(_Frozen):
    """A whole request: chunks in select order plus the place spec."""

    chunks: tuple[Chunk, ...] = Field(min_length=1)
    place: Place = Place()

    @property
    def total_chunks(self) -> int:
        return sum(c.count for c in self.chunks)

    def select_text(self) -> str:
        return "+".join(c.text() for c in self.chunks)

    def text(self) -> str:
        return f"select={self.select_text()} place={self.place.text()}"

    def requests_resource(self, name: str) -> bool:
        return any(name in c.resources for c in self.chunks)

    @classmethod
    def parse(cls, select: str, place: str | None = None) -> "SelectRequest":
        """Build from a select string and an optional place string (both PBS syntax)."""
        chunks = parse_select(select)
        return cls(chunks=chunks, place=parse_place(place) if place else Place())

    @classmethod
    def from_object(cls, obj: ObjectRequest) -> "SelectRequest":
        """The request an :class:`ObjectRequest` stands for: ``count`` chunks of
        ncpus / mem (kb) / ngpus, its placement, and ``excl`` when exclusive.
        An exclusive instance holds its host alone (its reservation is the
        whole host), so exclusive ``free`` placement is ``scatter``: one
        chunk per host (``free:excl`` would pack chunks of one job onto a
        host).  The MIL constraint is not a select resource and is left to
        the caller."""
        res: dict[str, ResValue] = {}
        cpus = obj.cpus
        res["ncpus"] = int(cpus) if float(cpus).is_integer() else cpus
        if obj.memory_gb:
            res["mem"] = f"{math.ceil(obj.memory_gb * 1048576)}kb"
        if obj.gpus:
            res["ngpus"] = obj.gpus
        arrangement = "scatter" if obj.exclusive and obj.placement == "free" else obj.placement
        place = Place(arrangement=arrangement, sharing="excl" if obj.exclusive else None)
        return cls(chunks=(Chunk(count=obj.count, resources=res),), place=place)


# --- parsing ------------------------------------------------------------------

_FRIENDLY = {
    "COUNT": "a chunk count",
    "NAME": "a resource name",
    "WORD": "a place keyword",
    "VALUE": "a value",
    "QUOTED": "a quoted string",
    "COLON": "':'",
    "PLUS": "'+'",
    "EQUAL": "'='",
    "LFLAG": "'-l'",
    "SELECT_KW": "'select'",
    "PLACE_KW": "'place'",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("select.lark")).read_text()
    return Lark(grammar, start=["select", "place", "request"], parser="lalr", lexer="contextual")


def _pos(text: str, token: Token | None) -> tuple[int, int]:
    if token is None or getattr(token, "line", None) is None:
        lines = text.splitlines() or [""]
        return len(lines), len(lines[-1]) + 1
    return cast(int, token.line), cast(int, token.column)


def _error(message: str, text: str, line: int, column: int, expected: tuple[str, ...] = ()) -> SelectSyntaxError:
    return SelectSyntaxError(message, text=text, line=line, column=column, expected=expected)


def _lark_error(exc: UnexpectedInput, text: str, what: str) -> SelectSyntaxError:
    expected: set[str] = set()
    if isinstance(exc, UnexpectedToken):
        expected = set(exc.expected)
        if exc.token.type == "$END":
            line, col = _pos(text, None)
            msg = f"unexpected end of {what}"
        else:
            line, col = exc.line, exc.column
            msg = f"unexpected {exc.token.value!r} in {what}"
    elif isinstance(exc, UnexpectedCharacters):
        expected = set(exc.allowed or ())
        line, col = exc.line, exc.column
        msg = f"unexpected character {text.splitlines()[line - 1][col - 1]!r} in {what}"
    elif isinstance(exc, UnexpectedEOF):
        expected = set(exc.expected)
        line, col = _pos(text, None)
        msg = f"unexpected end of {what}"
    else:  # pragma: no cover - lark has no other kinds
        line, col, msg = 1, 1, f"cannot parse {what}"
    names = tuple(sorted({_FRIENDLY.get(e, e.lower()) for e in expected}))
    return _error(msg, text, line, col, names)


def _parse(text: str, start: str, what: str) -> Tree:
    if not text.strip():
        raise _error(f"empty {what}", text, 1, 1)
    try:
        return _parser().parse(text, start=start)
    except UnexpectedInput as exc:
        raise _lark_error(exc, text, what) from None


def _chunks_from(tree: ParseTree, text: str) -> tuple[Chunk, ...]:
    chunks: list[Chunk] = []
    for node in tree.children:
        count = 1
        items = node.children
        if node.data == "counted_chunk":
            tok = items[0]
            count = int(tok) if len(tok) <= 18 else MAX_CHUNKS + 1  # never int() on 5,000 digits
            if count < 1:
                raise _error("a chunk count must be at least 1", text, tok.line, tok.column)
            if count + sum(c.count for c in chunks) > MAX_CHUNKS:
                raise _error(f"more than {MAX_CHUNKS} chunks in one select", text, tok.line, tok.column)
            items = items[1:]
        res: dict[str, ResValue] = {}
        for r in items:
            name_tok, val_tok = r.children
            if name_tok in res:
                raise _error(f"resource {str(name_tok)!r} given twice in one chunk", text, name_tok.line, name_tok.column)
            raw = str(val_tok)
            res[str(name_tok)] = raw[1:-1] if val_tok.type == "QUOTED" else _bounded_literal(raw, text, val_tok)
        chunks.append(Chunk(count=count, resources=res))
    return tuple(chunks)


def _place_from(tree: ParseTree, text: str) -> Place:
    arrangement: str | None = None
    sharing: str | None = None
    group: str | None = None
    for item in tree.children:
        word = item.children[0]
        w = str(word)
        arg = item.children[1] if len(item.children) > 1 else None
        if w == "group":
            if arg is None:
                raise _error("group needs a resource: group=RES", text, word.line, word.column + len(w))
            if group is not None:
                raise _error("group given twice", text, word.line, word.column)
            group = str(arg)
            continue
        if arg is not None:
            raise _error(f"{w!r} takes no value", text, arg.line, arg.column)
        if w in ARRANGEMENTS:
            if arrangement is not None:
                raise _error(f"two arrangements ({arrangement!r} and {w!r})", text, word.line, word.column)
            arrangement = w
        elif w in SHARINGS:
            if sharing is not None:
                raise _error(f"two sharing modes ({sharing!r} and {w!r})", text, word.line, word.column)
            sharing = w
        else:
            raise _error(
                f"unknown place keyword {w!r}", text, word.line, word.column,
                tuple(ARRANGEMENTS + SHARINGS + ("group=RES",)),
            )
    return Place(arrangement=arrangement or "free", sharing=sharing, group=group)


def parse_select(text: str) -> tuple[Chunk, ...]:
    """``"2:ncpus=12:mem=16gb+1:ncpus=6"`` -> chunks.  A leading ``select=`` is allowed.

    Raises SelectSyntaxError (with line, column and a caret) on bad text.
    """
    body = text
    stripped = text.lstrip()
    if stripped.startswith("select="):
        return _chunks_from(_parse(text, "request", "select").children[0].children[-1], text)
    return _chunks_from(_parse(body, "select", "select"), text)


def value_position(text: str, chunk: int, resource: str) -> tuple[int, int]:
    """(line, column) of the value of ``resource`` in chunk ``chunk`` (0-based)
    of a select string that parses; (1, 1) when it is not there (the server's
    default ``ncpus``, say).  Lets a caller put a caret under a value that
    parsed but is of the wrong kind for the hosts."""
    try:
        if text.lstrip().startswith("select="):
            tree = _parse(text, "request", "select").children[0].children[-1]
        else:
            tree = _parse(text, "select", "select")
    except SelectSyntaxError:
        return 1, 1
    nodes = tree.children
    if not 0 <= chunk < len(nodes):
        return 1, 1
    for r in nodes[chunk].children:
        if isinstance(r, Tree):
            name_tok, val_tok = cast("list[Token]", r.children)  # NAME "=" value: two tokens
            if str(name_tok) == resource:
                return cast(int, val_tok.line), cast(int, val_tok.column)
    return 1, 1


def parse_place(text: str) -> Place:
    """``"scatter:excl"`` -> Place.  A leading ``place=`` is allowed."""
    if text.lstrip().startswith("place="):
        return _place_from(_parse(text, "request", "place").children[0].children[-1], text)
    return _place_from(_parse(text, "place", "place"), text)


def parse_request(text: str) -> SelectRequest:
    """``"-l select=2:ncpus=1 -l place=scatter:excl"`` (``-l`` optional) -> SelectRequest."""
    tree = _parse(text, "request", "request")
    chunks: tuple[Chunk, ...] | None = None
    place: Place | None = None
    for item in tree.children:
        kw = next(t for t in item.children if isinstance(t, Token) and t.type in ("SELECT_KW", "PLACE_KW"))
        body = item.children[-1]
        if item.data == "select_item":
            if chunks is not None:
                raise _error("select given twice", text, cast(int, kw.line), cast(int, kw.column))
            chunks = _chunks_from(body, text)
        else:
            if place is not None:
                raise _error("place given twice", text, cast(int, kw.line), cast(int, kw.column))
            place = _place_from(body, text)
    if chunks is None:
        raise _error("a request needs select=...", text, 1, 1, ("'select'",))
    return SelectRequest(chunks=chunks, place=place or Place())
