"""A request book with running work, for the priority tests."""

from __future__ import annotations

from typing import Sequence

from legionrm.models import InstanceRef, SchedulingRequest
from legionrm.scheduler.requests import Entry, RequestBook


def run(book: RequestBook, request: SchedulingRequest, refs: Sequence[InstanceRef]) -> Entry:
    """``request`` added to ``book`` and running ``refs`` (admitted, placing, then started)."""
    entry = book.add(request)
    book.move(entry, "admitted", "")
    book.move(entry, "placing", "")
    book.attach(entry, list(refs), "running", "started")
    return entry
