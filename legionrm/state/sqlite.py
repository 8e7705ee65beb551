"""What every state store shares: one SQLite file in WAL mode, one connection
behind a lock.  :class:`SqliteFile` opens it (creating it 0600 and its folder
0700: the home is the service's), writes in one transaction, checkpoints and
truncates its write-ahead log, and says how big it is and whether its last
write failed; :class:`KeyedStore` adds one table of ``(key, body)`` rows.  A
store is opened where it is used, never shipped to another process.

A write either commits or raises :class:`StoreFault` (``state.disk_full`` or
``state.io_error``, naming the file and SQLite's own words) with nothing
written: the caller applies a change only after its write returned, so a
failed write leaves memory as it was.  A commit that failed is reported as
itself, never as the rollback that followed it.  Every write passes the fault
seam (:mod:`legionrm.faults`), where the tests inject full disks, I/O
errors, failed syncs and crashes.

A durable write (a group commit) commits under the store's lock and syncs
the write-ahead log outside it, one fsync for every commit made before it
(:meth:`SqliteFile.synced`, :mod:`legionrm.state.groupsync`); a failed sync
stops the store's writes.

Bounded files: SQLite checkpoints the log every :data:`WAL_AUTOCHECKPOINT`
pages and cuts it back to :data:`JOURNAL_SIZE_LIMIT`; :meth:`SqliteFile.maintain`
(after writes, and on the owners' idle timers) truncates it to nothing once
:data:`CHECKPOINT_EVERY_S` passed, so an idle system's files stay small.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from legionrm import codes
from legionrm.errors import LegionError
from legionrm.homefs import private_file
from legionrm import faults
from legionrm.state.groupsync import GroupSync

WAL_AUTOCHECKPOINT = 100
"""Pages (4 KB each) the write-ahead log may hold before SQLite checkpoints it (its default: 1000)."""
JOURNAL_SIZE_LIMIT = 256 * 1024
"""Bytes a write-ahead log is cut back to after each checkpoint."""
CHECKPOINT_EVERY_S = 10.0
"""How often, at most, a store that was written truncates its log to nothing."""

log = logging.getLogger(__name__)

_FULL = 13  # SQLITE_FULL (its primary code; extended codes keep it in the low byte)


class StateError(LegionError):
    """The state store cannot be opened or read."""


class StoreFault(StateError):
    """A write the store could not make (``code``: ``state.disk_full`` or
    ``state.io_error``); nothing of it was written.  One line: the code, the
    file and the cause as the disk gave it."""

    def __init__(self, code: str, what: str, path: str, cause: str) -> None:
        self.code, self.what, self.path, self.cause = code, what, path, cause
        super().__init__(f"{code}: cannot write the {what} {path}: {cause}")

    def __reduce__(self) -> Any:  # crosses Ray as itself
        return (StoreFault, (self.code, self.what, self.path, self.cause))


def fault_of(exc: BaseException, what: str, path: str | Path) -> StoreFault:
    """The :class:`StoreFault` a failed write's ``exc`` (SQLite's or the OS's) means."""
    if isinstance(exc, StoreFault):
        return exc
    if isinstance(exc, OSError):
        full = exc.errno in (28, 122)  # ENOSPC, EDQUOT
        cause = exc.strerror or str(exc)
    else:
        full = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == _FULL or "full" in str(exc)
        cause = str(exc)
    return StoreFault(codes.STATE_DISK_FULL if full else codes.STATE_IO_ERROR, what, str(path), cause)


