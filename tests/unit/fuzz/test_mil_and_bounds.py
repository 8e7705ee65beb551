"""MIL under hypothesis (structured queries: deep nesting, huge constants,
regexes, every operator) -- only MILError, in bounded time -- and the bounds
the loaders share agree with the models'."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from legionrm.errors import MILError
from legionrm.mil import StaticTable, compile_query
from legionrm.models.schedules import MAX_AMOUNT as MODEL_MAX_AMOUNT
from legionrm.tomlio import MAX_AMOUNT
from tests.unit.fuzz import gen

RECORDS = [{"cpus": 8, "arch": "x86_64", "load": 0.5, "gpu": True}, {"cpus": 2**62, "load": float("nan")}, {}]
TABLE = StaticTable.from_records(RECORDS)

atoms = st.sampled_from(["$cpus", "$arch", "$load", "$gpu", "$missing", "1", "0", "-1", "9223372036854775807",
                         "9223372036854775808", "9" * 5000, "1e308", "1e999", ".5", '"x86_64"', '"(a+)+$"', "true",
                         "false", "010", "08", '"\\d+"', '""'])
ops = st.sampled_from([" and ", " or ", " xor ", " == ", " != ", " < ", " >= ", " + ", " - ", " * ", " / ", " mod "])


@st.composite
def queries(draw: st.DrawFn) -> str:
    q = draw(atoms)
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["op", "not", "paren", "match", "neg"]))
        if kind == "op":
            q = f"{q}{draw(ops)}{draw(atoms)}"
        elif kind == "not":
            q = f"not {q}"
        elif kind == "paren":
            q = f"({q})"
        elif kind == "match":
            q = f"match({draw(atoms)}, {q})"
        else:
            q = f"-{q}"
    depth = draw(st.sampled_from([0, 0, 0, 50, 500, 5000]))
    return "(" * depth + q + ")" * depth


@gen.FUZZ
@given(text=st.one_of(queries(), st.text(max_size=40)))
def test_mil_answers_or_says_why(text: str) -> None:
    try:
        q = compile_query(text)
    except MILError:
        return
    for r in RECORDS:
        q.evaluate(r)
    assert q.mask(TABLE).shape == (len(RECORDS),)


def test_the_models_and_the_loaders_share_one_bound() -> None:
    assert MODEL_MAX_AMOUNT == MAX_AMOUNT
