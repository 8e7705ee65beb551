"""One durable record per finished instance: :class:`AccountingStore`.

A table ``accounting`` in the Scheduler's SQLite file (or in memory), one row
per instance id (a record written twice keeps the first), with the columns
``legionrm history`` filters on (user, end, state) and the whole
:class:`~legionrm.models.AccountRecord` as JSON.  The queue's fair-share usage
reads each record once, in the order written (:meth:`AccountingStore.after`).  Thread-safe (one connection behind a lock).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Iterable

from legionrm.models import AccountRecord
from legionrm.state.sqlite import StateError


class AccountingStore:
    """Records in the SQLite file ``path`` (None: in memory, gone with the process)."""

    def __init__(self, path: str | Path | None = None) -> None:
        target = ":memory:" if path is None else str(path)
        try:
            if path is not None:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            if path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS accounting (instance_id TEXT PRIMARY KEY, user TEXT NOT NULL, "
                             "ended REAL NOT NULL, state TEXT NOT NULL, body TEXT NOT NULL)")
            self._db.execute("CREATE INDEX IF NOT EXISTS accounting_ended ON accounting (ended)")
        except (OSError, sqlite3.Error) as exc:
            raise StateError(f"cannot open the accounting store {target}: {exc}") from None
        self._lock = threading.Lock()

    def add(self, records: Iterable[AccountRecord]) -> None:
        """Write each record (one already there for its instance stays)."""
        rows = [(r.instance_id, r.user, r.end, r.state, r.model_dump_json()) for r in records]
        if rows:
            with self._lock:
                self._db.executemany("INSERT OR IGNORE INTO accounting VALUES (?, ?, ?, ?, ?)", rows)

    def ids(self) -> set[str]:
        """The instance ids recorded."""
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT instance_id FROM accounting")}

    def query(self, *, user: str | None = None, since: float | None = None, until: float | None = None,
              state: str | None = None, limit: int = 100_000) -> list[AccountRecord]:
        """Records that ended in ``[since, until]``, of ``user``, in ``state``, by end time."""
        where, args = [], []
        for clause, value in (("user = ?", user), ("ended >= ?", since), ("ended <= ?", until), ("state = ?", state)):
            if value is not None:
                where.append(clause)
                args.append(value)
        sql = ("SELECT body FROM accounting" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY ended, instance_id LIMIT ?")
        with self._lock:
            rows = self._db.execute(sql, (*args, limit)).fetchall()
        return [AccountRecord.model_validate_json(r[0]) for r in rows]

    def after(self, row: int = 0, limit: int = 10_000) -> tuple[int, list[AccountRecord]]:
        """Up to ``limit`` records written after row ``row``, in the order written, and the last
        row read (``row`` when none): a reader that passes it back reads each record once."""
        with self._lock:
            rows = self._db.execute("SELECT rowid, body FROM accounting WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                    (row, limit)).fetchall()
        return (rows[-1][0] if rows else row), [AccountRecord.model_validate_json(r[1]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
