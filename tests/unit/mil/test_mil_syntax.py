"""MIL syntax: every production of the manual's grammar, precedence, and errors."""

from __future__ import annotations

import pytest

from legionrm.errors import LegionError, MILError, MILSyntaxError, MILTypeError
from legionrm.mil import ERROR, FUNCTIONS, KEYWORDS, StaticTable, compile_query, parse, same_value
from legionrm.mil.nodes import Attr, Binary, Call, Const, Logic, Unary

# (id, query, expected value on the empty record) -- each production of 8.2.6
PRODUCTIONS = [
    ("true-lower", "true", True),
    ("true-upper", "TRUE", True),
    ("true-title", "True", True),
    ("false-lower", "false", False),
    ("false-upper", "FALSE", False),
    ("false-title", "False", False),
    ("eq", "1 == 1", True),
    ("le", "2 <= 1", False),
    ("ge", "2 >= 1", True),
    ("lt", "1 < 2", True),
    ("gt", "1 > 2", False),
    ("ne-diamond", "1 <> 2", True),
    ("ne-bang", "1 != 1", False),
    ("or", "false or true", True),
    ("xor", "true xor true", False),
    ("and", "true and false", False),
    ("not", "not false", True),
    ("match", 'match("b+", "abbbc")', True),
    ("int-const", "42", 42),
    ("oct-const", "010", 8),
    ("oct-zero", "0", 0),
    ("oct-long", "0777", 511),
    ("oct-max", "0777777777777777777777", 2**63 - 1),
    ("oct-many-leading-zeros", "0" * 30 + "10", 8),
    ("int-max", "9223372036854775807", 2**63 - 1),
    ("float-const", "1.5", 1.5),
    ("float-leading-dot", ".5", 0.5),
    ("float-trailing-dot", "2.", 2.0),
    ("float-exp", "1e3", 1000.0),
    ("float-exp-neg", "1.5e-3", 0.0015),
    ("float-exp-upper", "2E+2", 200.0),
    ("float-leading-zero-is-decimal", "010.5", 10.5),
    ("string", '"abc" == "abc"', True),
    ("string-escape-quote", '"a\\"b" == "a\\"b"', True),
    ("attr", "$x", None),  # undefined on the empty record
    ("attr-underscore", "$_a_1", None),
    ("neg", "-3", -3),
    ("bitnot", "~0", -1),
    ("plus", "1 + 2", 3),
    ("minus", "5 - 7", -2),
    ("max", "max(3, 4)", 4),
    ("min", "min(3, 4)", 3),
    ("div", "7 / 2", 3),
    ("mul", "6 * 7", 42),
    ("mod", "7 mod 3", 1),
    ("int", "int(2.9)", 2),
    ("float", "float(2)", 2.0),
    ("parens", "(1 + 2) * 3", 9),
    ("spaces-around-call", "max ( 1 , 2 )", 2),
    ("newlines", "1 ==\n 1", True),
]


@pytest.mark.parametrize("query,expected", [p[1:] for p in PRODUCTIONS], ids=[p[0] for p in PRODUCTIONS])
def test_every_production(query: str, expected: object) -> None:
    from legionrm.mil import UNDEFINED

    want = UNDEFINED if expected is None else expected
    got = compile_query(query).evaluate({})
    assert same_value(got, want) and type(got) is type(want), (got, want)


PRECEDENCE = [
    # (id, query, value): each line of "lowest first: or; xor; and; not; cmp; + -; * / mod; unary"
    ("or-below-xor", "true or true xor true", True),  # true or (true xor true)
    ("xor-below-and", "true xor true and false", True),  # true xor (true and false)
    ("and-below-not", "not false and false", False),  # (not false) and false
    ("not-below-cmp", "not 1 == 2", True),  # not (1 == 2)
    ("cmp-below-add", "1 + 1 == 2", True),
    ("add-below-mul", "2 + 3 * 4", 14),
    ("sub-left-assoc", "10 - 3 - 2", 5),
    ("div-left-assoc", "100 / 10 / 5", 2),
    ("mod-same-level-as-mul", "7 mod 4 * 2", 6),  # (7 mod 4) * 2
    ("unary-above-mul", "-2 * 3", -6),
    ("unary-minus-binds-tighter-than-mod", "-7 mod 3", -1),
    ("bitnot-above-add", "~1 + 1", -1),
    ("double-unary", "- -3", 3),
    ("not-not", "not not true", True),
    ("parens-override", "(true or true) xor true", False),
]


@pytest.mark.parametrize("query,expected", [p[1:] for p in PRECEDENCE], ids=[p[0] for p in PRECEDENCE])
def test_precedence(query: str, expected: object) -> None:
    assert same_value(compile_query(query).evaluate({}), expected)


