"""A Scheduler's reserved requests: reserved now, started at their time.

A request with a future ``start`` is planned over its window and enacted
with ``create=False``: the Enactor reserves every host (and vault) from the
start for the walltime and hands the tokens back.  :meth:`AheadStarts.reserve`
keeps them with the request (``reserved``, written to the store with it).
On each tick the Scheduler asks :meth:`AheadStarts.due` which reserved
requests' start has come and :meth:`AheadStarts.start` has the class objects
create their instances with the held tokens (``running``).  A reservation
not used by its start plus :data:`~legionrm.models.schedules.START_SLACK_S`
has expired at its hosts: the request fails, saying so.  A start the hosts
refuse fails the request with their reasons.  :meth:`AheadStarts.release`
gives the tokens back when a reserved request is cancelled.  Pure; no Ray.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Callable, Iterable

from legionrm import codes
from legionrm.models import (
    EnactResult,
    Holder,
    PlacementFailure,
    ReservedStart,
    SchedulerResponse,
)
from legionrm.models.schedules import START_SLACK_S
from legionrm.scheduler.planner import keys_of
from legionrm.scheduler.ports import EnactorPort
from legionrm.scheduler.requests import Entry, RequestBook

log = logging.getLogger(__name__)


class AheadStarts:
    """The reserved requests of one Scheduler (see the module).  ``enactor``
    gives the Scheduler's current Enactor; ``book_back`` gives back a
    finished request's accounts.  Every move goes through the book, which
    tells the Scheduler's triggers."""

    def __init__(self, book: RequestBook, enactor: Callable[[], EnactorPort], *, slack_s: float = START_SLACK_S,
                 book_back: Callable[[Entry], None] = lambda e: None) -> None:
        self.book = book
        self.enactor = enactor
        self.slack_s = slack_s
        self.book_back = book_back

    def timeout(self, token_timeout_s: float) -> float:
        """How long after its start an advance token may wait to be used."""
        return max(token_timeout_s, self.slack_s)

    def reserve(self, entry: Entry, result: EnactResult, masters: int) -> str:
        """Keep ``result``'s tokens with ``entry`` and move it to ``reserved``;
        returns the message prefix of the Scheduler's answer."""
        hosts = ",".join(sorted({p.host for p in result.placements}))
        when = utc(entry.request.start or 0.0)
        self.book.move(entry, "reserved", f"reserved on {hosts} from {when} (master {(result.master or 0) + 1} of {masters})",
                       held=result)
        return f"reserved on {hosts}, starts at {when}: "

    def due(self, entries: Iterable[Entry], now: float) -> list[Entry]:
        """The reserved requests whose start is at or before ``now``, earliest first."""
        return sorted((e for e in entries if e.state == "reserved" and (e.request.start or 0.0) <= now),
                      key=lambda e: (e.request.start or 0.0, e.id))

    def start(self, entry: Entry, now: float) -> SchedulerResponse:
        """Start ``entry``'s instances with its held tokens (running), or fail
        it: expired (``now`` past its start plus the slack) or refused.  An
        enactor that raises leaves it reserved (the next tick tries again,
        until the slack runs out)."""
        start = entry.request.start or 0.0
        if entry.held is None:
            return self._fail(entry, [PlacementFailure(key="*", resource="scheduler", code=codes.AHEAD_START_FAILED, stage="start",
                                                       reason="no reservation is held for it")])
        if now > start + self.slack_s:
            self.release(entry)
            return self._fail(entry, [PlacementFailure(
                key="*", resource="scheduler", code=codes.AHEAD_EXPIRED, stage="start",
                reason=f"its advance reservations expired unused: start {utc(start)} passed {now - start:.0f}s ago "
                       f"(at most {self.slack_s:g}s)")])
        try:
            result = self.enactor().start_reserved(self._held(entry))
        except Exception as exc:  # noqa: BLE001 - a broken enactor: stay reserved, the next tick tries again
            log.warning("starting reserved request %s failed; tried again next tick", entry.id, exc_info=True)
            return SchedulerResponse(request_id=entry.id, ok=False, message=f"{type(exc).__name__}: {exc}"[:300],
                                     state=entry.state)
        if not result.ok:
            return self._fail(entry, [f for a in result.attempts for f in a.failures])
        # its tokens now belong to its instances; a write that fails leaves them to the orphan sweep
        self.book.attach(entry, result.instances, "running", f"started at its start time {utc(start)}", held=None)
        where = ", ".join(f"{i.instance_id}@{i.host}" for i in result.instances)
        return SchedulerResponse(request_id=entry.id, ok=True, instances=result.instances, enact=result,
                                 message=f"started: {where}", state=entry.state)

    def release(self, entry: Entry) -> None:
        """Cancel every token a reserved ``entry`` holds (best effort: tokens
        expire anyway).  Nothing for any other request (a started one's
        tokens belong to its instances)."""
        if entry.held is None or entry.state != "reserved":
            return
        try:
            self.enactor().start_reserved(self._held(entry, release=True))
        except Exception:  # noqa: BLE001 - an unreachable enactor: the tokens time out at their hosts
            log.warning("releasing the advance reservations of %s failed", entry.id, exc_info=True)

    def _held(self, entry: Entry, release: bool = False) -> ReservedStart:
        held = entry.held
        assert held is not None
        tokens = list(held.host_tokens.values())
        ident = entry.request.identity
        holder = tokens[0].holder if tokens else Holder(user=ident.user, groups=ident.groups)
        args = {k: o.start_args() for o, keys in zip(entry.request.objects, keys_of(entry.request)) if o.start_args()
                for k in keys}
        return ReservedStart.model_construct(
            request_id=entry.id, holder=holder, placements=held.placements, host_tokens=held.host_tokens,
            vault_tokens=held.vault_tokens, args=args, release=release)

    def _fail(self, entry: Entry, failures: list[PlacementFailure]) -> SchedulerResponse:
        msg = "; ".join(f"{f.key} on {f.resource or '-'}: {f.code}: {f.reason}" for f in failures[:5]) or "start failed"
        if self.book.finish(entry, "failed", f"at its start time: {msg}"[:500], failures=tuple(failures)):
            self.book_back(entry)
        return SchedulerResponse(request_id=entry.id, ok=False, failures=tuple(failures), message=msg,
                                 state=entry.state)


def utc(t: float) -> str:
    """A time as people read it in a reason: ``2026-11-24T09:00:00Z``."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
