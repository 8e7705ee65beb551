"""MIL, the MESSIAHS Interface Language: Legion's Collection query language.

The grammar is the Legion 1.6.3 manual's (section 8.2.6), in
``legionrm/mil/grammar.lark``.  The manual gives no precedence or semantics;
legionrm defines them here, once (``docs/mil.md`` says the same for users).

Syntax
    * Precedence, lowest first: ``or``; ``xor``; ``and``; ``not``;
      comparisons ``== != <> < <= > >=`` (non-associative: ``a < b < c`` is
      a syntax error); ``+ -``; ``* / mod``; unary ``- ~``; atoms.  Binary
      operators are left-associative.
    * Keywords and function names are lowercase (``and``, not ``AND``);
      ``true``/``TRUE``/``True`` and ``false``/``FALSE``/``False``.
    * Integers: decimal, or octal when written with a leading ``0``
      (``0[0-7]*``: ``010`` is 8; ``08`` is a syntax error with a caret under
      the 8); a constant must fit in 64 bits (``9223372036854775808`` is a
      syntax error; write ``-9223372036854775807 - 1``).  Floats: ``1.5``,
      ``1.``, ``.5``, ``1e3``, ``1.5e-3`` (decimal, even with a leading 0).
    * Strings: double-quoted, with the escapes ``\\"`` ``\\\\`` ``\\n`` ``\\t``; any
      other backslash is kept as written (``"\\d+"`` is the three characters
      ``\\d+``, the same as ``"\\\\d+"``), so regular expressions read as
      usual.  A raw newline inside a string is a syntax error.
    * Attributes: ``$name`` with ``name`` matching ``[A-Za-z_][A-Za-z0-9_]*``.
    * ``true``, ``false`` and ``match(...)`` may appear anywhere an expression
      may (the manual's grammar admits them only as conditions).

Values
    int (signed 64-bit), float (IEEE double), string, bool, and two more:
    *undefined* (the resource does not export the attribute) and *error* (a
    type clash or a division by zero at run time).  Booleans are the numbers
    1 and 0 wherever a number is needed, as in C (``true + 1`` is 2,
    ``true == 1`` is true).

Operators
    * Arithmetic ``+ - * / mod``: int op int gives int, wrapping on overflow
      like C int64 (in both engines); ``/`` truncates toward zero and ``mod``
      takes the sign of the dividend (C); any float operand makes both float
      (``mod`` is C ``fmod``).  Division or ``mod`` by zero (int or float) is
      error.  A string operand is error.  ``-x`` negates (int wraps); ``~x``
      is bitwise not on ints (and bools); ``~`` on a float or string is error.
    * Comparisons: numbers compare numerically across int and float (an int
      meeting a float is converted to float first, as in C); strings compare
      with strings only, case-sensitively, by code point; a string against a
      number or bool is error.  ``<>`` and ``!=`` are the same.
    * Strictness: an operator or function meeting error gives error; else one
      meeting undefined gives undefined.  So ``$x == 1`` is undefined, not
      false, when ``$x`` is missing (ClassAd ``==``), and ``$x != 1`` is
      undefined too.
    * ``and``, ``or``, ``xor``, ``not`` use three-valued logic with undefined
      and error as "unknown": ``false and unknown`` is false, ``true or
      unknown`` is true, every other mix with an unknown is unknown -- error if
      either side is error, else undefined.  In a boolean position a bool is
      itself, a non-zero number is true (NaN is non-zero), zero is false and a
      string is error.
    * ``match(pattern, subject)``: true when the RE2 regular expression
      ``pattern`` is found anywhere in ``subject`` (a search, not a full
      match), in time linear in the subject (:mod:`legionrm.mil.regex`); both
      must be strings (else error).  RE2 has no backreferences, lookaround,
      atomic groups or possessive quantifiers, writes end-of-text ``\\z``, has
      ASCII ``\\d \\w \\s \\b`` and a ``$`` that matches only at the very end.
      A literal pattern RE2 refuses (or longer than ``MAX_PATTERN_LENGTH``)
      is a compile-time MILTypeError with a caret under it; a pattern from an
      attribute that RE2 refuses is error, as is a subject longer than
      ``MAX_SUBJECT_LENGTH`` or one holding a lone surrogate.  Without the
      ``google-re2`` package every ``match()`` is refused at compile time.
    * ``max(a, b)``, ``min(a, b)``: numbers only; int when both are int (or
      bool), else float; NaN if either is NaN; on a tie the first.
    * ``int(x)``: int as is, bool to 0/1, float truncated toward zero (NaN,
      infinities and values outside int64 are error), a string holding a
      decimal integer or float constant (surrounding whitespace allowed) is
      parsed and truncated; any other string, or one whose integer has more
      digits than int64 holds (``int("1" * 5000)``), is error.  ``float(x)``
      likewise, to float.  Undefined stays undefined.
    * The query: a resource matches only when the whole query's value is
      exactly true in a boolean position (so a bare ``$x`` or ``5`` is a
      query: non-zero is true; undefined and error never match).

Errors before evaluation
    A malformed query raises :class:`~legionrm.errors.MILSyntaxError` (line,
    column, what was expected, caret); a certain type error (``"a" + 1``,
    ``not "x"``, ``"a" == 1``, ``~1.5``, ``int("abc")``, a bad literal regex, a
    string as the whole query) raises :class:`~legionrm.errors.MILTypeError`.
    A value out of range (``int("1e19")``, like ``int(1e19)``) is not a type
    error: it is the error value at run time.

Bounds
    A query longer than ``MAX_QUERY_LENGTH`` characters or nested deeper than
    ``MAX_DEPTH`` is a MILSyntaxError; an integer constant must fit in 64
    bits.  An evaluation over a table (:meth:`CompiledQuery.values`,
    :meth:`CompiledQuery.mask`) or a list of records
    (:meth:`CompiledQuery.evaluate_many`) has a deadline, ``deadline_s``
    seconds (``DEFAULT_DEADLINE_S`` unless the caller names one; None for
    none) on an injectable ``clock``: past it the evaluation stops at its next
    safe point and raises :class:`MILTimeoutError` (a MILError) naming the
    clause it was evaluating, with a caret.

Engines
    :meth:`CompiledQuery.evaluate` (per record, the reference) and
    :meth:`CompiledQuery.mask` (numpy over a :class:`ColumnTable`) implement
    the same rules and are property-tested against each other.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from legionrm.errors import MILError, MILSyntaxError, MILTypeError
from legionrm.mil.columns import Column, ColumnTable, StaticTable, StringDict
from legionrm.mil.deadline import (
    DEFAULT_DEADLINE_S,
    RECORDS_PER_CHECK,
    Clock,
    Deadline,
    MILTimeoutError,
)
from legionrm.mil.evaluate import ClauseExplanation, compile_node, explain
from legionrm.mil.nodes import Query
from legionrm.mil.parser import FUNCTIONS, KEYWORDS, MAX_DEPTH, MAX_QUERY_LENGTH
from legionrm.mil.parser import parse as _parse
from legionrm.mil.regex import MAX_PATTERN_LENGTH, MAX_SUBJECT_LENGTH
from legionrm.mil.typecheck import check
from legionrm.mil.values import ERROR, UNDEFINED, Value, format_value, same_value, truth
from legionrm.mil.vectorize import compile_vector, exactly_true, run

__all__ = [
    "parse",
    "compile_query",
    "CompiledQuery",
    "ClauseExplanation",
    "Column",
    "ColumnTable",
    "StaticTable",
    "StringDict",
    "Query",
    "Value",
    "UNDEFINED",
    "ERROR",
    "KEYWORDS",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_QUERY_LENGTH",
    "MAX_PATTERN_LENGTH",
    "MAX_SUBJECT_LENGTH",
    "DEFAULT_DEADLINE_S",
    "MILError",
    "MILSyntaxError",
    "MILTypeError",
    "MILTimeoutError",
    "format_value",
    "same_value",
]


def parse(text: str) -> Query:
    """Parse and type-check ``text``.  Raises MILSyntaxError or MILTypeError."""
    q = _parse(text)
    check(q)
    return q


class CompiledQuery:
    """A query compiled for both engines.  Immutable and safe to share; get one
    from :func:`compile_query` (cached by text)."""

    __slots__ = ("text", "query", "attributes", "_record_fn", "_vector_fn")

    def __init__(self, query: Query) -> None:
        self.text = query.text
        self.query = query
        self.attributes: frozenset[str] = query.attributes
        self._record_fn = compile_node(query.root)
        self._vector_fn = compile_vector(query.root)

    def evaluate(self, record: Mapping[str, Any]) -> Value:
        """The query's value on one record (a missing key is undefined)."""
        return self._record_fn(record)

    def matches(self, record: Mapping[str, Any]) -> bool:
        """True when the value on ``record`` is exactly true."""
        return truth(self._record_fn(record)) is True

    def evaluate_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        deadline_s: float | None = DEFAULT_DEADLINE_S,
        clock: Clock = time.monotonic,
    ) -> list[Value]:
        """The query's value on each of ``records`` (the reference engine).
        Raises MILTimeoutError once ``deadline_s`` seconds on ``clock`` have
        passed (checked every RECORDS_PER_CHECK records; None: no deadline)."""
        fn = self._record_fn
        if deadline_s is None:
            return [fn(r) for r in records]
        deadline = Deadline(deadline_s, self.text, clock)
        out: list[Value] = []
        for k, r in enumerate(records):
            if k % RECORDS_PER_CHECK == 0 and k:
                deadline.check(None, f"after {k} records")
            out.append(fn(r))
        return out

    def values(
        self, table: ColumnTable, *, deadline_s: float | None = DEFAULT_DEADLINE_S, clock: Clock = time.monotonic
    ) -> Column:
        """The query's value on every row of ``table`` (vectorized engine).
        Raises MILTimeoutError once ``deadline_s`` seconds on ``clock`` have
        passed (checked after every operation and inside loops over distinct
        strings; None: no deadline)."""
        deadline = None if deadline_s is None else Deadline(deadline_s, self.text, clock)
        return run(self._vector_fn, table, deadline)

    def mask(
        self, table: ColumnTable, *, deadline_s: float | None = DEFAULT_DEADLINE_S, clock: Clock = time.monotonic
    ) -> np.ndarray:
        """A fresh bool array, one per row of ``table``: exactly-true rows.
        Raises MILTimeoutError as :meth:`values` does."""
        n = len(table)
        return exactly_true(self.values(table, deadline_s=deadline_s, clock=clock), n)

    def explain(self, record: Mapping[str, Any]) -> list[ClauseExplanation]:
        """The and/or/xor/not skeleton of the query, each part with its value on ``record``."""
        return explain(self.query, record)

    def __repr__(self) -> str:
        return f"CompiledQuery({self.text!r})"


@lru_cache(maxsize=1024)
def _compile_cached(text: str) -> CompiledQuery:
    return CompiledQuery(parse(text))


def compile_query(text: str) -> CompiledQuery:
    """Parse, type-check and compile ``text`` (cached).  Raises only MILError."""
    if not isinstance(text, str):
        raise MILSyntaxError(f"a query is text, not {type(text).__name__}")
    try:
        return _compile_cached(text)
    except MILError:
        raise
    except RecursionError:  # defensive: the parser bounds depth, this should not happen
        raise MILSyntaxError("query nested too deeply", text=text, line=1, column=1) from None
