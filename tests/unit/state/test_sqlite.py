"""The SQLite layer under every store: a write that fails says why in one line
(the commit's error, never the rollback's), leaves nothing written, and the
same store writes again once space returns; write-ahead logs stay small."""

from __future__ import annotations

import errno
import json
import os
import pickle
import sqlite3
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from legionrm import codes, faults
from legionrm.state import HostStore, StoreFault
from legionrm.state.sqlite import JOURNAL_SIZE_LIMIT, WAL_AUTOCHECKPOINT, fault_of


@pytest.mark.parametrize("exc, code", [
    (OSError(errno.ENOSPC, "No space left on device"), codes.STATE_DISK_FULL),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), codes.STATE_DISK_FULL),
    (OSError(errno.EIO, "Input/output error"), codes.STATE_IO_ERROR),
    (sqlite3.OperationalError("database or disk is full"), codes.STATE_DISK_FULL),
    (sqlite3.OperationalError("disk I/O error"), codes.STATE_IO_ERROR),
], ids=["enospc", "edquot", "eio", "sqlite-full", "sqlite-ioerr"])
def test_a_failed_write_is_named_by_its_cause(exc: BaseException, code: str) -> None:
    fault = fault_of(exc, "state store", "/home/state/scheduler.db")
    assert fault.code == code
    assert str(fault).startswith(f"{code}: cannot write the state store /home/state/scheduler.db: ")
    assert "\n" not in str(fault)
    assert pickle.loads(pickle.dumps(fault)).code == code  # it crosses Ray as itself


@pytest.mark.parametrize("fault", ["full", "io"])
def test_a_failed_commit_writes_nothing_and_the_store_writes_again(tmp_path: Path, fault: str) -> None:
    store = HostStore(tmp_path / "g.db")
    store.put_many({"a": json.dumps({"n": 1})})
    with faults.inject(fault, "g.db"), pytest.raises(StoreFault) as caught:  # type: ignore[arg-type]
        store.put_many({"a": json.dumps({"n": 2}), "b": json.dumps({"n": 3})})
    assert caught.value.code == (codes.STATE_DISK_FULL if fault == "full" else codes.STATE_IO_ERROR)
    assert "rollback" not in str(caught.value) and str(tmp_path / "g.db") in str(caught.value)
    assert store.fault is caught.value and store.load() == {"a": {"n": 1}}  # reads go on; nothing was written
    store.put_many({"b": json.dumps({"n": 3})})
    assert store.fault is None and HostStore(tmp_path / "g.db").load() == {"a": {"n": 1}, "b": {"n": 3}}


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real filesystem of 512 KB (a tmpfs, when this may mount one), unmounted after."""
    where = tmp_path / "small"
    where.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_filesystem_is_disk_full_and_space_coming_back_needs_no_reopen(small_fs: Path) -> None:
    filler = small_fs / "filler"
    filler.write_bytes(b"\0" * 256 * 1024)  # what else fills the disk, freed later
    store = HostStore(small_fs / "g.db")
    big = "x" * 20_000
    written = 0
    with pytest.raises(StoreFault) as caught:
        for k in range(100):  # 2 MB into what is left of 512 KB
            store.put_many({f"h{k}": json.dumps(big)})
            written += 1
    assert caught.value.code == codes.STATE_DISK_FULL, caught.value
    assert "rollback" not in str(caught.value) and str(small_fs / "g.db") in str(caught.value)
    assert len(store) == written  # every acknowledged write is there, the failed one is not
    filler.unlink()  # space comes back: the same store object writes again
    store.put_many({"after": json.dumps(big)})
    assert store.fault is None and "after" in store.load()


def test_the_write_ahead_log_stays_small_and_is_truncated_when_idle(tmp_path: Path) -> None:
    store = HostStore(tmp_path / "g.db")
    wal = Path(f"{tmp_path / 'g.db'}-wal")
    for k in range(400):  # 1.2 MB written, 150 KB kept
        store.put_many({f"h{k % 50}": json.dumps({"n": k, "pad": "y" * 3000})})
    # SQLite checkpoints every WAL_AUTOCHECKPOINT pages and cuts the log back to JOURNAL_SIZE_LIMIT
    assert wal.stat().st_size <= max(JOURNAL_SIZE_LIMIT, (WAL_AUTOCHECKPOINT + 10) * 4200)
    assert store.maintain(force=True) and wal.stat().st_size == 0
    assert store.maintain(force=True) is False  # nothing to do: an idle store does no work
    assert 0 < store.size() < 400_000  # about what it holds, not what was ever written
