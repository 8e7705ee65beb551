"""The Scheduler's queue: the requests that wait, in the order they go next,
and the one attempt each may have under way.

:meth:`RequestQueue.order` lists the pending requests that are not held by
the site's multifactor priority (:class:`~legionrm.scheduler.priority.SitePolicy`:
QoS, fair share with memory, age, size); a pass of :meth:`RequestQueue.replan`
(the backfill rules, :mod:`legionrm.scheduler.backfill`) tries them through a
:class:`PassGate`, which skips a request over a limit of its QoS
(:meth:`RequestQueue.blocked`) and keeps it pending with the limit as its reason.  :meth:`RequestQueue.claim` gives a request to one
attempt at a time (a re-plan never races a first attempt); a cancel that
comes while an attempt holds it is remembered (:meth:`ask_cancel`) and
carried out when the attempt ends.  :meth:`RequestQueue.replan` runs the
queue again; while one re-plan runs, a second call asks it to go round once
more instead of running beside it.  Pure: no Ray.
"""

from __future__ import annotations

import threading
from bisect import insort
from contextlib import ExitStack, contextmanager
from itertools import compress
from operator import attrgetter
from typing import Any, Callable, Iterator, Literal

from legionrm.models import Refusal
from legionrm.scheduler.depend import ArrayCounts, Depend
from legionrm.scheduler.priority import SitePolicy
from legionrm.scheduler.priority.limits import QosLimits
from legionrm.scheduler.requests import Entry, RequestBook

_REQUEST, _HOLD = attrgetter("request"), attrgetter("hold")
_SUBMIT_ORDER = attrgetter("submitted", "id")
"""Submission order: oldest first, then by id (read in C: the kept order puts each new request in
place by it, and sorts every waiting request by it when it cannot prove what changed)."""

Walk = Callable[[list[Entry], "PassGate"], int]
"""One pass over the waiting requests in order, each tried through the gate; returns how many started."""


class RequestQueue:
    """The pending requests of ``book``, in the order and under the limits of
    ``site``; ``by="submit"`` takes them in submission order instead (the
    ``[queue]`` table's ``order``).  Thread-safe."""

    def __init__(self, book: RequestBook, site: SitePolicy, by: Literal["site", "submit"] = "site") -> None:
        self._book = book
        self.site = site
        self.by = by
        self._lock = threading.Lock()
        self._replan_lock = threading.Lock()
        self._dirty = threading.Event()
        self._attempting: set[str] = set()  # requests an attempt is under way for
        self._cancel_asked: set[str] = set()
        self._order_lock = threading.Lock()
        self._sorted: list[Entry] = []  # the pending requests in submission order, as the last pass saw them
        self._entered = 0  # how many times a request had entered pending then (RequestBook.since)
        self.depend: Depend | None = None
        """Dependencies, ``begin_at`` and array limits (:mod:`legionrm.scheduler.depend`), checked before the site's limits."""
        self.intake: Any = None
        """How requests come in groups: the Scheduler's :class:`~legionrm.scheduler.intake.GroupIntake` (set by it)."""

    def order(self) -> list[Entry]:
        """The pending requests that are not held, in the order they go next
        (highest priority first; ``by="submit"``: oldest first)."""
        return self._order(self._book.entries())

    def _order(self, entries: list[Entry]) -> list[Entry]:
        if self.by == "site":
            return self.site.order(entries)
        pending = self._submit_order()
        if set(map(_HOLD, map(_REQUEST, pending))) - {None}:  # (the common case, nobody held, is read without a loop in Python)
            pending = [e for e in pending if e.request.hold is None]
        return pending

    def _submit_order(self) -> list[Entry]:
        """The pending requests in submission order: the last answer kept, without those that left
        and with those that came since put in place, when :meth:`RequestBook.since` proves which
        came (else sorted afresh; the same list either way: no two requests share an id)."""
        with self._order_lock:
            now, still, count = self._book.since("pending", self._sorted)
            new = count - self._entered
            if len(still) + new == len(now):
                for entry in now[len(now) - new:] if new else ():
                    insort(still, entry, key=_SUBMIT_ORDER)
            else:
                still = sorted(now, key=_SUBMIT_ORDER)
            self._sorted, self._entered = still, count
            return list(still)

    def blocked(self, entry: Entry) -> Refusal | None:
        """Why ``entry`` may not be tried now (held, a dependency, or over a QoS limit); None: it may."""
        why = self.depend_why(entry)  # (a Refusal is falsy: an Outcome)
        return why if why is not None else self.site.blocked(entry, self.site.limits(self._book.entries(), entry.user))

    def unlimited(self, entry: Entry) -> bool:
        """Can nothing keep ``entry`` waiting (no dependency, ``begin_at``, array limit, hold or QoS limit)?"""
        r = entry.request
        return (self.depend is None or self.depend.unbound(r)) and self.site.unlimited(r)

    def depend_why(self, entry: Entry, counts: ArrayCounts | None = None) -> Refusal | None:
        """Why ``entry``'s dependencies, ``begin_at`` or array keep it waiting (a held one: only its hold)."""
        return None if self.depend is None or entry.request.hold is not None else self.depend.blocked(entry, counts)

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

    def claim_each(self, request_ids: list[str], claims: ExitStack) -> list[bool]:
        """:meth:`claim` each of ``request_ids`` in order, at once, until ``claims`` closes: whether each
        was claimed (False: another attempt holds it, or it came earlier in ``request_ids``)."""
        got: list[bool] = []
        with self._lock:
            for rid in request_ids:
                got.append(rid not in self._attempting)
                self._attempting.add(rid)  # already there when not claimed
        if any(got):
            claims.callback(self._release, list(compress(request_ids, got)))
        return got

    def _release(self, request_ids: list[str]) -> None:
        with self._lock:
            self._attempting.difference_update(request_ids)

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
        with self._lock:
            self._cancel_asked.add(request_id)

    def cancels_left(self) -> list[str]:
        """The cancels asked while an attempt held a request that no attempt
        carried out (the claim was a check, or the attempt ended without
        looking); each is handed out once, for the caller to carry out now."""
        with self._lock:
            left = sorted(self._cancel_asked - self._attempting)
            self._cancel_asked.difference_update(left)
        return left

    def cancel_asked(self, request_id: str) -> bool:
        """True (once) when a cancel of ``request_id`` waits for its attempt to end."""
        with self._lock:
            if request_id in self._cancel_asked:
                self._cancel_asked.discard(request_id)
                return True
        return False

    def ready(self, order: list[Entry]) -> list[Entry]:
        """``order`` without the requests over a limit of their QoS now (they
        neither start nor keep others waiting)."""
        limits = self.site.limits(self._book.entries())
        counts = self.depend.counts() if self.depend is not None else None
        return [e for e in order if self.depend_why(e, counts) is None and self.site.blocked(e, limits) is None]

    def replan(self, walk: Walk, wait: Callable[[Entry, Refusal], object]) -> int:
        """One more pass over the pending requests, in :meth:`order`: ``walk`` (the backfill rules) tries them through the
        pass's :class:`PassGate`, which keeps a request over a QoS limit
        waiting (``wait`` with the limit); returns how many started.  If a
        re-plan is running already, this asks it to go round once more and
        returns 0."""
        self._dirty.set()
        if not self._replan_lock.acquire(blocking=False):
            return 0
        started = 0
        try:
            while self._dirty.is_set():
                self._dirty.clear()
                entries = self._book.entries()
                gate = PassGate(self, self.site.limits(entries), wait)  # limits counted once a pass
                started += walk(self._order(entries), gate)
        finally:
            self._replan_lock.release()
        return started


