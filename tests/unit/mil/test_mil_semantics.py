"""MIL semantics, one table row per rule of legionrm.mil's docstring, checked in
both engines: the per-record reference and the vectorized engine (on a table
where the row's columns are uniform, and on one where they are mixed)."""

from __future__ import annotations

import math

import pytest

from legionrm.mil import (
    ERROR,
    UNDEFINED,
    StaticTable,
    compile_query,
    format_value,
    same_value,
)

NAN = math.nan
I64MIN, I64MAX = -(2**63), 2**63 - 1
E = ERROR
U = UNDEFINED

# (id, query, record, expected value)
CASES = [
    # --- arithmetic: int op int -> int, C division and remainder
    ("div-trunc-pos", "$a / $b", {"a": 7, "b": 2}, 3),
    ("div-trunc-neg-dividend", "$a / $b", {"a": -7, "b": 2}, -3),
    ("div-trunc-neg-divisor", "$a / $b", {"a": 7, "b": -2}, -3),
    ("div-trunc-both-neg", "$a / $b", {"a": -7, "b": -2}, 3),
    ("div-exact-neg", "$a / $b", {"a": -8, "b": 2}, -4),
    ("mod-pos", "$a mod $b", {"a": 7, "b": 3}, 1),
    ("mod-sign-of-dividend", "$a mod $b", {"a": -7, "b": 3}, -1),
    ("mod-neg-divisor", "$a mod $b", {"a": 7, "b": -3}, 1),
    ("mod-both-neg", "$a mod $b", {"a": -7, "b": -3}, -1),
    ("int-plus-int-is-int", "$a + $b", {"a": 1, "b": 2}, 3),
    ("float-operand-gives-float", "$a + $b", {"a": 1, "b": 2.0}, 3.0),
    ("float-div", "$a / $b", {"a": 7.0, "b": 2}, 3.5),
    ("float-mod-is-fmod", "$a mod $b", {"a": -7.5, "b": 2}, -1.5),
    ("float-times", "$a * $b", {"a": 1.5, "b": 4}, 6.0),
    ("div-by-zero-int", "$a / $b", {"a": 5, "b": 0}, E),
    ("mod-by-zero-int", "$a mod $b", {"a": 5, "b": 0}, E),
    ("div-by-zero-float", "$a / $b", {"a": 5, "b": 0.0}, E),
    ("mod-by-zero-float", "$a mod $b", {"a": 5.5, "b": 0}, E),
    ("div-zero-by-zero", "$a / $b", {"a": 0.0, "b": -0.0}, E),
    # --- 64-bit wrap, like C int64, in both engines
    ("wrap-add", "$a + 1", {"a": I64MAX}, I64MIN),
    ("wrap-sub", "$a - 2", {"a": I64MIN + 1}, I64MAX),
    ("wrap-mul", "$a * 2", {"a": 2**62}, I64MIN),
    ("wrap-div-min-by-minus-one", "$a / $b", {"a": I64MIN, "b": -1}, I64MIN),
    ("mod-min-by-minus-one", "$a mod $b", {"a": I64MIN, "b": -1}, 0),
    ("wrap-neg-min", "-$a", {"a": I64MIN}, I64MIN),
    ("literal-wrap", "9223372036854775807 + 1", {}, I64MIN),
    ("float-overflow-is-inf", "$a * $a", {"a": 1e200}, math.inf),
    # --- unary
    ("neg-int", "-$a", {"a": 5}, -5),
    ("neg-float", "-$a", {"a": 2.5}, -2.5),
    ("neg-bool-is-int", "-$a", {"a": True}, -1),
    ("neg-string-error", "-$a", {"a": "x"}, E),
    ("bitnot-int", "~$a", {"a": 5}, -6),
    ("bitnot-bool", "~$a", {"a": True}, -2),
    ("bitnot-float-error", "~$a", {"a": 1.5}, E),
    ("bitnot-string-error", "~$a", {"a": "x"}, E),
    ("neg-undefined", "-$a", {}, U),
    # --- bools are 0/1 numbers
    ("bool-plus-int", "$a + 1", {"a": True}, 2),
    ("bool-eq-one", "$a == 1", {"a": True}, True),
    ("bool-eq-bool", "$a == false", {"a": False}, True),
    ("bool-lt", "$a < true", {"a": False}, True),
    # --- strictness: error wins over undefined; string operand is error
    ("string-plus-int", "$a + 1", {"a": "x"}, E),
    ("string-plus-string", "$a + $b", {"a": "x", "b": "y"}, E),
    ("undefined-plus-int", "$a + 1", {}, U),
    ("string-plus-undefined", "$a + $b", {"a": "x"}, U),
    ("error-plus-undefined", "(1 / 0) + $b", {}, E),
    ("undefined-plus-error", "$b + (1 / 0)", {}, E),
    # --- comparisons
    ("int-eq-float", "$a == $b", {"a": 1, "b": 1.0}, True),
    ("int-lt-float", "$a < $b", {"a": 2, "b": 2.5}, True),
    ("int-vs-float-as-c-double", "$a == $b", {"a": 2**53 + 1, "b": float(2**53)}, True),
    ("big-int-exact", "$a > $b", {"a": 2**62 + 1, "b": 2**62}, True),
    ("string-lt", "$a < $b", {"a": "abc", "b": "abd"}, True),
    ("string-code-point-order", "$a < $b", {"a": "B", "b": "a"}, True),
    ("string-case-sensitive", "$a == $b", {"a": "a", "b": "A"}, False),
    ("string-ge-literal", '$a >= "m"', {"a": "zeta"}, True),
    ("string-le-literal-left", '"m" <= $a', {"a": "alpha"}, False),
    ("string-ne-diamond", '$a <> "x"', {"a": "y"}, True),
    ("string-vs-int-error", "$a == $b", {"a": "1", "b": 1}, E),
    ("string-vs-bool-error", "$a == $b", {"a": "true", "b": True}, E),
    ("string-vs-float-lt-error", "$a < $b", {"a": "x", "b": 1.5}, E),
    ("undefined-eq", "$a == 1", {}, U),
    ("undefined-ne", "$a != 1", {}, U),
    ("undefined-eq-undefined", "$a == $b", {}, U),
    ("error-eq-undefined", "(1 / 0) == $a", {}, E),
    ("nan-eq-nan", "$a == $a", {"a": NAN}, False),
    ("nan-ne-nan", "$a != $a", {"a": NAN}, True),
    ("nan-lt", "$a < 1", {"a": NAN}, False),
    # --- three-valued logic
    ("false-and-undefined", "false and $u", {}, False),
    ("undefined-and-false", "$u and false", {}, False),
    ("true-and-undefined", "true and $u", {}, U),
    ("true-or-undefined", "true or $u", {}, True),
    ("undefined-or-true", "$u or true", {}, True),
    ("false-or-undefined", "false or $u", {}, U),
    ("error-and-false", "(1 / 0) and false", {}, False),
    ("error-or-true", "(1 / 0) or true", {}, True),
    ("true-and-error", "true and (1 / 0)", {}, E),
    ("undefined-and-error", "$u and (1 / 0)", {}, E),
    ("undefined-or-error", "$u or (1 / 0)", {}, E),
    ("not-undefined", "not $u", {}, U),
    ("not-error", "not (1 / 0)", {}, E),
    ("xor-known", "true xor false", {}, True),
    ("xor-undefined", "true xor $u", {}, U),
    ("xor-error", "false xor (1 / 0)", {}, E),
    ("chain-left-fold", "$u and true and false", {}, False),
    # --- numbers and strings in boolean positions
    ("nonzero-int-true", "$a and true", {"a": 5}, True),
    ("zero-int-false", "$a or false", {"a": 0}, False),
    ("zero-float-false", "$a and true", {"a": 0.0}, False),
    ("nan-is-nonzero", "$a and true", {"a": NAN}, True),
    ("not-number", "not $a", {"a": 2}, False),
    ("not-zero-float", "not $a", {"a": 0.0}, True),
    ("string-in-bool-position", "$a and true", {"a": "yes"}, E),
    ("false-and-string", "false and $a", {"a": "yes"}, False),
    ("not-string", "not $a", {"a": "yes"}, E),
    # --- match
    ("match-search-not-fullmatch", 'match("b", $s)', {"s": "abc"}, True),
    ("match-anchored", 'match("^b", $s)', {"s": "abc"}, False),
    ("match-case-sensitive", 'match("B", $s)', {"s": "abc"}, False),
    ("match-pattern-attr", "match($p, $s)", {"p": "c$", "s": "abc"}, True),
    ("match-bad-runtime-regex", "match($p, $s)", {"p": "(", "s": "abc"}, E),
    ("match-number-pattern", 'match($p, "x")', {"p": 1}, E),
    ("match-number-subject", 'match("1", $s)', {"s": 1}, E),
    ("match-undefined", 'match("a", $s)', {}, U),
    ("match-literal-subject", 'match($p, "linux")', {"p": "^lin"}, True),
    # --- max / min
    ("max-int", "max($a, $b)", {"a": 3, "b": 4}, 4),
    ("max-mixed-is-float", "max($a, $b)", {"a": 3, "b": 2.5}, 3.0),
    ("min-mixed", "min($a, $b)", {"a": 1, "b": 2.5}, 1.0),
    ("min-bool-is-int", "min($a, 5)", {"a": True}, 1),
    ("max-string-error", "max($a, 1)", {"a": "x"}, E),
    ("max-undefined", "max($a, 1)", {}, U),
    ("max-nan", "max($a, 1.0)", {"a": NAN}, NAN),
    ("min-nan-second", "min(1.0, $a)", {"a": NAN}, NAN),
    # --- int() / float()
    ("int-trunc-pos", "int($a)", {"a": 2.9}, 2),
    ("int-trunc-neg", "int($a)", {"a": -2.9}, -2),
    ("int-of-int", "int($a)", {"a": 7}, 7),
    ("int-of-bool", "int($a)", {"a": True}, 1),
    ("int-parse", "int($a)", {"a": "42"}, 42),
    ("int-parse-spaces", "int($a)", {"a": " -42 "}, -42),
    ("int-parse-float-text", "int($a)", {"a": "3.7"}, 3),
    ("int-parse-exp", "int($a)", {"a": "-1e3"}, -1000),
    ("int-parse-not-number", "int($a)", {"a": "abc"}, E),
    ("int-parse-underscore", "int($a)", {"a": "1_000"}, E),
    ("int-parse-unicode-digit", "int($a)", {"a": "\u0663"}, E),
    ("int-parse-too-big", "int($a)", {"a": "9223372036854775808"}, E),
    ("int-of-huge-float", "int($a)", {"a": 1e300}, E),
    ("int-of-literal-beyond-int64", 'int("1e19") + 0 * $a', {"a": 1}, E),
    ("int-of-literal-float-beyond-int64", "int(1e19) + 0 * $a", {"a": 1}, E),
    ("int-of-nan", "int($a)", {"a": NAN}, E),
    ("int-of-inf", "int($a)", {"a": math.inf}, E),
    ("int-undefined", "int($a)", {}, U),
    ("float-of-int", "float($a)", {"a": 2}, 2.0),
    ("float-of-bool", "float($a)", {"a": False}, 0.0),
    ("float-parse", "float($a)", {"a": "2.5"}, 2.5),
    ("float-parse-int-text", "float($a)", {"a": "7"}, 7.0),
    ("float-parse-bad", "float($a)", {"a": "x1"}, E),
    ("float-parse-inf-word", "float($a)", {"a": "inf"}, E),
    ("float-undefined", "float($a)", {}, U),
    # --- a whole query's value
    ("bare-attr-number", "$a", {"a": 5}, 5),
    ("bare-literal", "2.5", {}, 2.5),
    ("octal-in-arith", "010 + $a", {"a": 1}, 9),
]

