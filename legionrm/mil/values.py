"""MIL run-time values and the scalar semantics both engines implement.

A MIL value is one of six kinds, each with a small integer *tag* that the
columnar engine stores per row:

========  ====  ==========================================================
kind      tag   Python representation in the per-record engine
========  ====  ==========================================================
undefined  0    the singleton :data:`UNDEFINED` (attribute not exported)
error      1    the singleton :data:`ERROR` (type clash, division by zero)
bool       2    ``True`` / ``False``
int        3    ``int`` in the signed 64-bit range
float      4    ``float`` (IEEE double)
string     5    ``str``
========  ====  ==========================================================

``UNDEFINED`` and ``ERROR`` are distinct values (as in HTCondor ClassAds):
they are never equal to anything and never raise; an operation that meets
them follows the rules in :mod:`legionrm.mil` (error wins over undefined
in strict operators; ``and``/``or``/``xor``/``not`` treat both as unknown).

This module holds the scalar rules (``arith``, ``compare``, ``truth`` ...);
:mod:`legionrm.mil.evaluate` calls them per record and
:mod:`legionrm.mil.vectorize` re-implements them over numpy arrays.  The
property test in ``tests/unit/mil/test_mil_engines.py`` keeps the two equal,
and ``tests/unit/mil/test_mil_int64.py`` checks each at the int64 edges.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Final, Union

from legionrm.mil import regex

UNDEF: Final = 0
ERR: Final = 1
BOOL: Final = 2
INT: Final = 3
FLOAT: Final = 4
STR: Final = 5
TAG_NAMES: Final = ("undefined", "error", "bool", "int", "float", "string")

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
TWO63_F: Final = 9.223372036854775808e18
"""2**63 as a float, exactly: the first float past INT64_MAX (which no float holds)."""


class _Special:
    """Base of the two singleton non-values; falsy so careless code fails safe."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    __str__ = __repr__

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:  # pickle as the module-level singleton
        return self._name


UNDEFINED: Final = _Special("UNDEFINED")
"""The value of an attribute the resource does not export."""
ERROR: Final = _Special("ERROR")
"""The value of an ill-typed or failed operation (e.g. ``"a" < 1``, ``1/0``)."""

Value = Union[bool, int, float, str, _Special]
"""Any MIL value as the per-record engine represents it."""


def tag_of(v: object) -> int:
    """The tag of a MIL value (``bool`` is checked before ``int``)."""
    t = type(v)
    if t is bool:
        return BOOL
    if t is int:
        return INT
    if t is float:
        return FLOAT
    if t is str:
        return STR
    if v is UNDEFINED:
        return UNDEF
    if v is ERROR:
        return ERR
    raise TypeError(f"not a MIL value: {v!r}")


def wrap64(x: int) -> int:
    """Wrap a Python int into signed 64-bit two's complement (C int64 overflow)."""
    return ((x + 2**63) & 0xFFFF_FFFF_FFFF_FFFF) - 2**63


def from_attr(v: object) -> Value:
    """Turn an attribute value from a record into a MIL value.

    ``None`` means "not exported" (undefined).  numpy scalars are accepted.
    An int outside the 64-bit range, or anything that is not bool / int /
    float / str, becomes ERROR (the Collection's attribute table refuses such values outright).
    """
    if v is None:
        return UNDEFINED
    t = type(v)
    if t is bool or t is str or t is float:
        return v  # type: ignore[return-value]
    if t is int:
        return v if INT64_MIN <= v <= INT64_MAX else ERROR  # type: ignore[operator,return-value]
    # numpy scalars and other registered numbers
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    if isinstance(v, numbers.Integral):
        iv = int(v)
        return iv if INT64_MIN <= iv <= INT64_MAX else ERROR
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        return str(v)
    return ERROR


# --- scalar rules -------------------------------------------------------------


def truth(v: Value) -> Value:
    """A value in a boolean position: bool itself, number != 0, string -> ERROR,
    undefined / error unchanged."""
    t = tag_of(v)
    if t == BOOL:
        return v
    if t == INT or t == FLOAT:
        return v != 0
    if t == STR:
        return ERROR
    return v


