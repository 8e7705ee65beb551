"""The Scheduler's queue: the requests that wait, in the order they go next,
and the one attempt each may have under way.

:meth:`RequestQueue.order` lists the pending requests that are not held by
the site's multifactor priority (:class:`~legionrm.scheduler.priority.SitePolicy`:
QoS, fair share with memory, age, size); :meth:`RequestQueue.replan` skips a
request over a limit of its QoS (:meth:`RequestQueue.blocked`) and keeps it
pending with the limit as its reason.  :meth:`RequestQueue.claim` gives a request to one
attempt at a time (a re-plan never races a first attempt); a cancel that
comes while an attempt holds it is remembered (:meth:`ask_cancel`) and
carried out when the attempt ends.  :meth:`RequestQueue.replan` runs the
queue again; while one re-plan runs, a second call asks it to go round once
more instead of running beside it.  Pure: no Ray.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from legionrm.models import Refusal
from legionrm.scheduler.priority import SitePolicy
from legionrm.scheduler.requests import Entry, RequestBook


class RequestQueue:
    """The pending requests of ``book``, in the order and under the limits of ``site``.  Thread-safe."""

    def __init__(self, book: RequestBook, site: SitePolicy) -> None:
        self._book = book
        self.site = site
        self._lock = threading.Lock()
        self._replan_lock = threading.Lock()
        self._dirty = threading.Event()
        self._attempting: set[str] = set()  # requests an attempt is under way for
        self._cancel_asked: set[str] = set()

    def order(self) -> list[Entry]:
        """The pending requests that are not held, in the order they go next (highest priority first)."""
        return self.site.order(self._book.entries())

    def blocked(self, entry: Entry) -> Refusal | None:
        """Why ``entry`` may not be tried now (held, or over a QoS limit); None: it may."""
        return self.site.blocked(entry, self.site.limits(self._book.entries(), entry.user))

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

    def replan(self, attempt: Callable[[Entry], bool], wait: Callable[[Entry, Refusal], object]) -> int:
        """Give every pending request, in order, one more ``attempt`` (True:
        it started), or, when it is over a QoS limit, ``wait`` with the limit;
        returns how many started.  If a re-plan is running already, this asks
        it to go round once more and returns 0."""
        self._dirty.set()
        if not self._replan_lock.acquire(blocking=False):
            return 0
        started = 0
        try:
            while self._dirty.is_set():
                self._dirty.clear()
                entries = self._book.entries()
                limits = self.site.limits(entries)  # counted once a pass; each start is added as it happens
                for entry in self.site.order(entries):
                    with self.claim(entry.id) as claimed:  # one attempt at a time per request
                        if not claimed or entry.state != "pending":
                            continue
                        why = self.site.blocked(entry, limits)
                        if why is not None:
                            wait(entry, why)
                        elif attempt(entry):
                            limits.started(self.site.ask(entry))
                            started += 1
        finally:
            self._replan_lock.release()
        return started
