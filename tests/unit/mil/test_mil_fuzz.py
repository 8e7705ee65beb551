"""Fuzz: nothing but MILError may come out of compile_query, and whatever
compiles must evaluate in both engines without raising."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.errors import MILError
from legionrm.mil import StaticTable, compile_query

TOKENS = [
    "$a", "$b", "$s", "$", "(", ")", ",", "==", "<=", ">=", "<", ">", "<>", "!=", "=", "!", "or", "xor", "and",
    "not", "mod", "match", "max", "min", "int", "float", "true", "FALSE", "True", "AND", "+", "-", "*", "/", "~",
    "0", "010", "08", "7", "1.5", ".5", "1e3", "1e", "9223372036854775808", '"x"', '"a\\q"', '"(', '"', "\\",
    " ", "\n", "\t", "#", "@", "é", "\x00", "((((", "))))", "1" * 4400,
]
RECORDS = [{"a": 3, "b": "x", "s": "abc"}, {"a": 2.5}, {}, {"a": "z", "b": True, "s": 0}]
TABLE = StaticTable.from_records(RECORDS)


def _probe(text: str) -> None:
    try:
        q = compile_query(text)
    except MILError:
        return
    for r in RECORDS:
        q.evaluate(r)
        q.matches(r)
    assert q.mask(TABLE).shape == (len(RECORDS),)


def test_token_soup() -> None:
    rnd = random.Random(20240501)
    for _ in range(3000):
        _probe(" ".join(rnd.choice(TOKENS) for _ in range(rnd.randint(0, 12))))
        _probe("".join(rnd.choice(TOKENS) for _ in range(rnd.randint(1, 8))))


def test_byte_soup() -> None:
    rnd = random.Random(7)
    for _ in range(2000):
        raw = bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))
        _probe(raw.decode("utf-8", errors="replace"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text(text: str) -> None:
    _probe(text)
