"""Settling the request book on each tick, and the pages of ``legionrm list``.

:func:`end_written` ends an instance the tick found ended;
:func:`settle_half_done` finishes what a failed write left half way, once
writes succeed again; :func:`settle_finished` moves the finished requests
whose instances are accounted out of the live book into the durable history.
Both take the Scheduler core (its ``book``, ``queue``, ``accounts``,
``results`` and ``triggers``) and are idempotent: a write that fails waits
for the next tick.
"""

from __future__ import annotations

import logging
from typing import Any

from legionrm.errors import SchedulingError
from legionrm.models import WorkResult
from legionrm.models.api import RequestList
from legionrm.scheduler.depend.arrays import grouped
from legionrm.scheduler.depend.requeue import run_end
from legionrm.state import StoreFault

log = logging.getLogger(__name__)

MAX_PAGE = 1000
"""The most requests one page of ``list --all`` holds."""


def end_written(core: Any, instance_id: str, reason: str, state: str = "ended", result: WorkResult | None = None
                ) -> bool:
    """The core's ``instance_ended`` for its tick; True once the instance's end is
    written, so its host and class are told.  An end the store cannot write
    now stays running in the book, and the next tick sees it again.  An end
    written when its request's own end was not (the write after it failed) is
    True all the same: the instance will not be seen again, and
    :func:`settle_half_done` ends the request once the store writes."""
    try:
        return core.instance_ended(instance_id, reason, state, replan=False, result=result)
    except StoreFault as fault:
        written = core.book.owner_of(instance_id) is not None and core.book.running_ref(instance_id) is None
        log.warning("the end of %s %s is not written yet: %s", "the request of instance" if written else "instance",
                    instance_id, fault)
        return written


def settle_half_done(core: Any) -> None:
    """A request caught ``admitted`` or ``placing`` with no attempt under way
    goes back to the queue (its pool charge given back), and a running
    request whose instances all ended finishes (its accounts booked back)."""
    for entry in core.book.entries():
        try:
            if entry.state in ("admitted", "placing"):
                with core.queue.claim(entry.id) as claimed:
                    if claimed and entry.state in ("admitted", "placing"):
                        core.book.move(entry, "pending", "back in the queue: a write of its attempt failed")
                        core.accounts.release(entry.id)
            elif entry.state == "running" and entry.instances and not entry.holds_objects():
                last = max(entry.instances.values(), key=lambda i: i.ended_at or 0.0)
                if core.book.finish(entry, *run_end(entry, last.reason)):  # node_lost, failed or completed
                    core.accounts.book_back(entry)
        except StoreFault as fault:
            log.warning("settling request %s waits for the store: %s", entry.id, fault)
            return


def settle_cancels(core: Any) -> None:
    """A cancel that came while a claim only checked its request (no attempt
    carried it out) is carried out now: a tick late at most, never lost."""
    for request_id in core.queue.cancels_left():
        try:
            core.cancel(request_id, replan=False)
        except StoreFault as fault:  # asked again: a later tick tries it
            core.queue.ask_cancel(request_id)
            log.warning("the cancel of %s waits for the store: %s", request_id, fault)


def settle_finished(core: Any) -> None:
    """The finished requests accounted (``Results.settled``) leave the live book, each
    written to the history first; a write that fails waits for a later sweep."""
    done = core.results.settled()
    try:
        settled = set(core.book.settle(done))
    except StoreFault as fault:  # their instances stay accounted: a later sweep settles them
        log.warning("finished requests stay in the live book until the store writes: %s", fault)
        return
    core.results.forget(e for e in done if e.id in settled)
    for rid in settled:
        core.triggers.forget(rid)


def list_page(core: Any, user: str | None = None, state: str | None = None, *, every: bool = False,
              limit: int | None = None, cursor: str | None = None) -> RequestList:
    """One page of ``legionrm list`` from the Scheduler core's book: the live
    and recent requests (``every``: each one the history keeps, at most
    :data:`MAX_PAGE` a page), oldest first, after ``cursor`` (the last page's
    ``next``), the tasks of an array on the page as one line (:func:`~legionrm.scheduler.depend.grouped`).
    Pure read.  SchedulingError for a bad cursor."""
    if every:
        limit = min(limit or MAX_PAGE, MAX_PAGE)
    entries, after = core.book.page(user, state, every=every, after=cursor_key(cursor), limit=limit)
    return RequestList(requests=tuple(grouped([e.info() for e in entries])), next=page_cursor(after))


def cursor_key(cursor: str | None) -> tuple[float, str] | None:
    """The key a ``list`` page's cursor (``<submitted>/<id>``) names; SchedulingError when it names none."""
    if not cursor:
        return None
    when, sep, rid = cursor.partition("/")
    try:
        at = float(when)
    except ValueError:
        at = float("nan")
    if not sep or not rid or at != at:
        raise SchedulingError(f"cursor {cursor!r} is not one a page of `legionrm list` gave (<time>/<id>)")
    return at, rid


def page_cursor(after: tuple[float, str] | None) -> str | None:
    """The cursor of the page after the one that ended at key ``after`` (None: it was the last)."""
    return None if after is None else f"{after[0]!r}/{after[1]}"