def test_tree_shape_and_positions() -> None:
    q = parse('$cpu > 4 and not match("x", $os)')
    root = q.root
    assert isinstance(root, Logic) and root.op == "and"
    cmp_, neg = root.operands
    assert isinstance(cmp_, Binary) and cmp_.op == ">" and isinstance(cmp_.left, Attr)
    assert isinstance(neg, Unary) and neg.op == "not" and isinstance(neg.operand, Call)
    assert q.source(neg) == 'not match("x", $os)'
    assert (neg.span.line, neg.span.column) == (1, 14)
    assert q.attributes == frozenset({"cpu", "os"})
    assert isinstance(cmp_.right, Const) and cmp_.right.value == 4


def test_diamond_normalised_to_bang() -> None:
    assert parse("1 <> 2").root.op == "!="  # type: ignore[union-attr]


def test_long_or_chain_is_flat() -> None:
    text = " or ".join(f'$name == "h{k}"' for k in range(600))
    q = compile_query(text)
    assert isinstance(q.query.root, Logic) and len(q.query.root.operands) == 600
    assert q.matches({"name": "h599"}) and not q.matches({"name": "h600"})


# (id, MIL source text, the string's value): the four escapes, and any other
# backslash kept as written so that regular expressions read as usual.
STRING_VALUES = [
    ("escape-quote", r'"a\"b"', 'a"b'),
    ("escape-backslash", r'"a\\b"', "a\\b"),
    ("escape-newline", r'"a\nb"', "a\nb"),
    ("escape-tab", r'"a\tb"', "a\tb"),
    ("other-escape-kept", r'"a\qb"', "a\\qb"),
    ("regex-digit-kept", r'"\d+"', "\\d+"),
    ("regex-dot-kept", r'"\."', "\\."),
    ("double-backslash-d", r'"\\d"', "\\d"),
    ("escaped-backslash-then-quote", r'"\\"', "\\"),
]


@pytest.mark.parametrize("source,value", [c[1:] for c in STRING_VALUES], ids=[c[0] for c in STRING_VALUES])
def test_string_constant_values(source: str, value: str) -> None:
    from legionrm.mil.parser import parse as parse_only  # no type check: a bare string

    assert parse_only(source).root.value == value  # type: ignore[union-attr]


# (id, query, record, matches): regular expressions written with single backslashes
REGEX_BACKSLASHES = [
    ("digit-class", r'match("^node\d+$", $h)', {"h": "node17"}, True),
    ("digit-class-no", r'match("^node\d+$", $h)', {"h": "nodeX"}, False),
    ("escaped-dot", r'match("\.edu$", $h)', {"h": "cs.virginia.edu"}, True),
    ("escaped-dot-is-literal", r'match("a\.b", $h)', {"h": "axb"}, False),
    ("doubled-backslash-same", r'match("a\\.b", $h)', {"h": "a.b"}, True),
]


@pytest.mark.parametrize(
    "query,record,expected", [c[1:] for c in REGEX_BACKSLASHES], ids=[c[0] for c in REGEX_BACKSLASHES]
)
def test_regex_backslashes_need_no_doubling(query: str, record: dict, expected: bool) -> None:
    q = compile_query(query)
    assert q.matches(record) is expected
    from legionrm.mil import StaticTable

    assert bool(q.mask(StaticTable.from_records([record, {"h": "zz"}]))[0]) is expected


def test_string_escapes() -> None:
    from legionrm.mil.parser import parse as parse_only  # no type check: a bare string

    assert parse_only('"a\\"b\\\\c\\nd\\te"').root.value == 'a"b\\c\nd\te'  # type: ignore[union-attr]
    v = compile_query('match("x", "a\\"b\\\\c\\nd\\te")')
    assert v.evaluate({}) is False
    assert compile_query('$s == "a\\"b\\\\c\\nd\\te"').matches({"s": 'a"b\\c\nd\te'})


