"""The Collection's columnar attribute table: upsert / merge / replace / remove / snapshots."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.collection.table import AttributeTable
from legionrm.errors import CollectionError, UnknownResourceError
from legionrm.mil import compile_query


def _rows(snap) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {str(n): snap.row(i) for i, n in enumerate(snap.names)}


def test_upsert_adds_and_merges() -> None:
    s = AttributeTable()
    s.upsert("h1", {"cpus": 4, "os": "linux"})
    s.upsert("h1", {"load": 0.5})
    assert s.get("h1") == {"cpus": 4, "os": "linux", "load": 0.5}
    assert "h1" in s and "h2" not in s and len(s) == 1


def test_replace_drops_attributes_not_given() -> None:
    s = AttributeTable()
    s.upsert("h1", {"cpus": 4, "os": "linux"})
    s.upsert("h1", {"cpus": 8}, replace=True)
    assert s.get("h1") == {"cpus": 8}


def test_none_removes_one_attribute() -> None:
    s = AttributeTable()
    s.upsert("h1", {"cpus": 4, "os": "linux"})
    s.upsert("h1", {"os": None, "new": None})
    assert s.get("h1") == {"cpus": 4}


def test_types_kept_exactly() -> None:
    s = AttributeTable()
    s.upsert("h", {"b": True, "i": 3, "f": 3.0, "s": "3", "big": -(2**63)})
    got = s.get("h")
    assert got == {"b": True, "i": 3, "f": 3.0, "s": "3", "big": -(2**63)}
    assert [type(got[k]) for k in ("b", "i", "f", "s")] == [bool, int, float, str]


@pytest.mark.parametrize(
    "attrs", [{"x": 2**63}, {"x": [1]}, {"x": b"raw"}, {"": 1}], ids=["int-too-big", "list", "bytes", "empty-name"]
)
def test_bad_values_refused_and_nothing_changes(attrs: dict) -> None:
    s = AttributeTable()
    s.upsert("h", {"y": 1})
    with pytest.raises(CollectionError):
        s.upsert("h", {"z": 5, **attrs})
    assert s.get("h") == {"y": 1}


def test_remove_and_unknown() -> None:
    s = AttributeTable()
    for k in range(5):
        s.upsert(f"h{k}", {"k": k})
    s.remove("h1")
    assert len(s) == 4 and "h1" not in s
    assert sorted(_rows(s.snapshot())) == ["h0", "h2", "h3", "h4"]
    assert all(r["k"] == int(n[1:]) for n, r in _rows(s.snapshot()).items())
    with pytest.raises(UnknownResourceError):
        s.remove("h1")
    with pytest.raises(UnknownResourceError):
        s.get("nope")


def test_removed_rows_never_returned_and_rows_reused() -> None:
    s = AttributeTable(capacity=2)
    s.upsert("a", {"x": 1})
    s.upsert("b", {"x": 2, "only_b": "yes"})
    s.remove("b")
    s.upsert("c", {"x": 3})
    snap = s.snapshot()
    assert len(snap) == 2
    assert _rows(snap) == {"a": {"x": 1}, "c": {"x": 3}}  # c did not inherit b's leftovers
    assert [str(snap.names[i]) for i in snap.query(compile_query("$x >= 1"))] == ["a", "c"]
    assert snap.column("only_b") is None and "only_b" not in snap.attribute_names()


def test_snapshot_is_isolated_from_every_later_change() -> None:
    s = AttributeTable(capacity=2)
    for k in range(4):
        s.upsert(f"h{k}", {"cpus": k, "os": "linux" if k % 2 else "bsd"})
    snap = s.snapshot()
    before = _rows(snap)
    mask_before = compile_query('$os == "linux"').mask(snap).copy()
    s.upsert("h1", {"cpus": 99, "os": "plan9"})  # in-place write
    s.upsert("h0", {"new": 1.5})  # new column
    s.remove("h2")  # swap-remove moves the last row
    for k in range(10, 40):  # growth reallocates
        s.upsert(f"h{k}", {"cpus": k})
    s.upsert("h3", {}, replace=True)
    assert _rows(snap) == before
    assert len(snap) == 4 and snap.column("new") is None
    assert (compile_query('$os == "linux"').mask(snap) == mask_before).all()
    with pytest.raises(ValueError):
        snap.column("cpus").i[0] = 5  # type: ignore[union-attr,index]


def test_snapshot_is_cheap_and_reused_until_change() -> None:
    s = AttributeTable()
    s.upsert("a", {"x": 1})
    s1 = s.snapshot()
    assert s.snapshot() is s1
    s.upsert("b", {"x": 2})  # append only: the arrays s1 sees are not copied
    col_before = s1.column("x")
    s2 = s.snapshot()
    assert s2 is not s1 and len(s2) == 2 and len(s1) == 1
    assert np.shares_memory(col_before.i, s2.column("x").i)  # type: ignore[union-attr,arg-type]
    s.upsert("a", {"x": 10})  # in-place write to a row both snapshots see: copy once
    assert s1.row(0) == {"x": 1} and s2.row(0) == {"x": 1} and s.get("a") == {"x": 10}


def test_uniform_and_mixed_columns() -> None:
    s = AttributeTable()
    s.upsert("a", {"x": 4, "n": 1})
    s.upsert("b", {"x": "big", "n": 2})
    s.upsert("c", {"n": 3})
    snap = s.snapshot()
    assert snap.column("n").uniform is not None  # type: ignore[union-attr]
    assert snap.column("x").uniform is None  # type: ignore[union-attr]
    q = compile_query("$x > 3")
    assert [str(snap.names[i]) for i in snap.query(q)] == ["a"]
    assert compile_query('$x == "big"').mask(snap).tolist() == [False, True, False]


def test_bulk_insert() -> None:
    s = AttributeTable()
    s.upsert("first", {"cpus": 1, "os": "bsd"})
    s.bulk_insert(
        ["n0", "n1", "n2"],
        {"cpus": np.array([4, 8, 16]), "os": np.array(["linux", "bsd", "linux"]), "gpu": [None, True, None]},
    )
    assert s.get("n1") == {"cpus": 8, "os": "bsd", "gpu": True}
    assert s.get("first") == {"cpus": 1, "os": "bsd"}
    snap = s.snapshot()
    assert sorted(str(snap.names[i]) for i in snap.query(compile_query('$os == "linux" and $cpus > 4'))) == ["n2"]
    with pytest.raises(CollectionError):
        s.bulk_insert(["n0"], {"cpus": np.array([1])})
    with pytest.raises(CollectionError):
        s.bulk_insert(["z"], {"cpus": np.array([1, 2])})


def test_bulk_insert_into_empty_table() -> None:
    s = AttributeTable()
    s.bulk_insert(["a", "b"], {"x": np.array([1, 5]), "f": np.array([0.5, 1.5]), "ok": np.array([True, False])})
    snap = s.snapshot()
    assert snap.column("x").uniform is not None  # type: ignore[union-attr]
    assert _rows(snap) == {"a": {"x": 1, "f": 0.5, "ok": True}, "b": {"x": 5, "f": 1.5, "ok": False}}
    assert snap.query(compile_query("$x > 2 and $f > 1 and not $ok")).tolist() == [1]


def test_bulk_insert_mixed_and_partial_columns() -> None:
    s = AttributeTable()
    s.bulk_insert(["a", "b"], {"x": np.array([1, 2])})
    s.bulk_insert(["c", "d"], {"x": [3.5, None], "y": np.array(["p", "q"])})
    s.bulk_insert(["e"], {"y": np.array(["p"])})
    assert _rows(s.snapshot()) == {
        "a": {"x": 1}, "b": {"x": 2}, "c": {"x": 3.5, "y": "p"}, "d": {"y": "q"}, "e": {"y": "p"}
    }
    assert s.snapshot().query(compile_query('$y == "p" or $x > 1')).tolist() == [1, 2, 4]


# (id, capacity, rows upserted first, columns of an empty bulk insert): adding
# no rows changes nothing, even when the table is exactly full.
EMPTY_BULK = [
    ("full-table-existing-column", 2, 2, {"x": np.array([], dtype=np.int64)}),
    ("full-table-new-column", 2, 2, {"new": []}),
    ("full-table-no-columns", 1, 1, {}),
    ("empty-table", 4, 0, {"x": []}),
]


@pytest.mark.parametrize("cap,rows,columns", [c[1:] for c in EMPTY_BULK], ids=[c[0] for c in EMPTY_BULK])
def test_empty_bulk_insert_is_a_no_op(cap: int, rows: int, columns: dict) -> None:
    s = AttributeTable(capacity=cap)
    for k in range(rows):
        s.upsert(f"h{k}", {"x": k})
    before, version = _rows(s.snapshot()), s.version
    s.bulk_insert([], columns)
    assert _rows(s.snapshot()) == before and s.version == version
    s.upsert("later", {"x": 9})  # the table still works afterwards
    assert _rows(s.snapshot())["later"] == {"x": 9}


def test_index_of_name() -> None:
    s = AttributeTable()
    for k in range(3):
        s.upsert(f"h{k}", {})
    snap = s.snapshot()
    assert snap.index("h2") == 2 and snap.index("zz") is None


_val = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.text(max_size=3))
_op = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from("abcdef"), st.dictionaries(st.sampled_from("xyz"), _val, max_size=3), st.booleans()),
    st.tuples(st.just("remove"), st.sampled_from("abcdef")),
    st.tuples(st.just("many"), st.lists(st.tuples(st.sampled_from("abcdef"), st.dictionaries(
        st.sampled_from("xyz"), st.one_of(_val, st.floats(0, 9), st.integers(0, 9)), max_size=3)), max_size=4)),
    st.tuples(st.just("snap")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_op, max_size=40))
def test_table_matches_a_dict_model(ops: list) -> None:  # type: ignore[type-arg]
    """Against a plain dict of dicts; every snapshot keeps the state it was taken in."""
    s = AttributeTable(capacity=1)
    model: dict[str, dict] = {}
    snaps = []
    for op in ops:
        if op[0] == "upsert":
            _, name, attrs, replace = op
            rec = {} if replace else dict(model.get(name, {}))
            for k, v in attrs.items():
                if v is None:
                    rec.pop(k, None)
                else:
                    rec[k] = v
            model[name] = rec
            s.upsert(name, attrs, replace=replace)
        elif op[0] == "many":  # heartbeats (column writes; the snapshot's unwritten columns kept)
            known = [(name, attrs) for name, attrs in op[1] if name in model]
            for name, attrs in known:
                model[name] = {k: v for k, v in {**model[name], **attrs}.items() if v is not None}
            assert s.update_many(known) == []
        elif op[0] == "remove":
            if op[1] in model:
                del model[op[1]]
                s.remove(op[1])
            else:
                with pytest.raises(UnknownResourceError):
                    s.remove(op[1])
        else:
            snaps.append((s.snapshot(), {k: dict(v) for k, v in model.items()}))
    snaps.append((s.snapshot(), model))
    for snap, state in snaps:
        assert _rows(snap) == state
        q = compile_query("$x == $x or $y > 0")
        assert snap.query(q).tolist() == [
            i for i, n in enumerate(snap.names) if q.matches(state[str(n)])
        ]
