"""State shelves: the same contract for the directory shelf and the memory shelf,
atomic replacement, and bad object ids refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.objstate import DirectoryShelf, MemoryShelf, check_object_id


@pytest.fixture(params=["directory", "memory"])
def shelf(request, tmp_path: Path):
    return DirectoryShelf(tmp_path / "vault") if request.param == "directory" else MemoryShelf()


def test_put_get_size_list_delete(shelf) -> None:
    assert shelf.get("a") is None and shelf.size("a") is None and shelf.list() == {}
    assert shelf.put("a", b"hello") == 5
    assert shelf.put("b~i1", b"") == 0
    assert shelf.get("a") == b"hello" and shelf.size("a") == 5
    assert shelf.list() == {"a": 5, "b~i1": 0}
    assert shelf.put("a", b"hi") == 2 and shelf.get("a") == b"hi"  # replaced
    assert shelf.delete("a") is True and shelf.delete("a") is False  # idempotent
    assert shelf.get("a") is None and shelf.list() == {"b~i1": 0}


@pytest.mark.parametrize("bad", ["", ".", "..", ".hidden", "a/b", "../x", "a b", "x" * 201, "é"],
                         ids=["empty", "dot", "dotdot", "leading-dot", "slash", "parent", "space", "too-long", "non-ascii"])
def test_bad_object_ids_are_refused_by_name(shelf, bad: str) -> None:
    with pytest.raises(ValueError, match="object id"):
        shelf.put(bad, b"x")
    with pytest.raises(ValueError, match="object id"):
        check_object_id(bad)


def test_directory_shelf_survives_a_new_shelf_on_the_same_directory(tmp_path: Path) -> None:
    DirectoryShelf(tmp_path / "v").put("ray-a~i1", b"\x00\x01state")
    again = DirectoryShelf(tmp_path / "v")
    assert again.list() == {"ray-a~i1": 7} and again.get("ray-a~i1") == b"\x00\x01state"


def test_directory_shelf_leaves_no_temporary_file_when_a_write_fails(tmp_path: Path, monkeypatch) -> None:
    shelf = DirectoryShelf(tmp_path / "v")
    shelf.put("a", b"old")

    def broken(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr("legionrm.objstate.shelf.os.fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        shelf.put("a", b"new")
    assert shelf.get("a") == b"old"  # the old state, whole
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == ["a.state"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d~i1"]), st.binary(max_size=64) | st.none()), max_size=30))
def test_directory_and_memory_shelves_agree(tmp_path_factory, ops) -> None:
    d, m = DirectoryShelf(tmp_path_factory.mktemp("v")), MemoryShelf()
    for oid, data in ops:
        if data is None:
            assert d.delete(oid) == m.delete(oid)
        else:
            assert d.put(oid, data) == m.put(oid, data)
    assert d.list() == m.list()
    assert all(d.get(k) == m.get(k) for k in m.list())
