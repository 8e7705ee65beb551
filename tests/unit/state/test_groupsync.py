"""One sync for many commits, outside the writers' lock: a waiter returns only once a sync that began
after its commit finished; a failed sync answers every waiter it was to cover, and every later one,
with its fault; and the store stops writing after one."""

from __future__ import annotations

import errno
import json
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm import codes, faults
from legionrm.state import HostStore, RequestStore, StoreFault
from legionrm.state.groupsync import GroupSync
from tests.unit.scheduler.test_lifecycle import req


class Disk:
    """A model of a file and its disk: a commit lands in the page cache, a sync copies it to the disk;
    the sync numbered ``fail_at`` (1-based) fails with EIO instead."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.cache: list[int] = []
        self.disk: set[int] = set()
        self.calls, self.fail_at = 0, fail_at
        self.lock = threading.Lock()
        self.group = GroupSync(self.sync, lambda exc: StoreFault(codes.STATE_IO_ERROR, "model", "m", str(exc)))

    def commit(self, item: int) -> int:
        with self.lock:  # the writers' lock: commit and ticket in one order
            self.cache.append(item)
            return self.group.committed()

    def sync(self) -> None:
        with self.lock:
            self.calls += 1
            if self.calls == self.fail_at:
                raise OSError(errno.EIO, "Input/output error")
            cached = list(self.cache)
        self.disk.update(cached)


def run(disk: Disk, writers: int, each: int) -> dict[int, object]:
    """``writers`` threads, each committing ``each`` items and waiting for each; what each wait gave."""
    out: dict[int, object] = {}
    start = threading.Barrier(writers)

    def writer(w: int) -> None:
        start.wait()
        for n in range(each):
            item = w * 1000 + n
            ticket = disk.commit(item)
            try:
                disk.group.wait(ticket)
                out[item] = item in disk.disk  # on the disk when the wait returned
            except StoreFault as fault:
                out[item] = fault

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@settings(max_examples=30, deadline=None)
@given(writers=st.integers(1, 6), each=st.integers(1, 8))
def test_a_wait_returns_only_once_its_commit_is_on_the_disk(writers: int, each: int) -> None:
    disk = Disk()
    out = run(disk, writers, each)
    assert len(out) == writers * each and all(v is True for v in out.values())
    assert disk.group.syncs <= writers * each  # never more syncs than commits (fewer when they overlap)


@settings(max_examples=30, deadline=None)
@given(writers=st.integers(1, 5), each=st.integers(1, 6), fail_at=st.integers(1, 6))
def test_a_failed_sync_is_never_answered_as_success(writers: int, each: int, fail_at: int) -> None:
    """Every wait either saw its commit on the disk or heard the fault; after the fault, none succeeds."""
    disk = Disk(fail_at)
    out = run(disk, writers, each)
    assert all(v is True or isinstance(v, StoreFault) for v in out.values())
    if disk.calls >= fail_at:  # the failing sync ran: the group stopped
        assert disk.group.fault is not None and disk.group.fault.code == codes.STATE_IO_ERROR
        with pytest.raises(StoreFault):
            disk.group.wait(disk.commit(-1))
    assert not any(v is True and k not in disk.disk for k, v in out.items())


def test_one_sync_covers_the_commits_made_while_another_was_in_the_kernel() -> None:
    """The first sync is held until two more commits are made; the two waiters are answered by one sync."""
    disk = Disk()
    both = threading.Event()
    real = disk.sync
    disk.group._sync = lambda: (both.wait(30), real())  # type: ignore[method-assign]
    first = disk.commit(1)
    waits = [threading.Thread(target=disk.group.wait, args=(first,))]
    waits[0].start()
    for item in (2, 3):
        ticket = disk.commit(item)
        waits.append(threading.Thread(target=disk.group.wait, args=(ticket,)))
        waits[-1].start()
    both.set()
    for t in waits:
        t.join()
    assert disk.disk == {1, 2, 3} and disk.group.syncs == 2


def test_a_store_whose_log_sync_failed_stops_writing(tmp_path: Path) -> None:
    """A durable write whose sync fails raises ``state.io_error``; the store then refuses every write
    (fail-stop) and keeps no checkpoint, while reads go on."""
    store = RequestStore(tmp_path / "r.db")
    item = dict(request=req("a"), submitted=1.0, state="pending", reason="", history=[], instances={}, refs={},
                failures=(), earliest_start=None, attempts=0)
    store.put_many([item])
    with faults.inject("sync", "r.db", times=1), pytest.raises(StoreFault) as caught:
        store.put_many([{**item, "request": req("b")}])
    assert caught.value.code == codes.STATE_IO_ERROR and "sync" in str(caught.value)
    assert store.fault is caught.value
    for write in (lambda: store.put_many([{**item, "request": req("c")}]), lambda: store.put(**item)):
        with pytest.raises(StoreFault) as again:
            write()
        assert again.value is caught.value
    assert not store.maintain(force=True)
    assert {s.request.request_id for s in store.load()} >= {"a"}


def test_a_durable_write_syncs_the_log_once_and_a_plain_write_not(tmp_path: Path, monkeypatch) -> None:
    import os
    store = HostStore(tmp_path / "h.db")
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    store.put_many({"a": json.dumps({"n": 1})})
    assert synced == []
    store._put_rows([("b", "{}")], durable=True)
    assert len(synced) >= 1 and store._group.syncs == 1
