"""What every state store shares: one SQLite file in WAL mode, one table of
``(key, body)`` rows, one connection behind a lock.  :class:`KeyedStore`
opens it (creating it 0600 and its folder 0700: the home is the service's),
writes rows in one transaction, reads them all back, counts and closes; a
store is opened where it is used, never shipped to another process."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterable

from legionrm.errors import LegionError
from legionrm.homefs import private_file


class StateError(LegionError):
    """The state store cannot be opened or read."""


class KeyedStore:
    """``(key, body)`` rows in table ``table`` of the SQLite file ``path``.
    ``what`` names the store in errors ("state store", "host state store")."""

    def __init__(self, path: str | Path, table: str, key: str, what: str) -> None:
        self.path = Path(path)
        self._table, self._key, self.what = table, key, what
        try:
            private_file(self.path)  # 0600 before SQLite opens it: its -wal and -shm files take its mode
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a process crash
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({key} TEXT PRIMARY KEY, body TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise StateError(f"cannot open the {what} {self.path}: {exc}") from None
        self._lock = threading.Lock()

    def _put_rows(self, rows: Iterable[tuple[str, str]], delete: Iterable[str] = ()) -> None:
        """Write (replace) each ``(key, body)`` row and delete the rows keyed
        ``delete`` (unknown keys are ignored), all in one transaction."""
        rows, gone = list(rows), [(k,) for k in delete]
        if not rows and not gone:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(f"INSERT OR REPLACE INTO {self._table} ({self._key}, body) VALUES (?, ?)", rows)
                self._db.executemany(f"DELETE FROM {self._table} WHERE {self._key} = ?", gone)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _rows(self) -> list[tuple[str, str]]:
        """Every ``(key, body)`` row."""
        with self._lock:
            return self._db.execute(f"SELECT {self._key}, body FROM {self._table}").fetchall()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __getstate__(self) -> Any:  # a store is opened where it is used, never shipped
        raise TypeError(f"a {type(self).__name__} is not picklable: pass its path")