class SqliteFile:
    """The SQLite file ``path`` (None: in memory, gone with the process), named
    ``what`` in errors ("state store", "host state store"), with ``schema``
    (statements run once it is open)."""

    def __init__(self, path: str | Path | None, what: str, schema: Iterable[str] = ()) -> None:
        self.path = Path(path) if path is not None else None
        self.what = what
        self.fault: StoreFault | None = None
        """The last write's failure (None once a write succeeds again): what ``status`` shows."""
        target = ":memory:" if path is None else str(path)
        try:
            if self.path is not None:
                private_file(self.path)  # 0600 before SQLite opens it: its -wal and -shm files take its mode
            self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a process crash
                self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")
                self._db.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
            for statement in schema:
                self._db.execute(statement)
        except (OSError, sqlite3.Error) as exc:
            raise StateError(f"cannot open the {what} {target}: {exc}") from None
        self._lock = threading.Lock()
        self._checked = time.monotonic()
        self._wal_fd: int | None = None
        self._group = GroupSync(self._sync_log, self._sync_fault)

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else ":memory:"

    def _write(self, work: Callable[[sqlite3.Connection], object], durable: bool = False, wait: bool = True) -> int:
        """Run ``work`` in one transaction and commit it, or raise
        :class:`StoreFault` with nothing written (SQLite may have rolled back
        already: the commit's own error is the one raised).  A plain write
        survives a crash of the process, not of the machine.  ``durable``: the
        commit is synced to the disk too, outside the store's lock (see
        :meth:`synced`), before this returns; with ``wait = False`` it returns
        at once, and the caller must pass the ticket it returns to
        :meth:`synced` before it tells anyone the write is done (0: nothing to
        wait for).  After a failed sync the store is stopped: every write
        raises that sync's fault (``state.io_error``)."""
        with self._lock:
            if self._group.fault is not None:  # fail-stop: see legionrm.state.groupsync
                raise self._group.fault
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    work(self._db)
                    faults.hit(self.where, "write")
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        try:
                            self._db.execute("ROLLBACK")
                        except sqlite3.Error:  # the write's error is the one to report
                            pass
                    raise
            except (sqlite3.Error, OSError) as exc:
                self.fault = fault_of(exc, self.what, self.where)
                raise self.fault from None
            self.fault = None
            ticket = self._group.committed() if durable and self.path is not None else 0
        faults.hit(self.where, "applied")  # a fault test's crash: written, never applied
        self.maintain()
        if wait:
            self.synced(ticket)
        return ticket

    def synced(self, ticket: int) -> None:
        """Return once the commit ``ticket`` (from :meth:`_write`) is on the disk: one fsync of the
        write-ahead log covers every commit made before it began, and runs outside the store's lock,
        so other writes commit while it is in the kernel (:class:`~legionrm.state.groupsync.GroupSync`).
        Raises the sync's :class:`StoreFault` (``state.io_error``) if it failed; the store is stopped then.

        Why a sync of the log file is the commit's durability (SQLite's documentation, ``PRAGMA
        synchronous`` and "Write-Ahead Logging"): in WAL mode a commit appends its pages to the
        ``-wal`` file, its last frame marked as a commit, each frame checksummed over every frame before
        it; recovery replays the frames up to the last valid commit frame.  With ``synchronous=NORMAL``
        the log is synced only before a checkpoint (so a commit may be lost to a power cut, never to a
        crash of the process); ``FULL`` adds one sync of the log after each commit, which is what
        this does, once for many.  A commit's frames are either still in the log, and the fsync of
        the file (its inode, whoever wrote it) makes them durable, or a checkpoint copied them into
        the database, and a checkpoint syncs the log before it copies and the database after; the
        log is reset (written again from its start) only once every frame in it is in the synced
        database.  So a commit that returned before the fsync began survives a crash of the machine
        once the fsync returns.  The directory entry of the log is synced once, when its file is first
        opened here (SQLite syncs it only at its own first sync of the log)."""
        if ticket:
            self._group.wait(ticket)

    def _sync_log(self) -> None:
        """fsync the write-ahead log (opened once; again, with its folder synced, if it was replaced)."""
        faults.hit(self.where, "sync")
        wal = f"{self.path}-wal"
        ino = os.stat(wal).st_ino
        if self._wal_fd is None or os.fstat(self._wal_fd).st_ino != ino:
            if self._wal_fd is not None:
                os.close(self._wal_fd)
            self._wal_fd = os.open(wal, os.O_RDONLY)
            folder = os.open(os.path.dirname(wal) or ".", os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        os.fsync(self._wal_fd)

    def _sync_fault(self, exc: BaseException) -> StoreFault:
        """The fault a failed sync of the log answers with, and the store's from then on."""
        cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.fault = StoreFault(codes.STATE_IO_ERROR, self.what, self.where,
                                f"the sync of its log failed ({cause}): the store takes no more writes")
        return self.fault

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def maintain(self, force: bool = False) -> bool:
        """Truncate the write-ahead log to nothing when it holds anything (this
        store's writes or another's on the same file) and :data:`CHECKPOINT_EVERY_S`
        passed since the last look (``force``: now); True when it did.  A
        checkpoint that cannot finish now (a reader, a full disk) waits for a later call."""
        now = time.monotonic()
        if self.path is None or self._group.fault is not None or (not force and now - self._checked < CHECKPOINT_EVERY_S):
            return False
        self._checked = now
        wal = Path(f"{self.path}-wal")
        if not wal.exists() or wal.stat().st_size == 0:
            return False
        with self._lock:
            try:
                busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                log.warning("%s %s: checkpoint failed: %s", self.what, self.path, exc)
                return False
            return not busy

    def size(self) -> int:
        """Bytes the store's files hold on disk (the database, its log and its index)."""
        if self.path is None:
            return 0
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
                   if p.exists())

    def close(self) -> None:
        with self._lock:
            self._db.close()
            if self._wal_fd is not None:
                os.close(self._wal_fd)
                self._wal_fd = None

    def __getstate__(self) -> Any:  # a store is opened where it is used, never shipped
        raise TypeError(f"a {type(self).__name__} is not picklable: pass its path")


class KeyedStore(SqliteFile):
    """``(key, body)`` rows in table ``table`` of the SQLite file ``path``.
    ``what`` names the store in errors ("state store", "host state store")."""

    def __init__(self, path: str | Path, table: str, key: str, what: str) -> None:
        super().__init__(path, what, [f"CREATE TABLE IF NOT EXISTS {table} ({key} TEXT PRIMARY KEY, body TEXT NOT NULL)"])
        self._table, self._key = table, key

    def _put_rows(self, rows: Iterable[tuple[str, str]], delete: Iterable[str] = (), durable: bool = False,
                  wait: bool = True) -> int:
        """Write (replace) each ``(key, body)`` row and delete the rows keyed ``delete`` (unknown keys
        are ignored), all in one transaction (``durable``, ``wait`` and the ticket: see :meth:`_write`).
        A row already there gets its new body in place (an upsert: SQLite updates the row where it is,
        where ``INSERT OR REPLACE`` deleted it and inserted it anew, rewriting its key's index entry too);
        the table holds the same ``(key, body)`` rows either way."""
        rows, gone = list(rows), [(k,) for k in delete]
        if not rows and not gone:
            return 0

        def work(db: sqlite3.Connection) -> None:
            if rows:
                db.executemany(f"INSERT INTO {self._table} ({self._key}, body) VALUES (?, ?) "
                               f"ON CONFLICT ({self._key}) DO UPDATE SET body = excluded.body", rows)
            if gone:
                db.executemany(f"DELETE FROM {self._table} WHERE {self._key} = ?", gone)

        return self._write(work, durable, wait)

    def _rows(self) -> list[tuple[str, str]]:
        """Every ``(key, body)`` row."""
        return self._read(f"SELECT {self._key}, body FROM {self._table}")

    def __len__(self) -> int:
        return int(self._read(f"SELECT COUNT(*) FROM {self._table}")[0][0])
