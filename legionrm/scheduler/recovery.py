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
from typing import Callable, Iterable

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
        elif entry.state == "running":
            shaped, _ = shape(entry.request)
            release(entry.id)
            refusal = admit(shaped)
            if refusal is not None:
                log.warning("request %s runs over its pool after a restart: %s", entry.id, refusal.reason)


def orphans(running: Iterable[InstanceRef], known: set[str], now: float, grace_s: float) -> list[InstanceRef]:
    """The instances in ``running`` not in ``known`` and started before ``now - grace_s``."""
    return [r for r in running if r.instance_id not in known and r.started_at < now - grace_s]
