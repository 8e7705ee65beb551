"""HostStore: host bodies by name in SQLite, written in one transaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legionrm.state import HostStore
from legionrm.state.sqlite import StateError


def test_put_many_and_load_back(tmp_path: Path) -> None:
    store = HostStore(tmp_path / "sub" / "g.db")
    store.put_many({"a": json.dumps({"n": 1}), "b": json.dumps({"n": 2})})
    store.put_many({"a": json.dumps({"n": 3})})
    store.put_many({})
    assert len(store) == 2
    store.close()
    assert HostStore(tmp_path / "sub" / "g.db").load() == {"a": {"n": 3}, "b": {"n": 2}}


def test_a_bad_path_is_a_state_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StateError):
        HostStore(tmp_path / "file" / "g.db")


def test_a_store_is_not_shipped(tmp_path: Path) -> None:
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(HostStore(tmp_path / "g.db"))
