"""What one enactment holds, and letting go of it.

:class:`Run` is one enactment's state: the reservations it holds per slot
(:class:`Held`), what it released (to count thrashing), the request ids it
sent and the instances it started.  :class:`Holding` is the Enactor's base
class with the ways of letting go: forget and cancel tokens about to expire,
release slots (cancel first, forget after), and roll an enactment back
(stop what it started, cancel what it holds; never raises).  Its methods use
the Enactor's ``port``, ``clock``, ``min_token_life_s`` and ``name``
(``self`` is always a :class:`~legionrm.enactor.enactor.Enactor`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Sequence

from legionrm.enactor.mapping import RequestShape, Slot
from legionrm.models import EnactRequest, InstanceRef, Placement, ReservationToken

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Held:
    token: ReservationToken
    spec: tuple  # what the reservation was made for; a target with another spec conflicts
    placement: Placement  # the placement it was made for (the same one: the same spec, no need to compare)


@dataclass
class Run:
    """The state of one enactment (never shared between enactments)."""

    request: EnactRequest
    held: dict[Slot, Held] = field(default_factory=dict)
    released: set[tuple[str, str, str]] = field(default_factory=set)  # (resource, key, kind)
    sent: dict[tuple[str, str], int] = field(default_factory=dict)  # requests per slot: request-id suffix
    made: int = 0
    n_released: int = 0
    thrash: int = 0
    started: list[InstanceRef] = field(default_factory=list)
    soonest: float = math.inf  # no held token expires before this (a bound: those released may have set it)
    shape: RequestShape | None = None  # the reservation requests' shared, validated part (made once)


class Holding:
    """Letting go of what a :class:`Run` holds (the Enactor's base class; see the module doc)."""

    def _drop_expired(self, run: Run) -> None:
        """Forget held tokens that have (or are about to) expire; cancel them
        too (idempotent), in case the resource's clock is behind ours."""
        limit = self.clock() + self.min_token_life_s
        if limit < run.soonest:  # (nothing held expires yet: no need to look at each)
            return
        gone = [s for s, h in run.held.items() if h.token.expires_at <= limit]
        if gone:
            self.port.cancel([run.held[s].token for s in gone])
            for s in gone:
                del run.held[s]
        run.soonest = min((h.token.expires_at for h in run.held.values()), default=math.inf)

    def _release(self, run: Run, slots: Sequence[Slot]) -> None:
        if not slots:
            return
        # Cancel first, forget after: if the cancel raises, the rollback still
        # sees these tokens and tries again.
        self.port.cancel([run.held[s].token for s in slots])
        for s in slots:
            h = run.held.pop(s)
            run.released.add((h.spec[0], s[0], s[1]))
        run.n_released += len(slots)

    def _release_all(self, run: Run) -> None:
        self._release(run, list(run.held))

    def _rollback(self, run: Run) -> None:
        """Undo everything this enactment holds; never raises (tokens time out anyway)."""
        try:
            if run.started:
                self.port.stop_instances(list(run.started))
                run.started.clear()
        except Exception:  # noqa: BLE001 - cleanup must go on
            log.exception("enactor %s: stopping instances of %s failed", self.name, run.request.request_id)
        # Cancel is idempotent, so one retry of a failed batch is safe; after
        # that the tokens are left to time out at their resources.
        for attempt in (1, 2):
            try:
                self._release_all(run)
                break
            except Exception:  # noqa: BLE001
                log.warning(
                    "enactor %s: cancelling reservations of %s failed (attempt %d)",
                    self.name, run.request.request_id, attempt, exc_info=True,
                )
        run.held.clear()
