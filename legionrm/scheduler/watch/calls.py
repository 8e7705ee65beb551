"""The Scheduler actor's calls about what work left: a run's output
(``legionrm logs``) and the accounting records (``legionrm history``)
(:class:`WorkCalls`); the book's pages and the repair's cancels (:class:`HistoryCalls`).
Mixins of :class:`~legionrm.scheduler.actor.SchedulerActor`; each call
goes through its door (:class:`~legionrm.scheduler.door.SchedulerDoor`)."""

from __future__ import annotations

from typing import Any

import ray

from legionrm.auth import signed
from legionrm.hostobj.actor import WATCH_TIMEOUT_S
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
    (live, recent and, with ``every``, archived requests) and the reservations
    the auditor's repair cancels at the actors that hold them."""

    door: Any
    _vaults: dict[str, Any]
    _carriers: dict[str, Any]
    _signer: Any

    def list_page(self, user: str | None = None, state: str | None = None, every: bool = False,
                  limit: int | None = None, cursor: str | None = None, proof: Any = None) -> RequestList:
        """One page of ``legionrm list`` (a user: their own)."""
        return self.door.list_page(user, state, every, limit, cursor, proof)  # type: ignore[no-any-return]

    def _cancel_reservation(self, resource: str, token_id: str) -> bool:
        """Cancel one reservation at the actor that carries ``resource`` (the auditor's repair)."""
        try:
            if (vault := self._vaults.get(resource)) is not None:  # one resource: by its token id
                return ray.get(vault.cancel_reservation.remote(token_id, proof=signed(
                    self._signer, "cancel_reservation", {"token": token_id}, to=resource)), timeout=WATCH_TIMEOUT_S) is True
            carrier = self._carriers.get(resource)  # a host or host group actor: (host, token id)
            if carrier is None:
                return False
            items = [(resource, token_id)]
            got = ray.get(carrier.cancel_reservations.remote(items, proof=signed(
                self._signer, "cancel_reservations", {"items": items}, to=resource)), timeout=WATCH_TIMEOUT_S)
        except ray.exceptions.RayError:
            return False
        return bool(got) and got[0] is True
