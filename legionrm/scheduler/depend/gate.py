"""When a waiting request may start: its dependencies, its ``begin_at``, its array's limit.

:meth:`Depend.blocked` answers for one pending request, first match wins:

1. ``depend.never``: a dependency that can never be met -- an ``after_ok``
   request that ended other than ``completed``, an ``after_not_ok`` one that
   completed, or an id nobody knows.  The Scheduler cancels the request with
   this reason.
2. ``depend.begin_at``: its ``begin_at`` has not come (the reason says until when).
3. ``depend.waiting``: a request it names has not ended yet.
4. ``array.limit``: its array's ``%L`` tasks hold cpus already.

"Ends well" is ``completed`` and nothing else: ``failed``, ``cancelled``,
``node_lost`` (and any other final state, e.g. ``preempted``) are not.  A
request that went back to the queue (requeued) has not ended.  An array's
own id names the whole array: it ended when every task ended, well when
every task completed.

A dependency is looked up in the live book, then in the durable history
(:meth:`~legionrm.scheduler.requests.RequestBook.find`); a final state once
seen is kept (bounded), so the history is read once per dependency.  The
requests it reads are in the book's store, so a restart keeps every
dependency.  Pure: no Ray.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable

from legionrm import codes
from legionrm.models import FINAL_STATES, Refusal, SchedulingRequest
from legionrm.models.arrays import parse_array, task_id
from legionrm.scheduler.requests import LIVE_STATES, Entry, RequestBook

KEEP_FINAL = 100_000
"""How many final states of dependencies are remembered."""

KINDS = ("after_ok", "after_any", "after_not_ok")


def met(kind: str, state: str | None) -> bool | None:
    """Is a ``kind`` dependency on a request in ``state`` met (True), never to be (False), or not yet (None)?
    ``state`` None: no such request (never)."""
    if state is None:
        return False
    if state not in FINAL_STATES:
        return None
    if kind == "after_any":
        return True
    return (state == "completed") == (kind == "after_ok")


def when(t: float) -> str:
    """``t`` as a UTC ISO 8601 time, to the second."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def array_state(states: list[str]) -> str:
    """One state for an array from its tasks' (see the module): not ended while any task lives."""
    live = [s for s in states if s not in FINAL_STATES]
    if live:
        return "running" if any(s != "pending" for s in live) else "pending"
    if all(s == "completed" for s in states):
        return "completed"
    return "cancelled" if all(s in ("completed", "cancelled") for s in states) else "failed"


class ArrayCounts:
    """How many tasks of each array hold (or are taking) cpus: counted once,
    then kept up as tasks start (one pass, or one submit)."""

    def __init__(self, book: RequestBook) -> None:
        self._n: dict[str, int] = {}
        for state in LIVE_STATES:
            for e in book.in_state(state):
                if e.request.array_index is not None:
                    self.started(e)

    def __getitem__(self, array_id: str) -> int:
        return self._n.get(array_id, 0)

    def started(self, entry: Entry) -> None:
        if entry.request.array_index is not None:
            aid = array_of(entry)
            self._n[aid] = self._n.get(aid, 0) + 1


def array_of(entry: Entry) -> str:
    """The id of the array ``entry`` is a task of (its id without ``_INDEX``)."""
    return entry.id.rsplit("_", 1)[0]


class Depend:
    """The dependency rules over ``book`` at ``clock``'s time.  Thread-safe."""

    def __init__(self, book: RequestBook, clock: Callable[[], float]) -> None:
        self.book, self._clock = book, clock
        self._final: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self.specs: dict[str, str] = {}
        """The arrays submitted since this scheduler started: id -> spec (others are found by their tasks)."""

    def counts(self) -> ArrayCounts:
        """The arrays' running tasks now (for one pass: :meth:`ArrayCounts.started` keeps it up)."""
        return ArrayCounts(self.book)

    @staticmethod
    def unbound(request: SchedulingRequest) -> bool:
        """Does ``request`` have no dependency, no ``begin_at`` and no array limit (then :meth:`blocked` is None)?"""
        return (not request.after_ok and not request.after_any and not request.after_not_ok
                and request.begin_at is None and (request.array is None or request.array_index is None))

    def blocked(self, entry: Entry, counts: ArrayCounts | None = None) -> Refusal | None:
        """Why ``entry`` may not start now (see the module); None: it may."""
        r = entry.request
        deps = r.depends()
        waiting: list[str] = []
        for kind, ids in deps.items():
            for rid in ids:
                ok = met(kind, self.state(rid))
                if ok is False:
                    got = self.state(rid)
                    why = "is not known" if got is None else f"ended {got}"
                    return Refusal(code=codes.DEPEND_NEVER, by="depend",
                                   reason=f"{kind}: {rid} {why}, so this request can never start")
                if ok is None:
                    waiting.append(f"{kind} {rid}")
        if r.begin_at is not None and self._clock() < r.begin_at:
            return Refusal(code=codes.DEPEND_BEGIN_AT, by="depend", reason=f"begin_at: waits until {when(r.begin_at)}")
        if waiting:
            more = f" and {len(waiting) - 3} more" if len(waiting) > 3 else ""
            return Refusal(code=codes.DEPEND_WAITING, by="depend",
                           reason=f"waits for {', '.join(waiting[:3])}{more} to end")
        if r.array is not None and r.array_index is not None:
            limit = parse_array(r.array).limit
            held = (counts if counts is not None else self.counts())[array_of(entry)]
            if limit is not None and held >= limit:
                return Refusal(code=codes.ARRAY_LIMIT, by="array",
                               reason=f"array {array_of(entry)} runs {held} tasks, its limit (%{limit})")
        return None

    def state(self, request_id: str) -> str | None:
        """The state of ``request_id`` (an array's id: its tasks' one state); None: unknown."""
        with self._lock:
            if request_id in self._final:
                return self._final[request_id]
        entry = self.book.find(request_id)
        state: str | None = entry.state if entry is not None else self._array_state(request_id)
        if state in FINAL_STATES:
            with self._lock:
                self._final[request_id] = state
                while len(self._final) > KEEP_FINAL:
                    self._final.popitem(last=False)
        return state

    def _array_state(self, array_id: str) -> str | None:
        spec = self.spec_of(array_id)
        if spec is None:
            return None
        states = [self.state(task_id(array_id, i)) for i in parse_array(spec).indices]
        return array_state([s or "cancelled" for s in states])  # a task nobody knows any more: it did not run

    def spec_of(self, array_id: str) -> str | None:
        """The ``array`` spec of array ``array_id`` (None: no such array), from a live task or an archived one."""
        if array_id in self.specs:
            return self.specs[array_id]
        prefix = f"{array_id}_"
        for e in self.book.entries():
            if e.request.array_index is not None and e.id.startswith(prefix) and array_of(e) == array_id:
                return e.request.array
        for first in (0, 1):  # every task left the live book: an array starts at 0 (or 1) most often
            e = self.book.find(task_id(array_id, first))
            if e is not None and e.request.array is not None:
                return e.request.array
        return None
