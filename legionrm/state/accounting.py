"""One durable record per finished instance: :class:`AccountingStore`.

A table ``accounting`` in the Scheduler's SQLite file (or in memory), one row
per instance id (a record written twice keeps the first), with the columns
``legionrm history`` filters on (user, end, state) and the whole
:class:`~legionrm.models.AccountRecord` as JSON.  The queue's fair-share usage
reads each record once, in the order written (:meth:`AccountingStore.after`).
Thread-safe (one connection behind a lock); a failed write raises
:class:`~legionrm.state.sqlite.StoreFault` with nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from legionrm.models import AccountRecord
from legionrm.state.sqlite import SqliteFile


class AccountingStore(SqliteFile):
    """Records in the SQLite file ``path`` (None: in memory, gone with the process)."""

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path, "accounting store", [
            "CREATE TABLE IF NOT EXISTS accounting (instance_id TEXT PRIMARY KEY, user TEXT NOT NULL, "
            "ended REAL NOT NULL, state TEXT NOT NULL, body TEXT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS accounting_ended ON accounting (ended)"])
        self._writes = 0  # the writes this store made (a generation number)
        self._none_after: tuple[int, int] | None = None  # (row, writes then): nothing was after that row then

    def add(self, records: Iterable[AccountRecord]) -> None:
        """Write each record (one already there for its instance stays), in one transaction."""
        rows = [(r.instance_id, r.user, r.end, r.state, r.model_dump_json()) for r in records]
        if rows:
            try:
                self._write(lambda db: db.executemany("INSERT OR IGNORE INTO accounting VALUES (?, ?, ?, ?, ?)", rows))
            finally:  # (a failed write counts too: the next read asks the file)
                self._writes += 1

    def ids(self) -> set[str]:
        """The instance ids recorded."""
        return {r[0] for r in self._read("SELECT instance_id FROM accounting")}

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
        rows = self._read(sql, (*args, limit))
        return [AccountRecord.model_validate_json(r[0]) for r in rows]

    def after(self, row: int = 0, limit: int = 10_000) -> tuple[int, list[AccountRecord]]:
        """Up to ``limit`` records written after row ``row``, in the order written, and the last
        row read (``row`` when none): a reader that passes it back reads each record once.  When
        nothing was after ``row`` at the last call and this store wrote nothing since, the answer
        is known without a query (the queue asks every pass; the Scheduler is the file's one writer)."""
        writes = self._writes
        if self._none_after == (row, writes):
            return row, []
        rows = self._read("SELECT rowid, body FROM accounting WHERE rowid > ? ORDER BY rowid LIMIT ?", (row, limit))
        self._none_after = None if rows else (row, writes)
        return (rows[-1][0] if rows else row), [AccountRecord.model_validate_json(r[1]) for r in rows]