FILLER = [{"a": "zz", "b": 1.25, "s": 7, "p": True, "u": 3}, {"a": 1, "b": "q", "s": None, "p": "x"}, {}]


def _vector_value(query: str, rows: list[dict]) -> object:
    table = StaticTable.from_records(rows)
    col = compile_query(query).values(table)
    return col.value(0, table.strings.strings)


@pytest.mark.parametrize("query,record,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_semantics_both_engines(query: str, record: dict, expected: object) -> None:
    q = compile_query(query)
    ref = q.evaluate(record)
    assert same_value(ref, expected), f"reference: {format_value(ref)} != {format_value(expected)}"
    alone = _vector_value(query, [record])
    assert same_value(alone, expected), f"vectorized (uniform): {format_value(alone)}"
    mixed = _vector_value(query, [record, *FILLER])
    assert same_value(mixed, expected), f"vectorized (mixed): {format_value(mixed)}"
    # matching is "exactly true in a boolean position" in both engines
    want_match = expected is True or (type(expected) in (int, float) and expected != 0)
    assert q.matches(record) is want_match
    assert bool(q.mask(StaticTable.from_records([record, *FILLER]))[0]) is want_match


MATCHES = [
    ("number-nonzero-matches", "$a", {"a": 5}, True),
    ("number-zero-no-match", "$a", {"a": 0}, False),
    ("string-never-matches", "$a", {"a": "yes"}, False),
    ("undefined-never-matches", "$a > 1", {}, False),
    ("error-never-matches", "$a > 1", {"a": "x"}, False),
    ("not-undefined-no-match", "not ($a > 1)", {}, False),
]


@pytest.mark.parametrize("query,record,expected", [c[1:] for c in MATCHES], ids=[c[0] for c in MATCHES])
def test_match_only_exactly_true(query: str, record: dict, expected: bool) -> None:
    q = compile_query(query)
    assert q.matches(record) is expected
    assert bool(q.mask(StaticTable.from_records([record]))[0]) is expected


def test_missing_key_and_none_are_undefined() -> None:
    q = compile_query("$a")
    assert q.evaluate({}) is UNDEFINED and q.evaluate({"a": None}) is UNDEFINED


def test_explain_clause_by_clause() -> None:
    q = compile_query('$cpus >= 4 and ($os == "linux" or not $busy)')
    ex = q.explain({"cpus": 8, "os": "bsd"})
    assert [(c.text, c.kind, c.depth) for c in ex] == [
        ('$cpus >= 4 and ($os == "linux" or not $busy)', "and", 0),
        ("$cpus >= 4", "clause", 1),
        ('($os == "linux" or not $busy)', "or", 1),
        ('$os == "linux"', "clause", 2),
        ("not $busy", "not", 2),
        ("$busy", "clause", 3),
    ]
    assert [format_value(c.value) for c in ex] == ["undefined", "true", "undefined", "false", "undefined", "undefined"]
    assert [c.matches for c in ex] == [False, True, False, False, False, False]
    assert "=>" in ex[0].render()


def test_mask_is_per_row_and_fresh() -> None:
    rows = [{"x": 4}, {"x": "big"}, {}, {"x": 7.5}, {"x": True}]
    t = StaticTable.from_records(rows)
    m = compile_query("$x > 3").mask(t)
    assert m.tolist() == [True, False, False, True, False]
    m[:] = True  # the caller owns it
    assert compile_query("$x > 3").mask(t).tolist() == [True, False, False, True, False]
    assert compile_query("true").mask(t).tolist() == [True] * 5
    assert compile_query("$nope == 1").mask(t).tolist() == [False] * 5
