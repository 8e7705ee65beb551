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
from pathlib import Path
from typing import Any, Mapping

from legionrm.state.sqlite import KeyedStore, StateError


class HostStore(KeyedStore):
    """Host bodies by host name in the SQLite file ``path`` (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "hosts", "name", "host state store")

    def put_many(self, bodies: Mapping[str, str]) -> None:
        """Write each host's body (JSON text), all in one transaction."""
        self._put_rows(bodies.items())

    def load(self) -> dict[str, dict[str, Any]]:
        """Every stored host's body, by name."""
        rows = self._rows()
        try:
            return {name: json.loads(body) for name, body in rows}
        except ValueError as exc:
            raise StateError(f"the host state store {self.path} is damaged: {exc}") from None
