"""The Scheduler's queue: the requests that wait, in the order they go next,
and the one attempt each may have under way.

:meth:`RequestQueue.order` lists the pending requests by
:func:`~legionrm.scheduler.requests.queue_order` (priority, the user's
running share, age).  :meth:`RequestQueue.claim` gives a request to one
attempt at a time (a re-plan never races a first attempt); a cancel that
comes while an attempt holds it is remembered (:meth:`ask_cancel`) and
carried out when the attempt ends.  :meth:`RequestQueue.replan` runs the
queue again; while one re-plan runs, a second call asks it to go round once
more instead of running beside it.  Pure: no Ray.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping

from legionrm.scheduler.requests import Entry, RequestBook, queue_order


class RequestQueue:
    """The pending requests of ``book``; ``class_order`` gives the DUCC
    classes' (priority, weight) by class name.  Thread-safe."""

    def __init__(self, book: RequestBook,
                 class_order: Callable[[], tuple[Mapping[str, int], Mapping[str, float]]]) -> None:
        self._book = book
        self._class_order = class_order
        self._lock = threading.Lock()
        self._replan_lock = threading.Lock()
        self._dirty = threading.Event()
        self._attempting: set[str] = set()  # requests an attempt is under way for
        self._cancel_asked: set[str] = set()

    def order(self) -> list[Entry]:
        """The pending requests in the order they go next (:func:`queue_order`)."""
        entries = self._book.entries()
        pending = [e for e in entries if e.state == "pending"]
        usage: dict[str, float] = {}
        for e in entries:
            if e.state == "running":
                usage[e.user] = usage.get(e.user, 0.0) + e.cpus()
        prio, weight = self._class_order()
        return queue_order(pending, prio, weight, usage)

    @contextmanager
    def claim(self, request_id: str) -> Iterator[bool]:
        """Claim the one attempt a request may have under way: yields False
        (and claims nothing) when another attempt holds it."""
        with self._lock:
            claimed = request_id not in self._attempting
            self._attempting.add(request_id)  # already there when not claimed
        try:
            yield claimed
        finally:
            if claimed:
                with self._lock:
                    self._attempting.discard(request_id)

    def under_way(self, entry: Entry) -> bool:
        """True while an attempt holds ``entry`` (or it is being admitted or placed)."""
        with self._lock:
            return entry.state in ("admitted", "placing") or entry.id in self._attempting

    def attempting(self, request_id: str) -> bool:
        """Does an attempt hold ``request_id`` now?"""
        with self._lock:
            return request_id in self._attempting

    def ask_cancel(self, request_id: str) -> None:
        """Cancel ``request_id`` once the attempt under way ends."""
        self._cancel_asked.add(request_id)

    def cancel_asked(self, request_id: str) -> bool:
        """True (once) when a cancel of ``request_id`` waits for its attempt to end."""
        if request_id in self._cancel_asked:
            self._cancel_asked.discard(request_id)
            return True
        return False

    def replan(self, attempt: Callable[[Entry], bool]) -> int:
        """Give every pending request, in order, one more ``attempt`` (True:
        it started); returns how many started.  If a re-plan is running
        already, this asks it to go round once more and returns 0."""
        self._dirty.set()
        if not self._replan_lock.acquire(blocking=False):
            return 0
        started = 0
        try:
            while self._dirty.is_set():
                self._dirty.clear()
                for entry in self.order():
                    with self.claim(entry.id) as claimed:  # one attempt at a time per request
                        if claimed and entry.state == "pending":
                            started += attempt(entry)
        finally:
            self._replan_lock.release()
        return started
