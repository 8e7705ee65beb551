"""MIL cannot be made to run forever: linear-time regular expressions (RE2),
bounded inputs, clean errors instead of exceptions, an evaluation deadline.

No test here measures wall time: results are asserted, and the deadline is
driven by an injected counting clock.
"""

from __future__ import annotations

import itertools
import pickle
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.errors import LegionError, MILError, MILSyntaxError, MILTypeError
from legionrm.mil import (
    ERROR,
    MAX_DEPTH,
    MAX_QUERY_LENGTH,
    MAX_SUBJECT_LENGTH,
    MILTimeoutError,
    StaticTable,
    compile_query,
    format_value,
    parse,
    regex,
    same_value,
)
from legionrm.mil.columns import REGEX_PATTERNS_KEPT


def both(query: str, records: list[dict]) -> list:
    """The query's values by the per-record engine, checked equal to the vectorized one's."""
    q = compile_query(query)
    scalar = [q.evaluate(r) for r in records]
    table = StaticTable.from_records(records)
    col = q.values(table)
    vector = [col.value(k, table.strings.strings) for k in range(len(records))]
    assert all(same_value(a, b) for a, b in zip(scalar, vector)), (scalar, vector)
    assert q.mask(table).tolist() == [q.matches(r) for r in records]
    return scalar


class CountingClock:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.ticks = itertools.count()

    def __call__(self) -> float:
        return float(next(self.ticks))


# --- catastrophic backtracking ------------------------------------------------------


def test_catastrophic_pattern_on_long_subject_is_answered() -> None:
    evil = "a" * 30 + "!"
    assert compile_query(f'match("(a+)+$", "{evil}")').evaluate({}) is False
    long_ok, long_bad = "a" * (MAX_SUBJECT_LENGTH - 1), "a" * (MAX_SUBJECT_LENGTH - 2) + "!"
    records = [{"s": evil}, {"s": long_bad}, {"s": long_ok}, {"s": "b"}, {}]
    assert both('match("(a+)+$", $s)', records)[:4] == [False, False, True, False]
    # a computed pattern goes through the same engine
    assert both("match($p, $s)", [{**r, "p": "(a+)+$"} for r in records])[:4] == [False, False, True, False]
    assert both('match("(x+x+)+y", $s)', [{"s": "x" * 5000}]) == [False]


def test_match_is_still_a_search() -> None:
    assert both('match("b", $s)', [{"s": "abc"}, {"s": "xyz"}]) == [True, False]
    assert both('match("^b", $s)', [{"s": "abc"}, {"s": "bc"}]) == [False, True]


def test_a_subject_past_the_cap_is_error_in_both_engines() -> None:
    records = [{"s": "a" * (MAX_SUBJECT_LENGTH + 1)}, {"s": "a"}]
    assert both('match("a", $s)', records) == [ERROR, True]
    assert both("match($p, $s)", [{**r, "p": "a"} for r in records]) == [ERROR, True]
    assert both('match("a", $s) or true', records) == [True, True]


def test_a_lone_surrogate_is_error_not_an_exception() -> None:
    assert both('match("a", $s)', [{"s": "a\ud800"}, {"s": "a"}]) == [ERROR, True]
    assert both("match($p, $s)", [{"p": "\ud800", "s": "a"}, {"p": "a", "s": "a"}]) == [ERROR, True]


# --- patterns RE2 does not support --------------------------------------------------

UNSUPPORTED = [
    ("backreference", r"(a)\1", "backreference"),
    ("lookahead", "a(?=b)", "lookaround"),
    ("negative-lookbehind", "(?<!x)a", "lookaround"),
    ("atomic-group", "(?>a)", "lookaround and atomic groups"),
    ("possessive", "a++", "possessive"),
    ("end-Z", r"a\Z", r"\z"),
    ("does-not-compile", "(", "missing )"),
    ("too-long", "a" * (regex.MAX_PATTERN_LENGTH + 1), "characters long"),
]


