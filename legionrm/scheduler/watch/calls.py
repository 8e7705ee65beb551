"""The Scheduler actor's calls about what work left: a run's output
(``legionrm logs``) and the accounting records (``legionrm history``)
(:class:`WorkCalls`); the book's pages (:class:`HistoryCalls`).
Mixins of :class:`~legionrm.scheduler.actor.SchedulerActor`; each call
goes through its door (:class:`~legionrm.scheduler.door.SchedulerDoor`)."""

from __future__ import annotations

from typing import Any

from legionrm.models import AccountRecord
from legionrm.models.api import RequestList


class WorkCalls:
    door: Any

    def logs(self, request_id: str, instance: int | str | None = None, stream: str = "stdout", offset: int = 0,
             limit: int = 1 << 20, proof: Any = None) -> tuple[bytes, int, bool]:
        """A run's ``stream`` from ``offset``: its bytes, the offset to read on from, and whether it
        still runs (its request's owner or an admin)."""
        return self.door.logs(request_id, instance, stream, offset, limit, proof)  # type: ignore[no-any-return]

    def history(self, user: str | None = None, since: float | None = None, until: float | None = None,
                state: str | None = None, proof: Any = None) -> list[AccountRecord]:
        """Finished instances' records, by end time (a user: their own)."""
        return self.door.history(user, since, until, state, proof)  # type: ignore[no-any-return]


class HistoryCalls:
    """The actor's calls about the book's history: ``legionrm list``'s pages
    (live, recent and, with ``every``, archived requests)."""

    door: Any

    def list_page(self, user: str | None = None, state: str | None = None, every: bool = False,
                  limit: int | None = None, cursor: str | None = None, proof: Any = None) -> RequestList:
        """One page of ``legionrm list`` (a user: their own)."""
        return self.door.list_page(user, state, every, limit, cursor, proof)  # type: ignore[no-any-return]