# (id, query, line, column, words in message)
SYNTAX_ERRORS = [
    ("octal-8", "08", 1, 2, "octal"),
    ("octal-9-later", "$x == 0719", 1, 10, "octal"),
    ("chained-lt", "1 < 2 < 3", 1, 7, "chain"),
    ("chained-eq", "$a == $b == $c", 1, 10, "chain"),
    ("uppercase-and", "$a AND $b", 1, 4, "lowercase"),
    ("uppercase-func", "MAX(1, 2)", 1, 1, "lowercase"),
    ("bare-word", "cpu > 1", 1, 1, "$cpu"),
    ("unterminated-string", '$s == "abc', 1, 7, "unterminated"),
    ("newline-in-string", '"a\nb"', 1, 1, "unterminated"),
    ("empty", "", 1, 1, "empty"),
    ("blank", "   ", 1, 4, "empty"),
    ("dangling-op", "1 +", 1, 4, "ends"),
    ("unclosed-paren", "(1 + 2", 1, 7, "ends"),
    ("extra-paren", "1 + 2)", 1, 6, "')'"),
    ("lone-dollar", "$ > 1", 1, 1, "'$'"),
    ("dollar-digit", "$1x", 1, 1, "'$'"),
    ("max-one-arg", "max(1)", 1, 6, "')'"),
    ("int-two-args", "int(1, 2)", 1, 6, "','"),
    ("match-no-args", "match()", 1, 7, "')'"),
    ("int-too-big", "9223372036854775808", 1, 1, "64 bits"),
    ("int-5000-digits", "1" * 5000, 1, 1, "64 bits"),  # past int()'s 4300-digit limit: was a ValueError
    ("octal-too-big", "0" + "7" * 22, 1, 1, "64 bits"),
    ("int-after-5000-digits", "$x == " + "9" * 5000, 1, 7, "64 bits"),
    ("double-op", "1 * * 2", 1, 5, "'*'"),
    ("not-after-plus", "1 + not true", 1, 5, "'not'"),
    ("junk-char", "1 # 2", 1, 3, "'#'"),
    ("second-line", "$a == 1 and\n$b ==", 2, 6, "ends"),
    ("keyword-glued", "1 or2", 1, 3, "or2"),
    ("true-prefix", "truex", 1, 1, "truex"),
]


@pytest.mark.parametrize(
    "query,line,column,words", [e[1:] for e in SYNTAX_ERRORS], ids=[e[0] for e in SYNTAX_ERRORS]
)
def test_syntax_errors_have_place_and_caret(query: str, line: int, column: int, words: str) -> None:
    with pytest.raises(MILSyntaxError) as ei:
        compile_query(query)
    e = ei.value
    assert isinstance(e, MILError) and isinstance(e, LegionError)
    assert words in str(e)
    _assert_points_at(e, query, line, column)


def _assert_points_at(e: MILError, query: str, line: int, column: int) -> None:
    """The error names (line, column), and its caret sits under that column of
    that source line (for a blank query there is no line to point into)."""
    assert (e.line, e.column) == (line, column), str(e)
    if query.strip():
        src, caret = e.caret.splitlines()[-2:]
        assert src == query.splitlines()[line - 1]
        assert caret == " " * (column - 1) + "^"


# (id, query, line, column, the character the caret must point at): every line
# break the caret message's line splitting knows counts as one, so the line and
# column named are those of the source line printed above the caret.
LINE_BREAKS = [
    ("lf", "$a == 1 and\n$b == 2 2", 2, 9, "2"),
    ("crlf", "$a == 1 and\r\n$b == 2 2", 2, 9, "2"),
    ("cr", "$a == 1 and\r$b == 2 2", 2, 9, "2"),
    ("form-feed", "$a == 1 and\f$b == 2 2", 2, 9, "2"),
    ("vertical-tab", "$a == 1\vand @", 2, 5, "@"),
    ("blank-lines", "$a ==\n\n\n  )", 4, 3, ")"),
    ("type-error-line-3", '$a == 1 and\n$b == 2 and\n  "x" + 1 > 0', 3, 3, '"'),
]


@pytest.mark.parametrize(
    "query,line,column,char", [e[1:] for e in LINE_BREAKS], ids=[e[0] for e in LINE_BREAKS]
)
def test_error_line_and_column_match_the_caret(query: str, line: int, column: int, char: str) -> None:
    with pytest.raises(MILError) as ei:
        compile_query(query)
    _assert_points_at(ei.value, query, line, column)
    assert query.splitlines()[line - 1][column - 1] == char


# (id, query, line, column, the caret line printed under the source line): the
# caret lands under the spot on a terminal, tabs and wide characters included,
# and an early end after a trailing newline points after the last token (it
# used to name the empty line past the end and print the line above it).
CARETS = [
    ("end-after-newline", "$a +\n", 1, 5, "    ^"),
    ("end-after-blank-lines", "$a and\n  $b ==\n\n  ", 2, 8, "       ^"),
    ("tabs-kept", "\t\t$a + + 1", 1, 8, "\t\t     ^"),
    ("wide-characters", '"日本" == 1 + "x"', 1, 13, " " * 14 + "^"),
    ("combining-mark", '"e\u0301" == 1 + "x"', 1, 13, " " * 11 + "^"),
]