def _unknown(*vs: Value) -> Value:
    return ERROR if any(v is ERROR for v in vs) else UNDEFINED


def logic_and(a: Value, b: Value) -> Value:
    x, y = truth(a), truth(b)
    if x is False or y is False:
        return False
    if x is True and y is True:
        return True
    return _unknown(x, y)


def logic_or(a: Value, b: Value) -> Value:
    x, y = truth(a), truth(b)
    if x is True or y is True:
        return True
    if x is False and y is False:
        return False
    return _unknown(x, y)


def logic_xor(a: Value, b: Value) -> Value:
    x, y = truth(a), truth(b)
    if type(x) is bool and type(y) is bool:
        return x != y
    return _unknown(x, y)


def logic_not(a: Value) -> Value:
    x = truth(a)
    return (not x) if type(x) is bool else x


def strict(ta: int, tb: int) -> Value | None:
    """ERROR / UNDEFINED if either operand forces it (error wins), else None."""
    if ta == ERR or tb == ERR:
        return ERROR
    if ta == UNDEF or tb == UNDEF:
        return UNDEFINED
    return None


def trunc_div(a: int, b: int) -> int:
    """C division of int64 values (b != 0): truncates toward zero, wraps."""
    q = abs(a) // abs(b)
    return wrap64(q if (a < 0) == (b < 0) else -q)


def c_mod(a: int, b: int) -> int:
    """C remainder (b != 0): sign of the dividend; ``a == (a/b)*b + a mod b``."""
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def fmod(a: float, b: float) -> float:
    """C fmod with numpy's answers where Python's math.fmod raises."""
    try:
        return math.fmod(a, b)
    except ValueError:  # fmod(inf, y): C and numpy give nan
        return math.nan


def arith(op: str, a: Value, b: Value) -> Value:
    """``+ - * / mod`` on two values."""
    ta, tb = tag_of(a), tag_of(b)
    s = strict(ta, tb)
    if s is not None:
        return s
    if ta == STR or tb == STR:
        return ERROR
    if ta == FLOAT or tb == FLOAT:
        x, y = float(a), float(b)  # type: ignore[arg-type]
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if y == 0.0:
            return ERROR
        return x / y if op == "/" else fmod(x, y)
    i, j = int(a), int(b)  # type: ignore[arg-type]
    if op == "+":
        return wrap64(i + j)
    if op == "-":
        return wrap64(i - j)
    if op == "*":
        return wrap64(i * j)
    if j == 0:
        return ERROR
    return trunc_div(i, j) if op == "/" else c_mod(i, j)


def negate(a: Value) -> Value:
    t = tag_of(a)
    if t in (UNDEF, ERR):
        return a
    if t == FLOAT:
        return -a  # type: ignore[operator]
    if t in (INT, BOOL):
        return wrap64(-int(a))  # type: ignore[arg-type]
    return ERROR


def bitnot(a: Value) -> Value:
    t = tag_of(a)
    if t in (UNDEF, ERR):
        return a
    if t in (INT, BOOL):
        return ~int(a)  # type: ignore[arg-type]
    return ERROR


COMPARE = {
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}


def compare(op: str, a: Value, b: Value) -> Value:
    """``== != < <= > >=`` (``<>`` is normalised to ``!=`` by the parser)."""
    ta, tb = tag_of(a), tag_of(b)
    s = strict(ta, tb)
    if s is not None:
        return s
    if ta == STR or tb == STR:
        if ta != tb:
            return ERROR
        return COMPARE[op](a, b)
    if ta == FLOAT or tb == FLOAT:
        return COMPARE[op](float(a), float(b))  # type: ignore[arg-type]
    return COMPARE[op](int(a), int(b))  # type: ignore[arg-type]


