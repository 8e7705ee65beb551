"""What host objects must not forget, in SQLite: :class:`HostStore`.

One file per host group (or host actor): one row per host, its body a JSON
object the host object writes (its secret, its token serial, its open
reservations and its instances; see :mod:`legionrm.hostobj.durable`).  A
restarted host group reloads it, so it never reissues a token id and it
honours the tokens it granted.  :meth:`HostStore.put_many` writes every
changed row in one transaction (WAL: a commit survives a process crash).
Thread-safe (one connection behind a lock).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Mapping

from legionrm.state.requests import StateError

SCHEMA = """
CREATE TABLE IF NOT EXISTS hosts (
    name TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
"""


class HostStore:
    """Host bodies by host name in the SQLite file ``path`` (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StateError(f"cannot open the host state store {self.path}: {exc}") from None
        self._lock = threading.Lock()

    def put_many(self, bodies: Mapping[str, str]) -> None:
        """Write each host's body (JSON text), all in one transaction."""
        if not bodies:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO hosts (name, body) VALUES (?, ?)", list(bodies.items()))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def load(self) -> dict[str, dict[str, Any]]:
        """Every stored host's body, by name."""
        with self._lock:
            rows = self._db.execute("SELECT name, body FROM hosts").fetchall()
        try:
            return {name: json.loads(body) for name, body in rows}
        except ValueError as exc:
            raise StateError(f"the host state store {self.path} is damaged: {exc}") from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM hosts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __getstate__(self) -> Any:  # a store is opened where it is used, never shipped
        raise TypeError("a HostStore is not picklable: pass its path")
