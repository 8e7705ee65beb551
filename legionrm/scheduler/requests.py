"""The life of a request: states, transitions with time and reason, the
instances it owns.

``pending -> admitted -> placing -> running -> completed | failed | cancelled``
(a request with a future start goes ``placing -> reserved -> running``: its
hosts are reserved ahead and its instances start at its start time; a request that cannot run now goes back from ``admitted`` or ``placing`` to
``pending``; a pending request may be cancelled or fail outright).  Every
transition is appended to the request's history; a transition the table
does not allow raises :class:`SchedulingError`, so a bug cannot silently
resurrect a finished request.

:class:`RequestBook` is plain data with a lock; the Scheduler drives it.
It holds live work: a finished request whose accounting is written leaves it
(:meth:`RequestBook.settle`) for the store's durable history (without a
store: for a bounded memory of the recent ones), so its memory and every
scan over it follow what runs and waits now, never everything ever
submitted.  :meth:`RequestBook.find` and :meth:`RequestBook.page` read both.
Every change is written to its store first and made in memory only once
the write succeeded (:meth:`RequestBook.save` raises
:class:`~legionrm.state.StoreFault` otherwise, and the entry is as it was).
Every change it records is also told, as a
:class:`~legionrm.models.StatusEvent`, to its ``listener`` (the Scheduler's
trigger registry): the one place status events come from.  The instance
side of the book (instances attached, rewritten, ended) is its base class,
:class:`~legionrm.scheduler.book.instances.BookInstances`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from itertools import chain, compress
from operator import attrgetter
from typing import Any, Callable, Iterable, Sequence

from legionrm.errors import SchedulingError
from legionrm.events.triggers import INSTANCE_STATUS, STATUS_OF
from legionrm.models import (
    EventStatus,
    InstanceRef,
    RequestEvent,
    RequestInfo,
    RequestState,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.scheduler.book.instances import BookInstances
from legionrm.scheduler.entry import ALLOWED, HISTORY_LIMIT, LIVE_STATES, Entry
from legionrm.state import RequestStore, StoredRequest

_STATE = attrgetter("state")


class RequestBook(BookInstances):
    """Every request a Scheduler was given, by id.  Thread-safe.

    With a ``store``, every change is written to it before the book or the
    entry shows it (so before the Scheduler acts on it; a write that fails
    raises :class:`~legionrm.state.StoreFault` and changes nothing), and the
    book starts with what the store holds: a restarted Scheduler knows every
    request it had."""

    def __init__(self, clock: Callable[[], float], store: RequestStore | None = None,
                 listener: Callable[[StatusEvent], object] | None = None, *,
                 listener_many: Callable[[list[StatusEvent]], object] | None = None,
                 keep_s: float = 86_400.0, keep: int = 1000, wants: Callable[[str, bool], bool] | None = None
                 ) -> None:
        self.clock = clock
        self.store = store
        self.keep_s, self.keep = keep_s, keep
        """The recent finished requests: those that ended at most ``keep_s`` ago, the last ``keep`` of them."""
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}  # live work, and finished requests not yet settled
        self._by_instance: dict[str, str] = {}
        self._by_state: dict[str, dict[str, Entry]] = {}  # state -> its requests: a pass reads only the live ones
        self._entered: dict[str, int] = {}  # state -> how many times a request entered its index
        self._recent: OrderedDict[str, Entry] = OrderedDict()  # without a store: the recent settled ones
        self.listener = listener
        """Told of every transition and every instance start and end (see the module)."""
        self.listener_many = listener_many
        """Told at once of the instances of a request that started together (in order), events
        nobody else holds; None: :attr:`listener` is told of each."""
        self.wants = wants
        """Does the listener want an event of this status (of an instance: True)?  None: all
        (:meth:`~legionrm.events.triggers.Triggers.wants`: one nobody keeps nor hears is not built)."""
        for item in store.load() if store is not None else ():
            entry = Entry.of(item)
            self._entries[entry.id] = entry
            self._put(entry.state, entry)
            self._by_instance.update({iid: entry.id for iid in entry.instances})

    def tell(self, entry: Entry, status: EventStatus, reason: str, object_id: str | None = None) -> None:
        """Tell the listener of one status change of ``entry`` (or of its instance ``object_id``)."""
        if self.listener is not None and (self.wants is None or self.wants(status, object_id is not None)):
            # (built as trusted: every field comes from the book, valid already; seq given, as the
            # listener stamps it: its stamped copy then shares this fields-set, not a new one)
            self.listener(StatusEvent.trusted(seq=0, at=float(self.clock()), request_id=entry.id, user=entry.user,
                                              status=status, object_id=object_id, reason=reason))

    def tell_many(self, entry: Entry, status: EventStatus, told: list[tuple[str, str]]) -> None:
        """:meth:`tell` of ``(reason, object_id)`` for each of ``told`` (instances of ``entry``), read at
        one time (:meth:`_tell_together`)."""
        if not told or self.listener is None or (self.wants is not None and not self.wants(status, True)):
            return
        self._tell_together({"seq": 0, "at": float(self.clock()), "request_id": entry.id, "user": entry.user,
                             "status": status}, reason=[r for r, _ in told], object_id=[o for _, o in told])

    def tell_all(self, told: list[tuple[Entry, EventStatus, str]]) -> None:
        """:meth:`tell` of each ``(entry, status, reason)`` of ``told`` (a status change of each entry
        itself), in order, read at one time (:meth:`_tell_together`): the changes a group commit made
        together (:meth:`commit_group`)."""
        if self.listener is None:
            return
        if self.wants is not None:
            told = [t for t in told if self.wants(t[1], False)]
        if not told:
            return
        entries, statuses, reasons = zip(*told)
        self._tell_together({"seq": 0, "at": float(self.clock()), "object_id": None},
                            request_id=[e.id for e in entries], user=[e.user for e in entries], status=statuses,
                            reason=reasons)

    def _tell_together(self, fixed: dict[str, Any], **columns: Sequence[Any]) -> None:
        """The events of ``fixed`` and ``columns`` (:meth:`StatusEvent.trusted_many`, as :meth:`tell` builds
        each), handed to :attr:`listener_many` at once when there is one, else to the listener in order."""
        events = StatusEvent.trusted_many(fixed, **columns)
        if self.listener_many is not None:
            self.listener_many(events)
            return
        for event in events:
            self.listener(event)  # type: ignore[misc]

    def save(self, entry: Entry) -> None:
        """Write ``entry`` as it is now to the store (no store: nothing)."""
        if self.store is not None:
            self.store.put(**_fields(entry))

    def commit_group(self, changes: list[tuple[Entry | None, Entry]], record: bool = False) -> None:
        """Write each ``(entry, draft)`` of ``changes`` (``entry`` is to become ``draft``; None: ``draft``
        is a new request) in one transaction, make each so in memory, and return once the transaction
        is synced to the disk (a group commit: one sync for all); ``record``: each entry's draft gets its
        state and reason as a transition in its history first.  The sync runs outside the book's lock
        (:meth:`~legionrm.state.sqlite.SqliteFile.synced`: while it is in the kernel, another group
        commits, and one sync covers both), so the book shows the group before it is durable; the
        caller answers or acts on it only after this returns (it holds the group's claims, so no queue
        pass tries its requests meanwhile).  A new id the book or the group already holds is a
        SchedulingError, and a write that fails a :class:`~legionrm.state.StoreFault`: either way
        nothing changed.  A sync that fails raises its StoreFault (``state.io_error``) with the group
        in memory as the store's file holds it, and the store stopped: every later write fails, so
        nothing more is built on it, and a restart reads back what the disk kept.  The listener is
        told nothing (the caller tells, once the group is in)."""
        with self._lock:
            for entry, draft in changes if record else ():
                if entry is not None:
                    self._event(draft, draft.state, draft.reason)
            new = [d.id for e, d in changes if e is None]
            if len(set(new)) != len(new) or any(rid in self._entries for rid in new):
                raise SchedulingError(f"a request id of this group was already scheduled: {sorted(new)[:3]}")
            ticket = (self.store.put_many([_fields(d) for _, d in changes], wait=False)
                      if self.store is not None else 0)
            for entry, draft in changes:
                if entry is None:
                    self._entries[draft.id] = draft
                    self._put(draft.state, draft)
                else:
                    self._index(entry, draft.state)
                    vars(entry).update(vars(draft))
        if self.store is not None:
            self.store.synced(ticket)

    def _commit(self, entry: Entry, draft: Entry) -> None:
        """Write ``draft`` (what ``entry`` is to become), then make ``entry`` it."""
        self.save(draft)
        self._index(entry, draft.state)
        vars(entry).update(vars(draft))

    # --- reading ------------------------------------------------------------

    def get(self, request_id: str) -> Entry | None:
        """A request of the live book (or, without a store, a recent finished one), else None."""
        return self._entries.get(request_id) or self._recent.get(request_id)

    def find(self, request_id: str) -> Entry | None:
        """:meth:`get`, else the request as the store's history keeps it (``archived``), else None."""
        entry = self.get(request_id)
        if entry is None and self.store is not None and (item := self.store.finished(request_id)) is not None:
            entry = Entry.of(item, archived=True)
        return entry

    def running_ref(self, instance_id: str) -> InstanceRef | None:
        """The running instance ``instance_id`` (None: unknown or ended)."""
        entry = self.owner_of(instance_id)
        if entry is None or entry.instances[instance_id].state != "running":
            return None
        return entry.refs.get(instance_id)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._entries

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def in_state(self, state: RequestState) -> list[Entry]:
        """The requests in ``state`` now (read from an index, not a scan of every request)."""
        with self._lock:
            return list(self._by_state.get(state, {}).values())

    def since(self, state: RequestState, earlier: list[Entry]) -> tuple[list[Entry], list[Entry], int]:
        """At one moment (under the lock): the requests in ``state`` (:meth:`in_state`: in the order
        they last entered it), those of ``earlier`` in it still (in their order), and how many times
        a request entered it so far.  With the count ``n`` read with ``earlier`` (all that were in
        ``state`` then), ``len(still) + count - n == len(now)`` proves that the ``count - n`` last of
        ``now`` are the requests that entered since and that none of ``earlier`` is among them
        (each that entered since is counted, and one that entered twice or entered and left
        makes the sum larger)."""
        with self._lock:
            index = self._by_state.get(state, {})
            still = list(compress(earlier, map(state.__eq__, map(_STATE, earlier))))
            return list(index.values()), still, self._entered.get(state, 0)

    def owner_of(self, instance_id: str) -> Entry | None:
        rid = self._by_instance.get(instance_id)
        return self._entries.get(rid) if rid is not None else None

    def running_instances(self) -> list[InstanceRef]:
        with self._lock:
            live = [e for st in LIVE_STATES for e in self._by_state.get(st, {}).values()]
            return [e.refs[i] for e in live for i in e.live_instances() if i in e.refs]

    def next_end(self) -> float | None:
        """The first time a running instance's walltime ends: no waiting
        request can start before capacity frees (None: nothing running has a
        walltime, so only an end nobody scheduled can free room)."""
        ends = [ref.started_at + wall for ref in self.running_instances()
                if (e := self.owner_of(ref.instance_id)) is not None and (wall := e.walltime(ref.class_name)) is not None]
        return min(ends, default=None)

    def list(self, user: str | None = None, state: str | None = None) -> list[RequestInfo]:
        """The live and recent requests, oldest first, optionally of one user and in one state."""
        return [e.info() for e in self.page(user, state)[0]]

    def page(self, user: str | None = None, state: str | None = None, *, every: bool = False,
             after: tuple[float, str] | None = None, limit: int | None = None
             ) -> tuple[list[Entry], tuple[float, str] | None]:
        """Requests oldest first (by submit time, then id): the live ones and
        the recent finished ones (``every``: each one the history keeps), of
        ``user``, in ``state``, after the key ``after``, at most ``limit``;
        and the key to go on after (None: there are no more)."""
        def key(e: Entry) -> tuple[float, str]:
            return (e.submitted, e.id)

        def wanted(e: Entry) -> bool:
            return ((user is None or e.user == user) and (state is None or e.state == state)
                    and (after is None or key(e) > after))

        with self._lock:
            self._trim()
            mine = sorted((e for e in chain(self._entries.values(), self._recent.values()) if wanted(e)), key=key)
        more = None if limit is None else limit + 1
        found: dict[str, Entry] = {}
        if self.store is not None and state not in ("pending", "admitted", "placing", "reserved", "running"):
            recent = None if every else (self.clock() - self.keep_s, self.keep)
            for item in self.store.finished_page(user=user, state=state, after=after, limit=more or 10_000_000,
                                                 recent=recent):
                found[item.request.request_id] = Entry.of(item, archived=True)
        found.update((e.id, e) for e in mine[:more])  # the live book's own copy first
        out = sorted(found.values(), key=key)
        if limit is not None and len(out) > limit:
            return out[:limit], key(out[limit - 1])
        return out, None

    def count_states(self, user: str | None = None) -> dict[str, int]:
        """How many live and recent requests (of ``user``) are in each state."""
        counts: dict[str, int] = {}
        with self._lock:
            for e in chain(self._entries.values(), self._recent.values()):
                if user is None or e.user == user:
                    counts[e.state] = counts.get(e.state, 0) + 1
        if self.store is not None:
            for st, n in self.store.finished_counts(user=user, recent=(self.clock() - self.keep_s, self.keep)).items():
                counts[st] = counts.get(st, 0) + n
        return counts

    # --- writing ------------------------------------------------------------

    def add(self, request: SchedulingRequest) -> Entry:
        """A new request, pending.  A repeated id is a SchedulingError."""
        with self._lock:
            if request.request_id in self._entries:
                raise SchedulingError(f"request id {request.request_id!r} was already scheduled")
            now = self.clock()
            entry = Entry(request=request, submitted=now)
            entry.history.append(RequestEvent(at=now, state="pending", reason="submitted"))
            self.save(entry)  # a write that fails leaves no trace: the id stays free
            self._entries[request.request_id] = entry
            self._put("pending", entry)
            self.tell(entry, "pending", "submitted")
            return entry

    def move(self, entry: Entry, state: RequestState, reason: str = "", **changes: object) -> None:
        """Record a transition, with ``changes`` to the entry's other fields
        (``failures``, ``earliest_start``) written with it.  A no-op when
        already in ``state`` with the same reason, so a re-planned pending
        request does not fill its history (its ``changes`` are only noted in memory,
        but a changed ``request``, which is written)."""
        with self._lock:
            if entry.state == state and entry.reason == reason:
                if "request" in changes:  # what it asks (a lasting veto's avoided host) is written first
                    self.amend(entry, **changes)
                else:
                    vars(entry).update(changes)
                return
            if entry.state != state and state not in ALLOWED[entry.state]:
                raise SchedulingError(f"request {entry.id!r} cannot go from {entry.state} to {state}")
            draft = entry.draft(state=state, reason=reason, **changes)
            if state == "pending" and self._retry_of(entry, reason):
                # the same "not now" as before: the attempt leaves no trace in the history
                while draft.history[-1].state != "pending":
                    draft.history.pop()
                self._commit(entry, draft)
                return
            self._event(draft, state, reason)
            self._commit(entry, draft)
            self.tell(entry, STATUS_OF[state], reason)

    def amend(self, entry: Entry, **changes: object) -> None:
        """Write ``changes`` to ``entry``'s fields (no transition, nothing told), then make them so."""
        with self._lock:
            self._commit(entry, entry.draft(**changes))

    def _event(self, draft: Entry, state: RequestState, reason: str) -> None:
        draft.history.append(RequestEvent.trusted(at=float(self.clock()), state=state, reason=reason))  # (valid values)
        if len(draft.history) > HISTORY_LIMIT:
            del draft.history[HISTORY_LIMIT // 2]

    def cancel(self, entry: Entry, reason: str, state: RequestState = "cancelled", requeue: str | None = None
               ) -> list[InstanceRef] | None:
        """End a live request's running instances (``stopped``) and cancel it
        (or end it ``state``: ``preempted``), in one write; returns the
        instances to stop now (None, and no change, when it already ended).
        With ``requeue`` (a reason) it goes back to ``pending`` after that
        event, its attempts counted afresh (a preempted request requeued)."""
        with self._lock:
            if entry.final:
                return None
            live, now = entry.live_instances(), self.clock()
            draft = entry.draft(state=state, reason=reason) if requeue is None else entry.draft(
                state="pending", reason=requeue, attempts=0, failures=())
            for iid in live:
                draft.instances[iid] = draft.instances[iid].model_copy(
                    update={"state": "stopped", "ended_at": now, "reason": reason})
            self._event(draft, state, reason)
            if requeue is not None:
                self._event(draft, "pending", requeue)
            self._commit(entry, draft)
            for iid in live:
                self.tell(entry, INSTANCE_STATUS["stopped"], reason, iid)
            self.tell(entry, STATUS_OF[state], reason)
            if requeue is not None:
                self.tell(entry, "pending", requeue)
            return [entry.refs[i] for i in live if i in entry.refs]

    def finish(self, entry: Entry, state: RequestState, reason: str, **changes: object) -> bool:
        """Move a live request to a final ``state`` (with ``changes``); False
        (and no change) when it already ended (a cancel and an end can race)."""
        with self._lock:
            if entry.final:
                return False
            self.move(entry, state, reason, **changes)
            return True

    def _index(self, entry: Entry, state: RequestState) -> None:
        """Move ``entry`` to ``state``'s index (before its state changes)."""
        if entry.state != state:
            self._by_state.get(entry.state, {}).pop(entry.id, None)
            self._put(state, entry)

    def _put(self, state: str, entry: Entry) -> None:
        """``entry`` enters ``state``'s index, last (counted for :meth:`since`)."""
        index = self._by_state.setdefault(state, {})
        index.pop(entry.id, None)  # (always at the end: a dict keeps a present key where it was)
        index[entry.id] = entry
        self._entered[state] = self._entered.get(state, 0) + 1

    @staticmethod
    def _retry_of(entry: Entry, reason: str) -> bool:
        """Does going back to pending for ``reason`` repeat the last pending
        (only an attempt's admitted / placing since)?"""
        for event in reversed(entry.history):
            if event.state == "pending":
                return event.reason == reason
            if event.state not in ("admitted", "placing"):
                return False
        return False

    # --- leaving the live book ----------------------------------------------------

    def settle(self, entries: Iterable[Entry]) -> list[str]:
        """The finished ``entries`` (their accounting written) leave the live
        book: with a store, for its durable history, in one transaction;
        without, for the bounded memory of recent ones.  Returns their ids."""
        with self._lock:
            done = [e for e in entries if e.final and self._entries.get(e.id) is e]
            if not done:
                return []
            if self.store is not None:
                self.store.settle({e.id: e.ended() for e in done})
            for e in done:
                del self._entries[e.id]
                self._by_state.get(e.state, {}).pop(e.id, None)
                for iid in e.instances:
                    self._by_instance.pop(iid, None)
                if self.store is None:
                    self._recent[e.id] = e
            self._trim()
            return [e.id for e in done]

    def _trim(self) -> None:
        """Without a store: forget the settled requests past the recent ones (under the lock)."""
        since = self.clock() - self.keep_s
        while self._recent and (len(self._recent) > self.keep or next(iter(self._recent.values())).ended() < since):
            self._recent.popitem(last=False)

    def durable_diff(self) -> list[tuple[str, Entry | None, StoredRequest | None]]:
        """Where the store's live table and this book disagree: (id, the book's
        entry or None, the stored request or None) for each request missing on
        one side or in another state (its own, or an instance's) there.  Read
        under the book's lock, so a change under way is never half seen.  []
        without a store."""
        if self.store is None:
            return []
        with self._lock:
            stored = {item.request.request_id: item for item in self.store.load()}
            out = []
            for rid in sorted(set(stored) | set(self._entries)):
                e, item = self._entries.get(rid), stored.get(rid)
                if (e is None or item is None or e.state != item.state
                        or {k: v.state for k, v in e.instances.items()} != {k: v.state for k, v in item.instances.items()}):
                    out.append((rid, e, item))
            return out

    def adopt(self, item: StoredRequest) -> Entry:
        """Take ``item`` (a live request the store holds and this book does not) into the book as it is stored."""
        with self._lock:
            entry = self._entries[item.request.request_id] = Entry.of(item)
            self._put(entry.state, entry)
            self._by_instance.update({iid: entry.id for iid in entry.instances})
            return entry


def _fields(e: Entry) -> dict[str, object]:
    """What the store keeps of ``e`` (:meth:`RequestStore.put`'s arguments)."""
    return dict(request=e.request, submitted=e.submitted, state=e.state, reason=e.reason, history=e.history,
                instances=e.instances, refs=e.refs, failures=e.failures, earliest_start=e.earliest_start,
                attempts=e.attempts, held=e.held)
