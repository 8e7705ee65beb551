"""A Scheduler after a restart, and instances nobody knows.

:func:`recover` puts a reloaded request book back in order: a request caught
admitted or placing goes back to the queue (what it started, if anything, is
an orphan the sweep stops), and a running request's pool allocation and
allotment are charged again (the pools may have restarted too).
:func:`orphans` picks, among the instances the hosts run, those no running
request and no other owner knows, once past a grace (an enactment in flight
has started instances it has not reported yet).  Pure.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from legionrm.models import InstanceRef, PlacementFailure, Refusal, SchedulingRequest
from legionrm.scheduler.requests import RequestBook

log = logging.getLogger(__name__)


def recover(
    book: RequestBook,
    shape: Callable[[SchedulingRequest], tuple[SchedulingRequest, list[PlacementFailure]]],
    release: Callable[[str], None],
    admit: Callable[[SchedulingRequest], Refusal | None],
) -> None:
    """Put a reloaded book in order (see the module doc).  Idempotent."""
    for entry in book.entries():
        if entry.state in ("admitted", "placing"):
            release(entry.id)
            book.move(entry, "pending", "the scheduler restarted while placing it")
        elif entry.state in ("running", "reserved"):  # a reservation ahead holds its pool allocation too
            shaped, _ = shape(entry.request)
            release(entry.id)
            refusal = admit(shaped)
            if refusal is not None:
                log.warning("request %s runs over its pool after a restart: %s", entry.id, refusal.reason)


def orphans(running: Iterable[InstanceRef], known: set[str], now: float, grace_s: float) -> list[InstanceRef]:
    """The instances in ``running`` not in ``known`` and started before ``now - grace_s``."""
    return [r for r in running if r.instance_id not in known and r.started_at < now - grace_s]


def resync_pools(pools: Any, book: RequestBook, admit: Callable[[SchedulingRequest], object]) -> None:
    """A pool owner that restarted has forgotten its charges: charge every
    running (or reserved) request it does not hold again (``admit`` shapes
    and admits one).  Nothing when the pool gate cannot say what it holds."""
    held = getattr(pools, "held", None)
    if not callable(held):
        return
    charged = set(held())
    for entry in book.entries():
        if entry.state in ("running", "reserved") and entry.id not in charged:
            admit(entry.request)


def sweep_orphans(watch: Any, book: RequestBook, also: set[str], before: float,
                  stop: Callable[[InstanceRef, str], None]) -> list[str]:
    """Stop what the hosts run that no running request knows (nor ``also``
    names), started before ``before``; returns their ids.  Nothing when the
    watch cannot list every instance."""
    listing = getattr(watch, "all_instances", None)
    if not callable(listing):
        return []
    known = {r.instance_id for r in book.running_instances()} | also
    found = orphans(listing(), known, before, 0.0)
    for ref in found:
        stop(ref, "orphan: no running request knows it")
    return [r.instance_id for r in found]
