"""State stores: the same contract for the directory store and the memory store,
atomic replacement, and bad object ids refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.objstate import DirectoryStore, MemoryStore, check_object_id


@pytest.fixture(params=["directory", "memory"])
def store(request, tmp_path: Path):
    return DirectoryStore(tmp_path / "vault") if request.param == "directory" else MemoryStore()


def test_put_get_size_list_delete(store) -> None:
    assert store.get("a") is None and store.size("a") is None and store.list() == {}
    assert store.put("a", b"hello") == 5
    assert store.put("b~i1", b"") == 0
    assert store.get("a") == b"hello" and store.size("a") == 5
    assert store.list() == {"a": 5, "b~i1": 0}
    assert store.put("a", b"hi") == 2 and store.get("a") == b"hi"  # replaced
    assert store.delete("a") is True and store.delete("a") is False  # idempotent
    assert store.get("a") is None and store.list() == {"b~i1": 0}


@pytest.mark.parametrize("bad", ["", ".", "..", ".hidden", "a/b", "../x", "a b", "x" * 201, "é"],
                         ids=["empty", "dot", "dotdot", "leading-dot", "slash", "parent", "space", "too-long", "non-ascii"])
def test_bad_object_ids_are_refused_by_name(store, bad: str) -> None:
    with pytest.raises(ValueError, match="object id"):
        store.put(bad, b"x")
    with pytest.raises(ValueError, match="object id"):
        check_object_id(bad)


def test_directory_store_survives_a_new_store_on_the_same_directory(tmp_path: Path) -> None:
    DirectoryStore(tmp_path / "v").put("ray-a~i1", b"\x00\x01state")
    again = DirectoryStore(tmp_path / "v")
    assert again.list() == {"ray-a~i1": 7} and again.get("ray-a~i1") == b"\x00\x01state"


def test_directory_store_leaves_no_temporary_file_when_a_write_fails(tmp_path: Path, monkeypatch) -> None:
    store = DirectoryStore(tmp_path / "v")
    store.put("a", b"old")

    def broken(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr("legionrm.objstate.shelf.os.fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        store.put("a", b"new")
    assert store.get("a") == b"old"  # the old state, whole
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == ["a.state"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d~i1"]), st.binary(max_size=64) | st.none()), max_size=30))
def test_directory_and_memory_stores_agree(tmp_path_factory, ops) -> None:
    d, m = DirectoryStore(tmp_path_factory.mktemp("v")), MemoryStore()
    for oid, data in ops:
        if data is None:
            assert d.delete(oid) == m.delete(oid)
        else:
            assert d.put(oid, data) == m.put(oid, data)
    assert d.list() == m.list()
    assert all(d.get(k) == m.get(k) for k in m.list())
