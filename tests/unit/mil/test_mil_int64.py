"""MIL at the edges of int64, in both engines.

An int is signed 64-bit: a conversion whose result would fall outside
``[-2**63, 2**63 - 1]`` is the error value, in the per-record engine
(:meth:`CompiledQuery.evaluate`) and the vectorized one
(:meth:`CompiledQuery.values`) alike; arithmetic wraps as C int64 does; a
constant that does not fit is a syntax error.  Each case is checked in each
engine separately, so a difference names the engine that is wrong.  (The
random property test in ``test_mil_engines.py`` rarely lands exactly on these
values: two mutants of ``mil/values.py`` at these edges once survived it.)
"""

from __future__ import annotations

import math

import pytest

from legionrm.errors import MILSyntaxError
from legionrm.mil import ERROR, StaticTable, Value, compile_query, format_value, same_value

MAX, MIN = 2**63 - 1, -(2**63)
TWO63 = 2.0**63  # the first float past MAX (MAX itself is not a float)
BELOW_TWO63 = math.nextafter(TWO63, 0.0)  # 2**63 - 1024: the largest float inside
BELOW_MIN = math.nextafter(-TWO63, -math.inf)  # the first float below MIN


def per_record(query: str, record: dict) -> Value:
    return compile_query(query).evaluate(record)


def vectorized(query: str, record: dict) -> Value:
    table = StaticTable.from_records([record])
    return compile_query(query).values(table, deadline_s=None).value(0, table.strings.strings)


ENGINES = [pytest.param(per_record, id="per-record"), pytest.param(vectorized, id="vector")]

# (id, query, record, value)
EDGES = [
    # int(float): truncation toward zero inside int64; ERROR from 2**63 up and below -2**63
    ("float-2^63", "int($v)", {"v": TWO63}, ERROR),
    ("float-just-below-2^63", "int($v)", {"v": BELOW_TWO63}, 2**63 - 1024),
    ("float-just-above-2^63", "int($v)", {"v": math.nextafter(TWO63, math.inf)}, ERROR),
    ("float-minus-2^63", "int($v)", {"v": -TWO63}, MIN),
    ("float-just-below-minus-2^63", "int($v)", {"v": BELOW_MIN}, ERROR),
    ("float-1e19", "int($v)", {"v": 1e19}, ERROR),
    ("float-inf", "int($v)", {"v": math.inf}, ERROR),
    ("float-minus-inf", "int($v)", {"v": -math.inf}, ERROR),
    ("float-nan", "int($v)", {"v": math.nan}, ERROR),
    ("float-truncates-up", "int($v)", {"v": -2.9}, -2),
    ("float-literal-2^63", "int(9223372036854775808.0)", {}, ERROR),
    ("float-literal-minus-2^63", "int(-9223372036854775808.0)", {}, MIN),
    # int(string): 19 digits fit when the value does; 20 never; leading zeros do not count
    ("string-max", "int($v)", {"v": "9223372036854775807"}, MAX),
    ("string-min", "int($v)", {"v": "-9223372036854775808"}, MIN),
    ("string-max-plus-sign", "int($v)", {"v": "+9223372036854775807"}, MAX),
    ("string-19-digits-small", "int($v)", {"v": "1000000000000000000"}, 10**18),
    ("string-2^63", "int($v)", {"v": "9223372036854775808"}, ERROR),
    ("string-min-minus-1", "int($v)", {"v": "-9223372036854775809"}, ERROR),
    ("string-19-nines", "int($v)", {"v": "9" * 19}, ERROR),
    ("string-20-digits", "int($v)", {"v": "1" + "0" * 19}, ERROR),
    ("string-minus-20-digits", "int($v)", {"v": "-1" + "0" * 19}, ERROR),
    ("string-leading-zeros", "int($v)", {"v": "0" * 30 + "9223372036854775807"}, MAX),
    ("string-zeros", "int($v)", {"v": "0" * 25}, 0),
    ("string-float-rounds-to-2^63", "int($v)", {"v": "9223372036854775807.5"}, ERROR),
    ("string-float-inside", "int($v)", {"v": "9.2e18"}, 9_200_000_000_000_000_000),
    ("string-float-1e19", "int($v)", {"v": "1e19"}, ERROR),
    ("string-literal-max", 'int("9223372036854775807")', {}, MAX),
    ("string-literal-20-digits", 'int("10000000000000000000")', {}, ERROR),
    # ints as they are, and C int64 arithmetic at the edges
    ("int-max", "int($v)", {"v": MAX}, MAX),
    ("int-min", "int($v)", {"v": MIN}, MIN),
    ("max-plus-1-wraps", "$v + 1", {"v": MAX}, MIN),
    ("min-minus-1-wraps", "$v - 1", {"v": MIN}, MAX),
    ("negate-min-wraps", "-$v", {"v": MIN}, MIN),
    ("min-div-minus-1-wraps", "$v / -1", {"v": MIN}, MIN),
    ("min-mod-minus-1", "$v mod -1", {"v": MIN}, 0),
    ("max-times-2-wraps", "$v * 2", {"v": MAX}, -2),
    ("bitnot-min", "~$v", {"v": MIN}, MAX),
    # an int meeting a float is converted to float first, as in C
    ("max-equals-float-2^63", "$v == 9223372036854775808.0", {"v": MAX}, True),
    ("float-of-max", "float($v)", {"v": MAX}, TWO63),
    # constants: 19 digits fit when the value does
    ("literal-max", "9223372036854775807", {}, MAX),
    ("literal-min", "-9223372036854775807 - 1", {}, MIN),
    ("literal-octal-max", "0777777777777777777777", {}, MAX),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("query,record,value", [e[1:] for e in EDGES], ids=[e[0] for e in EDGES])
def test_int64_edges(engine, query: str, record: dict, value: Value) -> None:
    got = engine(query, record)
    assert same_value(got, value), f"{query} on {record}: {format_value(got)}, not {format_value(value)}"


TOO_BIG = [
    ("literal-2^63", "9223372036854775808"),
    ("literal-minus-2^63", "-9223372036854775808"),  # the minus is an operator: 2**63 comes first
    ("literal-20-digits", "10000000000000000000"),
    ("literal-octal-2^63", "01000000000000000000000"),
]


@pytest.mark.parametrize("query", [t[1] for t in TOO_BIG], ids=[t[0] for t in TOO_BIG])
def test_a_constant_past_int64_is_a_syntax_error(query: str) -> None:
    with pytest.raises(MILSyntaxError, match="does not fit in 64 bits"):
        compile_query(query)