@pytest.mark.parametrize("pattern,words", [u[1:] for u in UNSUPPORTED], ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_literal_pattern_is_refused_with_a_caret(pattern: str, words: str) -> None:
    text = f"$x > 1 and match({format_value(pattern)}, $s)"
    with pytest.raises(MILTypeError) as ei:
        compile_query(text)
    err = ei.value
    assert (err.line, err.column) == (1, text.index('"') + 1)  # the caret is under the pattern literal
    assert words in str(err)
    assert err.caret.splitlines()[1].index("^") == text.index('"')


@pytest.mark.parametrize("pattern", [u[1] for u in UNSUPPORTED], ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_computed_pattern_is_the_error_value(pattern: str) -> None:
    records = [{"p": pattern, "s": "aab"}, {"p": "a", "s": "aab"}, {"s": "aab"}]
    assert both("match($p, $s)", records) == [ERROR, True, both("match($p, $s)", [{"s": "x"}])[0]]
    # one pattern on every row (the vectorized engine's one-pattern path)
    assert both("match($p, $s)", [{"p": pattern, "s": "a"}, {"p": pattern, "s": "b"}]) == [ERROR, ERROR]


def test_bad_pattern_is_a_typed_outcome() -> None:
    bad = regex.compile_pattern("(a)\\1")
    assert isinstance(bad, regex.BadPattern) and "backreference" in bad.reason
    assert not isinstance(regex.compile_pattern("a+"), regex.BadPattern)


def test_without_re2_match_is_refused_not_run_on_a_backtracking_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex, "AVAILABLE", False)
    for text in ['match("a", $s)', "match($p, $s)"]:
        with pytest.raises(MILTypeError) as ei:
            parse(text)
        assert "google-re2" in str(ei.value) and ei.value.column == 1
    assert parse("$x > 1").attributes == {"x"}  # queries without match() are unaffected


def test_pattern_caches_are_bounded() -> None:
    assert regex.compile_pattern.cache_info().maxsize == regex.PATTERN_CACHE_SIZE
    table = StaticTable.from_records([{"s": "abc"}, {"s": "x1"}])
    for k in range(REGEX_PATTERNS_KEPT + 20):
        compile_query(f'match("a{{{k % 50}}}b|x{k}", $s)').mask(table)
    assert len(table.strings.regex_results) <= REGEX_PATTERNS_KEPT


# --- the engines agree on generated patterns ---------------------------------------------

_TOKENS = ["a", "b", "1", ".", "*", "+", "?", "|", "(", ")", "^", "$", "[ab]", "[^a]", "{1,2}", "\\d", "(?i)", " "]
_patterns = st.lists(st.sampled_from(_TOKENS), min_size=0, max_size=8).map("".join)
_subjects = st.text(alphabet="abAB1 \n", max_size=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(st.tuples(_patterns, _subjects), min_size=1, max_size=6))
def test_engines_agree_on_generated_patterns(pairs: list[tuple[str, str]]) -> None:
    records = [{"p": p, "s": s} for p, s in pairs]
    computed = both("match($p, $s)", records)
    for (p, s), value in zip(pairs, computed):
        rx = regex.compile_pattern(p)
        if isinstance(rx, regex.BadPattern):
            assert value is ERROR
            continue
        # a literal pattern gives what the computed one gives, on every path
        assert both(f"match({format_value(p)}, $s)", [{"s": s}, {"s": s + "x"}])[0] is value
        # RE2 and Python's re agree on this alphabet away from their known
        # differences ($ before a final newline, Unicode \d)
        try:
            py = re.compile(p)
        except re.error:  # the dialects differ on what is valid (e.g. "a(?i)")
            continue
        if "\n" not in s:
            assert value is (py.search(s) is not None), (p, s)


# --- numbers from huge strings ---------------------------------------------------------


def test_huge_digit_strings_are_error_not_an_exception() -> None:
    huge = "1" * 5000
    assert compile_query(f'int("{huge}") > 0').evaluate({}) is ERROR
    assert compile_query(f'int("{huge}")').evaluate({}) is ERROR
    records = [{"s": huge}, {"s": "-" + huge}, {"s": "0" * 5000 + "7"}, {"s": huge + ".5"}, {"s": " 42 "}]
    assert both("int($s)", records) == [ERROR, ERROR, 7, ERROR, 42]
    assert both("float($s) > 0", records) == [True, False, True, True, True]


def test_number_parsing_of_a_long_non_number_is_error() -> None:
    # "111...1x" took time quadratic in its length with the old pattern
    assert both("int($s)", [{"s": "1" * 20000 + "x"}, {"s": "." + "1" * 20000 + "e"}]) == [ERROR, ERROR]
    assert both("float($s)", [{"s": "1" * 20000 + "x"}]) == [ERROR]


# --- long and deep queries ---------------------------------------------------------------

DEEP = [
    ("minus", "-" * 5000 + "1"),
    ("not", "not " * 5000 + "true"),
    ("tilde", "~" * (MAX_DEPTH + 1) + "1"),
    ("nested-calls", "int(" * 3000 + "1" + ")" * 3000),
    ("nested-arith", "(1 + " * 3000 + "1" + ")" * 3000),
    ("unclosed", "(" * 50000),
]


@pytest.mark.parametrize("text", [d[1] for d in DEEP], ids=[d[0] for d in DEEP])
def test_deep_nesting_is_a_clean_syntax_error(text: str) -> None:
    with pytest.raises(MILSyntaxError) as ei:
        compile_query(text)
    assert ei.value.line == 1 and ei.value.column >= 1


def test_a_query_past_the_length_cap_is_a_short_syntax_error() -> None:
    text = "true or " * (MAX_QUERY_LENGTH // 8) + "true"
    with pytest.raises(MILSyntaxError) as ei:
        compile_query(text)
    assert f"the limit is {MAX_QUERY_LENGTH}" in str(ei.value)
    assert len(str(ei.value)) < 200  # no copy of the over-long line in the message


def test_huge_integer_literal_is_a_syntax_error() -> None:
    with pytest.raises(MILSyntaxError) as ei:
        compile_query("$x == " + "9" * 5000)
    assert "does not fit in 64 bits" in str(ei.value) and ei.value.column == 7


# --- the evaluation deadline ---------------------------------------------------------------

BIG = [{"x": k, "s": f"host-{k}"} for k in range(6000)]


def test_deadline_fires_on_a_big_table_with_its_error() -> None:
    table = StaticTable.from_records(BIG)
    text = '$x > 1 and match("t-1+$", $s)'
    q = compile_query(text)
    with pytest.raises(MILTimeoutError) as ei:
        q.mask(table, deadline_s=2.5, clock=CountingClock())
    err = ei.value
    assert isinstance(err, MILError) and isinstance(err, LegionError)
    assert err.deadline_s == 2.5
    # the first check ($x > 1) passes at 1, then match's string loop at 2, then at 3 it fires
    assert (err.line, err.column) == (1, text.index("match") + 1)
    assert "passed its deadline of 2.5 s" in str(err)
    assert "match(\"t-1+$\", $s)" in str(err) and "over 6000 rows" in str(err)
    # the deadline stopped work only: a later evaluation is still right (the
    # strings searched before it fired stay settled in the table's cache)
    assert q.mask(table, deadline_s=None).sum() == 3  # host-11, host-111, host-1111
    assert q.mask(table, deadline_s=3.5, clock=CountingClock()).sum() == 3  # cached: only the 3 node checks


def test_deadline_between_vectorised_operations() -> None:
    table = StaticTable.from_records(BIG)
    text = "$x + 1 > 2 and $x * 2 < 100"
    q = compile_query(text)
    # the clock reads 0 when the deadline is set, then 1, 2, ... at each node that finishes
    for deadline_s, clause, column in [(0.5, "$x + 1", 1), (1.5, "$x + 1 > 2", 1), (2.5, "$x * 2", 16)]:
        with pytest.raises(MILTimeoutError) as ei:
            q.values(table, deadline_s=deadline_s, clock=CountingClock())
        assert ei.value.column == column and f"evaluating {clause!r} over 6000 rows" in str(ei.value)


def test_generous_deadline_does_not_fire() -> None:
    table = StaticTable.from_records(BIG)
    q = compile_query('match("(a+)+$", $s) or int($s) == 3')
    assert q.mask(table, deadline_s=1e9, clock=CountingClock()).sum() == 0


def test_deadline_in_the_per_record_loop() -> None:
    q = compile_query("$x > 100")
    assert sum(v is True for v in q.evaluate_many(BIG, deadline_s=None)) == len(BIG) - 101
    with pytest.raises(MILTimeoutError) as ei:
        q.evaluate_many(BIG, deadline_s=2, clock=CountingClock())
    assert "after 192 records" in str(ei.value)  # checks at 64 (t=1) and 128 (t=2) pass
    assert ei.value.column == 1


def test_timeout_error_survives_pickling() -> None:
    table = StaticTable.from_records(BIG[:10])
    with pytest.raises(MILTimeoutError) as ei:
        compile_query("$x > 1").mask(table, deadline_s=0, clock=CountingClock())
    back = pickle.loads(pickle.dumps(ei.value))
    assert type(back) is MILTimeoutError and str(back) == str(ei.value) and back.deadline_s == 0