class PassGate:
    """One re-plan pass's QoS limits (counted once; each start is added as
    it happens): every try of the pass goes through it, under the request's claim."""

    def __init__(self, queue: RequestQueue, limits: QosLimits, wait: Callable[[Entry, Refusal], object]) -> None:
        self._queue, self._limits, self._wait = queue, limits, wait
        self._counts = queue.depend.counts() if queue.depend is not None else None  # arrays' running tasks

    def skip_for(self, order: list[Entry]) -> Callable[[Entry], bool] | None:
        """:meth:`held_back`, for a walk over ``order``; None when nothing can keep any request there
        waiting (:meth:`RequestQueue.unlimited`: it would say False to each and record nothing), so the
        walk need not show it every request and may stop once no later request can start."""
        return None if all(map(self._queue.unlimited, order)) else self.held_back

    def held_back(self, entry: Entry) -> bool:
        """True when ``entry`` is over a limit of its QoS now: it waits
        (``wait``, pending with the limit as its reason) and the pass goes
        past it (no reserved start, nobody kept waiting behind it)."""
        if self._queue.unlimited(entry):  # (most requests: no claim, no count to ask)
            return False
        with self._queue.claim(entry.id) as claimed:
            return claimed and entry.state == "pending" and self._waits(entry)

    def attempt(self, entry: Entry, attempt: Callable[[Entry], bool]) -> bool | None:
        """``attempt(entry)`` under its claim: True it started, False not now,
        None not tried (another attempt holds it, it no longer waits, or it
        is over a QoS limit)."""
        with self._queue.claim(entry.id) as claimed:  # one attempt at a time per request
            if not claimed or entry.state != "pending" or self._waits(entry):
                return None
            if not attempt(entry):
                return False
            self._limits.started(self._queue.site.ask(entry))
            if self._counts is not None:
                self._counts.started(entry)
            return True

    def _waits(self, entry: Entry) -> bool:
        """(Under ``entry``'s claim.)  Over a QoS limit: it waits, with the limit as its reason."""
        why = self._queue.depend_why(entry, self._counts)
        why = why if why is not None else self._queue.site.blocked(entry, self._limits)
        if why is not None:
            self._wait(entry, why)
        return why is not None
