"""The running work as kept columns (:meth:`RunningUses.columns`: each request's distinct
stretches worked out once) gives every user the usage the stretches one by one give, bit
for bit, as work starts and ends and time moves."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.models import Identity, InstanceRef, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority.site import RunningUses
from legionrm.scheduler.priority.usage import UsageLedger, Use, _decayed_terms, _terms_until_now, decayed_cpu_seconds
from legionrm.scheduler.requests import RequestBook
from tests.unit.scheduler.priority.books import run


def bits(usage: dict) -> list:  # type: ignore[type-arg]
    return [(u, struct.pack("<dd", v.raw, v.decayed)) for u, v in usage.items()]


@pytest.mark.parametrize("half_life", [0.0, 3600.0, 12345.678], ids=["no-decay", "an-hour", "odd"])
def test_columns_give_the_one_by_one_usage_as_work_starts_and_ends(half_life: float) -> None:
    now = [100.0]
    book = RequestBook(lambda: now[0])
    kept = RunningUses()
    ledger = UsageLedger(half_life)
    ledger.add([Use("u1", 2.0, 0.0, 50.0)], now[0])  # (a total to start from: the sum's order shows)
    for k in range(5):
        request = SchedulingRequest(request_id=f"r{k}", identity=Identity(user=f"u{k % 3}"), objects=(
            ObjectRequest(class_name="A", count=3, cpus=1.5), ObjectRequest(class_name="B", count=2, cpus=3)))
        # most share a start, one starts later (a request's stretches need not all be one)
        run(book, request, [InstanceRef(instance_id=f"r{k}-{i}", class_name="AAABB"[i], host="h", token_id=f"t{k}{i}",
                                        user=f"u{k % 3}", started_at=now[0] + (7.25 if i == 4 else 0.0))
                            for i in range(5)])
        now[0] += 10 + k
        for at in (now[0], now[0] + 0.5):  # time moves with the same work running: the columns kept
            want = bits(ledger.usage(at, kept(book.entries())))
            assert bits(ledger.usage(at, kept.columns(book.entries()))) == want
            # the decayed usage alone (the fair-share factors' read): the same figures, users in the same order
            assert [(u, struct.pack("<d", d)) for u, d in ledger.decayed(at, kept.columns(book.entries())).items()] \
                == [(u, b[8:]) for u, b in want]
    # finished work of a new user comes in, the same work running: the users read again (the new one first)
    ledger.add([Use("u9", 1.0, 0.0, 5.0)], now[0])
    assert bits(ledger.usage(now[0], kept.columns(book.entries()))) == bits(ledger.usage(now[0], kept(book.entries())))
    book.end_instances(book.get("r1"), ["r1-0", "r1-4"], "ended", "done")
    book.end_instances(book.get("r3"), [f"r3-{i}" for i in range(5)], "ended", "done")
    now[0] += 3
    assert bits(ledger.usage(now[0], kept.columns(book.entries()))) == bits(ledger.usage(now[0], kept(book.entries())))
    # a request that stops running (its state alone changes) leaves the columns the next call gives
    book.get("r0").state = "finished"
    assert bits(ledger.usage(now[0], kept.columns(book.entries()))) == bits(ledger.usage(now[0], kept(book.entries())))
    assert kept.columns([]).each.size == 0 and ledger.usage(now[0], kept.columns([])) == ledger.usage(now[0], [])


@pytest.mark.parametrize("half_life", [0.0, 3600.0, 12345.678], ids=["no-decay", "an-hour", "odd"])
def test_the_terms_as_columns_are_each_stretch_s_bit_for_bit(half_life: float) -> None:
    now = 1e9 + 0.25
    # (cpus, start, end): running until now, ended before now, none, ending before it began, one second
    rows = [(4.0, now - 7200.5, now), (1.5, now - 50.0, now - 10.0), (0.0, now - 9.0, now), (2.0, now - 1.0, now - 3.0),
            (3.0, now - 1.0, now), (2.5, 1e9 - 86_400.0, 1e9 - 3600.0)]
    cpus, start, end = (np.array([r[c] for r in rows]) for c in range(3))
    got = _decayed_terms(cpus, start, end, now, half_life)
    want = [decayed_cpu_seconds(c, s, e, now, half_life) for c, s, e in rows]
    assert [struct.pack("<d", g) for g in got.tolist()] == [struct.pack("<d", w) for w in want]


@settings(max_examples=300, deadline=None)
@given(half_life=st.sampled_from([0.0, 3600.0, 12345.678]), now=st.floats(0.0, 2e9),
       rows=st.lists(st.tuples(st.sampled_from([4.0, 1.5, 0.0, -1.0, 17.25, 1e-9]),
                               st.one_of(st.floats(0.0, 2e9), st.just(-0.0))), min_size=1, max_size=30))
def test_the_terms_of_what_runs_until_now_are_each_stretch_s_bit_for_bit(
        half_life: float, now: float, rows: list[tuple[float, float]]) -> None:
    """What runs (every end infinity) is worked out without the time since each stretch ended:
    the same numbers as each stretch one by one (and as the general columns)."""
    cpus, start = np.array([c for c, _ in rows]), np.array([s for _, s in rows])
    got = _terms_until_now(cpus, start, now, half_life).tolist()
    want = [decayed_cpu_seconds(c, s, math.inf, now, half_life) for c, s in rows]
    assert [struct.pack("<d", g) for g in got] == [struct.pack("<d", w) for w in want]
