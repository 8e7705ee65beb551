"""Submits and cancels in groups, over the Scheduler core: one durable write for many.

:meth:`GroupIntake.submit` is :meth:`Scheduler.scheduleObjects` for many
requests at once: each is checked as a submit is (walltime, validation,
owner, QoS: a refusal answers that request alone); those accepted enter the
book in one transaction synced to the disk (:meth:`RequestBook.commit_group`),
and only then does any answer go back.  Each is then handled as a fresh
submit is: tried now when the queue's rules would try it (one at a time, as
today), otherwise left waiting with its reason (over a QoS limit, behind
others) in a second group write; one submitted held waits from the first
write on (its reason is written with it).  A request that must be answered
at once (``wait = false``) or that activates objects takes the one-at-a-time
path whole.

:meth:`GroupIntake.cancel` cancels many: the pending requests no attempt
holds are cancelled in one durable write (their queue's next pass, the
Scheduler's tick, sees the room they leave); any other goes through
:meth:`Scheduler.cancel` as ever.  :meth:`GroupIntake.take` does both for
the submits and cancels that arrived together, the submits first, with one
durable write for the new requests and the cancelled ones alike.

A group write that fails (:class:`~legionrm.state.StoreFault`) answers
every member of the group with the fault and leaves the book as it was.
Every reply list matches its request list one to one: a reply is the
answer or the exception that request met.  The Scheduler holds its
:class:`GroupIntake` (``scheduler.queue.intake``) and hands it the few inner
steps of a submit it shares (:class:`Steps`).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import compress
from typing import Any, Callable, Sequence

from legionrm import codes
from legionrm.errors import SchedulingError
from legionrm.events.triggers import STATUS_OF
from legionrm.models import EventStatus, PlacementFailure, Refusal, RequestEvent, SchedulerResponse, SchedulingRequest
from legionrm.scheduler.confirm import refused_at_door
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.requests import Entry
from legionrm.state import StoreFault

log = logging.getLogger(__name__)

Reply = Any
"""A :class:`SchedulerResponse` (or :class:`RequestInfo`), or the exception its request met."""


def one_at_a_time(request: SchedulingRequest) -> bool:
    """Must ``request`` take the one-at-a-time path (its answer is wanted now, it activates objects,
    it is an array to split into tasks, or it depends on others: a dependency never met answers its submit)?"""
    return not request.wait or bool(request.activate) or request.array is not None or bool(request.depends())


@dataclass(frozen=True)
class Steps:
    """The inner steps of a submit the Scheduler shares with its group intake."""

    clock: Callable[[], float]
    at_submit: Callable[[SchedulingRequest], tuple[SchedulingRequest, Refusal | None]]
    """The request with its walltime, validated, and what refuses it at submit (None: nothing)."""
    attempt: Callable[[Entry, Sequence[Hold]], SchedulerResponse]
    """One attempt now, keeping the queue's holds."""
    behind: Callable[[], str]
    """Why a request that is not tried now waits behind the others."""