@pytest.mark.parametrize("query,line,column,caret", [e[1:] for e in CARETS], ids=[e[0] for e in CARETS])
def test_caret_sits_under_the_spot(query: str, line: int, column: int, caret: str) -> None:
    with pytest.raises(MILError) as ei:
        compile_query(query)
    e = ei.value
    assert (e.line, e.column) == (line, column), str(e)
    assert e.caret.split("\n") == [query.splitlines()[line - 1], caret]


def test_syntax_error_says_what_was_expected() -> None:
    with pytest.raises(MILSyntaxError) as ei:
        compile_query("$a ==")
    assert "an expression" in ei.value.expected
    with pytest.raises(MILSyntaxError) as ei:
        compile_query("(1")
    assert "')'" in ei.value.expected


# (id, query, column of the offending operand)
TYPE_ERRORS = [
    ("string-plus-int", '"a" + 1', 1),
    ("int-times-string", '2 * "b"', 5),
    ("neg-string", '-"a"', 2),
    ("bitnot-string", '~"a"', 2),
    ("bitnot-float", "~1.5", 2),
    ("not-string", 'not "x"', 5),
    ("and-string", '"x" and true', 1),
    ("or-string", 'true or "x"', 9),
    ("string-eq-int", '"a" == 1', 8),
    ("int-lt-string", '1 < "a"', 1),
    ("string-eq-bool", '"a" == true', 8),
    ("match-int-pattern", "match(1, $s)", 7),
    ("match-int-subject", 'match("a", 2)', 12),
    ("bad-literal-regex", 'match("(", $s)', 7),
    ("bad-literal-regex-star", 'match("*a", $s)', 7),
    ("max-string", 'max("a", 1)', 5),
    ("int-of-word", 'int("abc")', 5),
    ("float-of-word", 'float("1.2.3")', 7),
    ("query-is-string", '"abc"', 1),
    ("string-arith-result-compared", '("a" + $x) > 1', 2),
]


@pytest.mark.parametrize("query,column", [e[1:] for e in TYPE_ERRORS], ids=[e[0] for e in TYPE_ERRORS])
def test_static_type_errors(query: str, column: int) -> None:
    with pytest.raises(MILTypeError) as ei:
        compile_query(query)
    assert ei.value.line == 1 and ei.value.column == column, str(ei.value)


# Things that look suspicious but may be fine for some resource: not static
# errors.  (query, a record it is the error value on, a record it is fine on or
# None, the value there)
NOT_TYPE_ERRORS = [
    ("$s + 1", {"s": "a"}, {"s": 2}, 3),
    ("$s == 1", {"s": "a"}, {"s": 1}, True),
    ("not $s", {"s": "x"}, {"s": False}, True),
    ("match($p, $s)", {"p": "(", "s": "a"}, {"p": "a+", "s": "baa"}, True),  # a bad pattern from a resource
    ("~$f", {"f": 1.5}, {"f": 0}, -1),
    ("int($s)", {"s": "abc"}, {"s": " 42 "}, 42),
    ("$x / 0", {"x": 1}, None, None),
    ("1 / 0", {}, None, None),
    ('int("1e19")', {}, None, None),  # numbers beyond int64: a run-time error, as int(1e19) is
    ('int("9223372036854775808")', {}, None, None),
]


@pytest.mark.parametrize("query,bad,good,value", NOT_TYPE_ERRORS, ids=[e[0] for e in NOT_TYPE_ERRORS])
def test_runtime_errors_are_values_not_exceptions(query: str, bad: dict, good: dict | None, value: object) -> None:
    q = compile_query(query)  # no exception
    table = StaticTable.from_records([bad] + ([good] if good is not None else []))
    col = q.values(table)
    assert q.evaluate(bad) is ERROR and col.value(0, table.strings.strings) is ERROR
    if good is not None:
        assert same_value(q.evaluate(good), value) and same_value(col.value(1, table.strings.strings), value)


def test_completion_lists() -> None:
    assert {"and", "or", "xor", "not", "mod", "true", "false"} <= set(KEYWORDS)
    assert set(FUNCTIONS) == {"match", "max", "min", "int", "float"}


def test_compile_is_cached() -> None:
    assert compile_query("$a > 1") is compile_query("$a > 1")


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    # redundant parentheses add no depth (the tree keeps no node for them)
    assert compile_query("(" * 5000 + "1" + ")" * 5000 + " > 0 and true").matches({})
    with pytest.raises(MILSyntaxError):
        compile_query("(" * 5000 + "-(" * 300 + "1" + ")" * 5300)
    with pytest.raises(MILSyntaxError):
        compile_query("-" * 5000 + "1")
    compile_query("-" * 100 + "1")  # reasonable depth is fine
