"""The accounting store's reader (:meth:`AccountingStore.after`): each record read once, in the order
written; an empty answer is known without a query until the store writes again (the queue asks every pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from legionrm.models import AccountRecord
from legionrm.state import AccountingStore


def rec(k: int, user: str = "u") -> AccountRecord:
    return AccountRecord(instance_id=f"i{k}", request_id=f"r{k}", user=user, cpus=1.0, start=0.0, end=float(k),
                         state="completed")


@pytest.mark.parametrize("on_disk", [False, True], ids=["memory", "file"])
def test_each_record_is_read_once_and_a_write_after_an_empty_answer_is_seen(tmp_path: Path, on_disk: bool) -> None:
    store = AccountingStore(tmp_path / "a.db" if on_disk else None)
    assert store.after(0) == (0, [])
    store.add([rec(1), rec(2)])
    row, got = store.after(0)
    assert [r.instance_id for r in got] == ["i1", "i2"]
    assert store.after(row) == (row, [])
    assert store.after(row) == (row, [])  # (known: nothing written since)
    store.add([rec(2)])  # already there: nothing new, and still asked
    assert store.after(row) == (row, [])
    store.add([rec(3, "v")])
    row2, got = store.after(row)
    assert [r.instance_id for r in got] == ["i3"] and row2 > row
    assert [r.instance_id for r in store.after(0)[1]] == ["i1", "i2", "i3"]  # another row: asked again


def test_an_empty_answer_asks_the_file_once_until_the_next_write() -> None:
    store = AccountingStore()
    asked: list[tuple] = []
    read = store._read
    store._read = lambda sql, args=(): asked.append(args) or read(sql, args)  # type: ignore[method-assign]
    for _ in range(3):
        assert store.after(0) == (0, [])
    assert len(asked) == 1
    store.add([rec(1)])
    assert [r.instance_id for r in store.after(0)[1]] == ["i1"]
    assert len(asked) == 2