class GroupIntake:
    """Submits and cancels in groups over the Scheduler ``core`` (see the module doc)."""

    def __init__(self, core: Any, steps: Steps) -> None:
        self.core, self.steps = core, steps

    def submit(self, requests: Sequence[SchedulingRequest]) -> list[Reply]:
        """Admit ``requests`` together (see the module doc); one reply per request, in order."""
        return self.take(requests, ())[0]

    def cancel(self, items: Sequence[tuple[str, str]]) -> list[Reply]:
        """Cancel each ``(request_id, reason)`` of ``items`` (see the module doc); one reply per item, in
        order: the request's :class:`~legionrm.models.RequestInfo` after the cancel, or the exception it met
        (an unknown id: SchedulingError)."""
        return self.take((), items)[1]

    def take(self, requests: Sequence[SchedulingRequest], cancels: Sequence[tuple[str, str]]
             ) -> tuple[list[Reply], list[Reply]]:
        """:meth:`submit` ``requests`` and :meth:`cancel` ``cancels`` together, the submits first, with one
        durable write for the new requests and the cancels alike; the replies of each, in order."""
        out: list[Reply] = [None] * len(requests)
        gone: list[Reply] = [None] * len(cancels)
        with ExitStack() as claims:  # each claimed before the queue can see it, as scheduleObjects does
            taken = self._taken(requests, out, claims)
            with ExitStack() as cancelling:
                group = self._cancellable(cancels, cancelling)
                entries = self._admit(taken, out, group, gone)
            self._first_try([(i, e) for (i, _), e in zip(taken, entries) if e is not None and out[i] is None], out)
        for i, request in enumerate(requests):  # the one-at-a-time ones, after the group is safe on disk
            if out[i] is None:
                try:
                    out[i] = self.core.scheduleObjects(request)
                except Exception as exc:  # noqa: BLE001
                    out[i] = exc
        for i, (rid, reason) in enumerate(cancels):  # unknown, finished, placed or under way: one at a time
            if gone[i] is None:
                try:
                    gone[i] = self.core.cancel(rid, reason)
                except Exception as exc:  # noqa: BLE001
                    gone[i] = exc
        return out, gone

    def _taken(self, requests: Sequence[SchedulingRequest], out: list[Reply], claims: ExitStack
               ) -> list[tuple[int, SchedulingRequest]]:
        """The requests of the group (checked as a submit is, each claimed); the others answered or left
        to the one-at-a-time path."""
        book = self.core.book
        checked: list[tuple[int, SchedulingRequest]] = []
        for i, request in enumerate(requests):
            if one_at_a_time(request):
                continue
            try:
                request, refusal = self.steps.at_submit(request)
            except Exception as exc:  # noqa: BLE001 -- a bad request answers for itself
                out[i] = exc
                continue
            if refusal is not None:
                out[i] = refused_at_door(request, refusal)
            elif request.request_id in book:
                out[i] = _scheduled(request.request_id)
            else:
                checked.append((i, request))
        claimed = self.core.queue.claim_each([r.request_id for _, r in checked], claims)  # (a repeated id: not twice)
        for (i, request), ok in zip(checked, claimed):
            if not ok:
                out[i] = _scheduled(request.request_id)
        return list(compress(checked, claimed))

    def _cancellable(self, cancels: Sequence[tuple[str, str]], claims: ExitStack) -> list[tuple[int, Entry, str]]:
        """The cancels of the group: pending requests no attempt holds (each claimed), each once."""
        book = self.core.book
        pending = [(i, entry, reason) for i, (rid, reason) in enumerate(cancels)
                   if (entry := book.get(rid)) is not None and entry.state == "pending"]
        claimed = self.core.queue.claim_each([e.id for _, e, _ in pending], claims)  # (a repeated id: once)
        # the one-at-a-time path answers the others (unknown, finished, placed, under way, or changed meanwhile)
        return [(i, entry, reason) for (i, entry, reason), ok in zip(pending, claimed) if ok and entry.state == "pending"]

    def _admit(self, taken: list[tuple[int, SchedulingRequest]], out: list[Reply],
               group: list[tuple[int, Entry, str]], gone: list[Reply]) -> list[Entry | None]:
        """The taken requests in the book, pending, and the ``group`` of cancels cancelled, in one durable
        write (each answered with the fault if it fails).  One submitted held waits from the start: its
        reason is in the same write, and it is answered.  A cancelled request's pool charge is given back."""
        if not taken and not group:
            return []
        book, site, now = self.core.book, self.core.queue.site, self.steps.clock()
        drafts = [Entry(request=r, submitted=now, history=[RequestEvent(at=now, state="pending", reason="submitted")])
                  for _, r in taken]
        held: dict[str, PlacementFailure] = {}
        held_ones = [d for d in drafts if d.request.hold is not None]
        if held_ones:  # held: no limit or queue state changes that (site.blocked's first rule): one look for all
            next_end, limits = book.next_end(), site.limits([])
            for d in held_ones:
                why = site.blocked(d, limits)
                held[d.id] = PlacementFailure(key="*", resource=why.by, code=why.code, reason=why.reason, stage="plan")
                d.reason, d.failures, d.earliest_start = f"{why.code}: {why.reason}"[:500], (held[d.id],), next_end
                d.history.append(RequestEvent(at=now, state="pending", reason=d.reason))
        try:  # record: each cancel's transition is in its history (a new entry's history is its own)
            book.commit_group([(None, d) for d in drafts] + [(e, e.draft(state="cancelled", reason=r))
                                                            for _, e, r in group], record=True)
        except (StoreFault, SchedulingError) as exc:
            for i, _ in taken:
                out[i] = exc
            for i, _, _ in group:
                gone[i] = exc
            return [None] * len(taken)
        told: list[tuple[Entry, EventStatus, str]] = []
        for (i, _), d in zip(taken, drafts):
            told.append((d, "pending", "submitted"))
            if d.id in held:
                told.append((d, STATUS_OF["pending"], d.reason))
                out[i] = _waiting(d, (held[d.id],), d.reason)
        for i, entry, reason in group:
            told.append((entry, STATUS_OF["cancelled"], reason))
            gone[i] = entry.info()
        book.tell_all(told)
        if group:
            self.core.accounts.book_back_many([e for _, e, _ in group])  # still claimed: none charged meanwhile
        return list(drafts)

    def _first_try(self, fresh: list[tuple[int, Entry]], out: list[Reply]) -> None:
        """Each fresh entry as :meth:`Scheduler.scheduleObjects` handles it after its add: tried now if the
        queue would try it; else waiting with its reason, all those written in one group."""
        if not fresh:
            return
        queue = self.core.queue
        order = queue.ready(queue.order())
        waits: list[tuple[int, Entry, str, tuple[PlacementFailure, ...]]] = []
        for i, entry in fresh:  # (claimed by the caller: no pass tries them meanwhile)
            try:
                why = queue.blocked(entry)
                if why is not None:  # over a limit of its QoS
                    fail = PlacementFailure(key="*", resource=why.by, code=why.code, reason=why.reason, stage="plan")
                    waits.append((i, entry, f"{why.code}: {why.reason}"[:500], (fail,)))
                    continue
                holds = self.core.backfill.gate(entry, order)
                if holds is not None:
                    out[i] = self.steps.attempt(entry, holds)
                else:
                    waits.append((i, entry, f"{codes.QUEUE_BEHIND}: {self.steps.behind()}", ()))
            except Exception as exc:  # noqa: BLE001 -- it is in the book: its answer is the error, the pass retries it
                out[i] = exc
        if waits:
            self._wait_all(waits, out)

    def _wait_all(self, waits: list[tuple[int, Entry, str, tuple[PlacementFailure, ...]]], out: list[Reply]) -> None:
        """Each waiting entry pending with its reason, in one durable write; answered as a waiting submit is."""
        book = self.core.book
        next_end = book.next_end()
        changes = [(entry, entry.draft(state="pending", reason=reason, failures=failures or entry.failures,
                                       earliest_start=next_end if failures else entry.earliest_start))
                   for _, entry, reason, failures in waits]
        try:
            book.commit_group(changes, record=True)
        except StoreFault as fault:  # in the book as submitted (written): it waits all the same, its reason unwritten
            log.warning("the reasons of %d waiting requests wait for the store: %s", len(waits), fault)
        book.tell_all([(entry, STATUS_OF["pending"], reason) for _, entry, reason, _ in waits if entry.reason == reason])
        for i, entry, reason, failures in waits:
            out[i] = _waiting(entry, failures, reason)

    def owner(self, request_id: str) -> str:
        """Whose request ``request_id`` is (live, in the history, or an array's own id, as a single
        cancel asks); SchedulingError when unknown."""
        entry = self.core.book.get(request_id)  # live: its own user, without building its whole story
        return entry.user if entry is not None else str(self.core.request_info(request_id).user)


def _scheduled(request_id: str) -> SchedulingError:
    return SchedulingError(f"request id {request_id!r} was already scheduled")


def _waiting(entry: Entry, failures: tuple[PlacementFailure, ...], reason: str) -> SchedulerResponse:
    """The answer to a submit that waits (as :meth:`Scheduler.scheduleObjects` gives it)."""
    msg = "; ".join(f"{f.key} on {f.resource or '-'}: {f.code}: {f.reason}" for f in failures[:5])
    return SchedulerResponse(request_id=entry.id, ok=False, failures=failures, state=entry.state,
                             message=msg or reason.partition(": ")[2])