def maxmin(op: str, a: Value, b: Value) -> Value:
    """``max``/``min``: numbers only; int if both are int or bool, else float;
    a NaN operand gives NaN; on a tie the first operand is returned."""
    ta, tb = tag_of(a), tag_of(b)
    s = strict(ta, tb)
    if s is not None:
        return s
    if ta == STR or tb == STR:
        return ERROR
    if ta == FLOAT or tb == FLOAT:
        x, y = float(a), float(b)  # type: ignore[arg-type]
        if math.isnan(x) or math.isnan(y):
            return math.nan
        if op == "max":
            return y if y > x else x
        return y if y < x else x
    i, j = int(a), int(b)  # type: ignore[arg-type]
    if op == "max":
        return j if j > i else i
    return j if j < i else i


# Unambiguous (one way to read any run of digits), so a failing fullmatch costs
# time linear in the string: "[0-9]+\.?[0-9]*" could split "111...1x" in n ways
# and took quadratic time.
_NUM_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT_RE = re.compile(r"[+-]?[0-9]+")
_SPACE = " \t\n\r\f\v"
_INT64_DIGITS = 19  # len(str(2**63))


def float_to_int(x: float) -> Value:
    """Truncate toward zero; NaN, infinities and values outside int64 are ERROR."""
    if not (-TWO63_F <= x < TWO63_F):
        return ERROR
    return int(x)


def parse_int(s: str) -> Value:
    """``int("...")``: a decimal integer, or a float constant truncated; else ERROR."""
    t = s.strip(_SPACE)
    if _INT_RE.fullmatch(t):
        # More than 19 significant digits cannot fit in int64; refusing them,
        # and converting without the leading zeros, keeps int() far below
        # Python's 4300-digit limit (past it int() raises ValueError).
        sign = "-" if t[0] == "-" else ""
        digits = t.lstrip("+-").lstrip("0") or "0"
        if len(digits) > _INT64_DIGITS:
            return ERROR
        v = int(sign + digits)
        return v if INT64_MIN <= v <= INT64_MAX else ERROR
    if _NUM_RE.fullmatch(t):
        return float_to_int(float(t))
    return ERROR


def parse_float(s: str) -> Value:
    """``float("...")``: a decimal integer or float constant; else ERROR."""
    t = s.strip(_SPACE)
    if _NUM_RE.fullmatch(t):
        return float(t)
    return ERROR


def to_int(a: Value) -> Value:
    t = tag_of(a)
    if t in (UNDEF, ERR):
        return a
    if t in (INT, BOOL):
        return int(a)  # type: ignore[arg-type]
    if t == FLOAT:
        return float_to_int(a)  # type: ignore[arg-type]
    return parse_int(a)  # type: ignore[arg-type]


def to_float(a: Value) -> Value:
    t = tag_of(a)
    if t in (UNDEF, ERR):
        return a
    if t in (INT, BOOL, FLOAT):
        return float(a)  # type: ignore[arg-type]
    return parse_float(a)  # type: ignore[arg-type]


def match(p: Value, s: Value) -> Value:
    """``match(pattern, subject)``: an RE2 search (:mod:`legionrm.mil.regex`);
    a pattern RE2 refuses, or a subject it cannot search (too long), is ERROR."""
    tp, ts = tag_of(p), tag_of(s)
    r = strict(tp, ts)
    if r is not None:
        return r
    if tp != STR or ts != STR:
        return ERROR
    rx = regex.compile_pattern(p)
    if type(rx) is regex.BadPattern:
        return ERROR
    found = regex.search(rx, s)  # type: ignore[arg-type]
    return ERROR if found is None else found


def same_value(a: Value, b: Value) -> bool:
    """Identity of two MIL values for tests: same kind and same value
    (NaN equals NaN; 0.0 equals -0.0)."""
    ta, tb = tag_of(a), tag_of(b)
    if ta != tb:
        return False
    if ta == FLOAT and math.isnan(a) and math.isnan(b):  # type: ignore[arg-type]
        return True
    return ta in (UNDEF, ERR) or a == b


def format_value(v: Value) -> str:
    """A value as MIL would spell it (strings quoted with MIL escapes)."""
    t = tag_of(v)
    if t == BOOL:
        return "true" if v else "false"
    if t == STR:
        s = str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        return f'"{s}"'
    if t == UNDEF:
        return "undefined"
    if t == ERR:
        return "error"
    return repr(v)
