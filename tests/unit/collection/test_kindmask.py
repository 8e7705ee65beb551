"""The kept mask of ``$kind == "..."`` (legionrm.collection.kindmask) is the one
worked out afresh, on every snapshot, old or new, after any sequence of joins,
heartbeats, kind changes and leaves (the table's copy-on-write is what keeps it right)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.collection.kindmask import KIND_QUERY, kind_mask
from legionrm.collection.table import AttributeTable
from legionrm.mil import compile_query

NAMES = [f"r{k}" for k in range(6)]
KINDS = st.sampled_from(["host", "vault", "Host", 3, None])
OPS = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from(NAMES), KINDS, st.integers(0, 8)),
    st.tuples(st.just("many"), st.lists(st.tuples(st.sampled_from(NAMES), KINDS, st.integers(0, 8)), max_size=4)),
    st.tuples(st.just("remove"), st.sampled_from(NAMES)),
    st.tuples(st.just("snap")),
)
QUERIES = ['$kind == "host"', '$kind == "vault"', '$kind == "gone"']


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(OPS, max_size=30), capacity=st.integers(1, 8))
def test_kept_mask_is_the_fresh_one_after_any_changes(ops: list[tuple], capacity: int) -> None:  # type: ignore[type-arg]
    t = AttributeTable(capacity=capacity)
    snaps = [t.snapshot()]
    for op in ops:
        if op[0] == "upsert":
            t.upsert(op[1], {"kind": op[2], "cpus": op[3]})
        elif op[0] == "many":
            known = [(n, {"kind": k, "cpus": c}) for n, k, c in op[1] if n in t.names()]
            t.update_many(known)
        elif op[0] == "remove" and op[1] in t.names():
            t.remove(op[1])
        snaps.append(t.snapshot())
        for snap in (snaps[-1], snaps[len(snaps) // 2], snaps[0]):  # old snapshots keep their own answer
            for text in QUERIES:
                want = compile_query(text).mask(snap)
                got = kind_mask(text, snap, lambda text=text, snap=snap: compile_query(text).mask(snap))
                assert np.array_equal(got, want), (text, snap.names)


def test_kept_queries_are_plain_kind_comparisons() -> None:
    assert all(KIND_QUERY.fullmatch(q) for q in QUERIES)
    assert not any(KIND_QUERY.fullmatch(q) for q in ['$kind == "host" or true', '$nodepool == "a"', '$kind != "host"'])


def test_a_kept_mask_is_handed_out_fresh() -> None:
    t = AttributeTable()
    t.upsert("a", {"kind": "host"})
    snap = t.snapshot()
    first = kind_mask('$kind == "host"', snap, lambda: compile_query('$kind == "host"').mask(snap))
    first[:] = False
    assert kind_mask('$kind == "host"', snap, lambda: np.zeros(1, bool)).tolist() == [True]  # (the kept one)
