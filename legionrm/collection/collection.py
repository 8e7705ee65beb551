"""The Collection core: what every resource is, and which ones fit a query.

Resources ``join`` with their attributes and access policy, send heartbeats
(``update``) with partial attributes, and ``leave``.  ``query`` answers a MIL
expression with the matching records; given a caller it answers only with
resources that would accept that caller, as Legion's collection does.  A
resource whose heartbeats stop for ``stale_after`` intervals is unavailable and
left out of answers unless asked for; ``vary_off`` takes one out by hand.

The attribute table (:mod:`legionrm.collection.table`) holds every attribute's value now.  A
resource's record holds the rest (kind, nodepool, access) and the attributes it exports, in
order; the values there may be older than the table's (a batch of heartbeats that adds and
withdraws none writes the table alone), so every reading takes them from the table
(:meth:`CollectionSnapshot.record`).

Bookkeeping lives in the columnar attribute table beside the exported attributes, under
reserved names that start with ``@`` (an owner cannot export those, and no MIL
``$identifier`` can name them, so a query never sees them; every name MIL can
write, ``$_private`` included, is the owner's), so that availability and
access are filtered with vectorised numpy over the same snapshot as the
user's query, with no per-host Python loop:

- ``@access``: an integer id of the resource's :class:`AccessPolicy` (few
  distinct policies exist, so access is decided once per policy, not per host)
- ``@heartbeat``: the time of the last heartbeat (or sub-collection poll)
- ``@expires``: the time after which the resource is stale: the last heartbeat
  plus ``stale_after`` heartbeat intervals, or, for a resource served from a
  sub-collection, the last successful poll plus ``stale_after`` poll intervals
- ``@off``: varied off by an operator (or unavailable at its sub-collection).
  An operator's ``vary_off`` holds until ``vary_on`` or ``leave``: neither a
  heartbeat, nor a re-join, nor a sub-collection poll undoes it.

Every resource also exports ``name``, ``kind`` and ``nodepool`` (unless it sets
them itself) so ``$name == "batch1"`` works.

A Collection may serve the resources of sub-collections, polled with a MIL
query every ``interval_s`` seconds (Legion's hierarchy of collections).

Planners read the Collection at one instant through ``snapshot()``: a
:class:`~legionrm.collection.view.CollectionSnapshot`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Callable, Mapping, Protocol, cast

from legionrm.collection.table import AttributeTable
from legionrm.collection.view import (
    ACCESS,
    EXPIRES,
    HEARTBEAT,
    OFF,
    RESERVED_PREFIX,
    Caller,
    CollectionSnapshot,
)
from legionrm.errors import CollectionError, UnknownResourceError
from legionrm.mil import compile_query
from legionrm.models import AccessPolicy, AttrValue, QueryResult, ResourceRecord


class CollectionSource(Protocol):
    """Anything a Collection can poll as a sub-collection (a Collection, or an
    adapter over a remote Collection actor)."""

    def query(self, text: str, caller: Caller = None, include_unavailable: bool = False) -> QueryResult: ...


@dataclass
class _Sub:
    name: str
    source: CollectionSource
    query: str
    interval_s: float
    next_poll: float = 0.0
    members: set[str] = field(default_factory=set)


class Collection:
    """The Collection core.  Thread-safe: the actor may call it from a heartbeat
    thread and from request handlers at once.

    ``clock`` is injectable so tests move time without sleeping.
    """

    def __init__(
        self,
        *,
        heartbeat_interval_s: float = 5.0,
        stale_after: int = 3,
        clock: Callable[[], float] = time.time,
        name: str = "collection",
    ) -> None:
        if heartbeat_interval_s <= 0 or stale_after < 1:
            raise CollectionError("heartbeat_interval_s must be > 0 and stale_after >= 1")
        self.name = name
        self.heartbeat_interval_s = heartbeat_interval_s
        self.stale_after = stale_after
        self.stale_window_s = stale_after * heartbeat_interval_s
        """A resource silent for longer than this is unavailable."""
        self._clock = clock
        self._table = AttributeTable()
        # name -> record with its public attributes plus the reserved bookkeeping ones: the
        # names, in order; the values may lag the table's (see the module).  Shared with
        # snapshots until the next change (copy-on-write: _writable)
        self._records: dict[str, ResourceRecord] = {}
        self._records_shared = False
        self._policies: list[AccessPolicy] = []
        self._policy_ids: dict[AccessPolicy, int] = {}
        self._subs: dict[str, _Sub] = {}
        self._varied_off: set[str] = set()  # by an operator (or joined unavailable)
        self._sub_off: set[str] = set()  # reported unavailable by their sub-collection
        self._lock = threading.RLock()

    # --- membership -------------------------------------------------------

    def join(self, record: ResourceRecord) -> None:
        """A resource joins (or re-joins, replacing what was known).  Idempotent.

        A record marked unavailable joins varied off; a re-join does not undo
        an earlier ``vary_off``.  Raises CollectionError (changing nothing)
        for an attribute name in the reserved ``@`` space or a value that is
        not bool / int (64-bit) / float / str.
        """
        with self._lock:
            self._join(record, self.stale_window_s)
            if not record.available:
                self.vary_off(record.name)

    def update(self, name: str, attrs: Mapping[str, AttrValue | None] | None = None) -> None:
        """A heartbeat: merge ``attrs`` (partial; may be empty; a value of None
        withdraws that attribute) and mark the resource alive now.  Raises
        UnknownResourceError if it never joined."""
        attrs = dict(attrs or {})
        _check_public(name, attrs)
        with self._lock:
            rec = self._get(name)
            now = float(self._clock())
            beat = {HEARTBEAT: now, EXPIRES: now + self.stale_window_s}
            merged = {k: v for k, v in {**rec.attributes, **attrs}.items() if v is not None} | beat
            self._put(rec.replaced(attributes=merged), changed={**attrs, **beat})

    def update_many(self, updates: list[tuple[str, Mapping[str, AttrValue | None] | None]]) -> None:
        """Heartbeats of many resources at once (a host group's batch), each as
        :meth:`update`, written to the columns in one pass.  An unknown or
        refused one changes nothing and raises after the others are applied
        (the first such error)."""
        failed: list[tuple[int, Exception]] = []
        with self._lock:
            now = float(self._clock())
            beat = {HEARTBEAT: now, EXPIRES: now + self.stale_window_s}
            writes: list[tuple[str, dict[str, AttrValue | None]]] = []
            at: list[int] = []  # the position in ``updates`` of each write
            if _plain_batch(updates, self._records):  # (the hosts' reports: every name known, no reserved key)
                writes = cast("list[tuple[str, dict[str, AttrValue | None]]]",
                              [(name, attrs or {}) for name, attrs in updates] if None in map(itemgetter(1), updates) else updates)
                at = list(range(len(updates)))
                updates = []
            for k, (name, attrs) in enumerate(updates):
                attrs = dict(attrs or {})
                try:
                    _check_public(name, attrs)
                    if name not in self._records:
                        self._get(name)  # raises UnknownResourceError
                except (UnknownResourceError, CollectionError) as exc:
                    failed.append((k, exc))
                    continue
                writes.append((name, attrs))
                at.append(k)
            refused, reshaped = self._table.write_many(writes, same=beat)
            failed += [(at[w], exc) for w, exc in refused]
            if reshaped:  # the records of the heartbeats that add or withdraw an attribute follow the table
                self._reshape([writes[w] for w in reshaped])
        if failed:
            raise min(failed, key=lambda f: f[0])[1]

    def _reshape(self, writes: list[tuple[str, dict[str, AttrValue | None]]]) -> None:
        """The records of the heartbeats ``writes`` (written to the table), made anew with the names
        of the attributes they now export (the values there are the table's: see the module)."""
        records = self._writable()
        for name, attrs in writes:  # (in turn: a resource twice takes its record as the one before left it)
            rec = records[name]
            merged = {a: v for a, v in {**rec.attributes, **attrs}.items() if v is not None}
            records[name] = rec.replaced(attributes=merged)

    def leave(self, name: str) -> bool:
        """A resource leaves.  Idempotent: returns False if it was not there."""
        with self._lock:
            if name not in self._records:
                return False
            del self._writable()[name]
            self._table.remove(name)
            self._varied_off.discard(name)
            self._sub_off.discard(name)
            return True

    def vary_off(self, name: str) -> None:
        """Take a resource out of answers by hand (it stays known) until
        :meth:`vary_on` or :meth:`leave`.  Raises UnknownResourceError."""
        with self._lock:
            self._get(name)
            self._varied_off.add(name)
            self._set_off(name)

    def vary_on(self, name: str) -> None:
        """Put a varied-off resource back (a resource its sub-collection
        reports unavailable stays unavailable).  Raises UnknownResourceError."""
        with self._lock:
            self._get(name)
            self._varied_off.discard(name)
            self._set_off(name)

    # --- reading ----------------------------------------------------------

    def snapshot(self) -> CollectionSnapshot:
        """An immutable view for one decision (cheap: the table is copy-on-write)."""
        with self._lock:
            return CollectionSnapshot(
                self._table.snapshot(), self._share_records(), tuple(self._policies), float(self._clock())
            )

    def query(self, text: str, caller: Caller = None, include_unavailable: bool = False) -> QueryResult:
        """Answer a MIL query (Legion's QueryCollection).  Raises MILError on a bad
        query before touching any resource.  Records come back without the
        reserved bookkeeping attributes."""
        result = self.snapshot().query(text, caller, include_unavailable)
        return result.model_copy(update={"records": tuple(public(r) for r in result.records)})

    def retrieve_all_attributes(self, name: str) -> dict[str, AttrValue]:
        """Every attribute ``name`` exports.  Raises UnknownResourceError."""
        with self._lock:
            rec, now = self._get(name), self._table.get(name)
            return dict(public(rec.replaced(attributes={a: now[a] for a in rec.attributes})).attributes)

    def record(self, name: str) -> ResourceRecord:
        """The public record of ``name`` with its availability now."""
        return public(self.snapshot().record(name))

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._records)

    def __len__(self) -> int:
        return len(self._records)

    # --- hierarchy --------------------------------------------------------

    def add_subcollection(self, name: str, source: CollectionSource, query: str = "true", interval_s: float = 30.0) -> None:
        """Serve the resources of ``source`` that match ``query`` as our own,
        refreshed by :meth:`poll_subcollections`.  The query is checked now."""
        compile_query(query)
        if interval_s <= 0:
            raise CollectionError("interval_s must be > 0")
        with self._lock:
            self._subs[name] = _Sub(name, source, query, interval_s)

    def remove_subcollection(self, name: str) -> None:
        """Stop polling ``name`` and drop every resource it supplied.  Idempotent."""
        with self._lock:
            sub = self._subs.pop(name, None)
            for member in sub.members if sub else ():
                self.leave(member)

    def poll_subcollections(self, force: bool = False) -> dict[str, int]:
        """Poll every sub-collection that is due (all with ``force``).  Resources
        it no longer reports leave; what it reports stays available here until
        ``stale_after`` of its poll intervals (at least our own stale window)
        pass without a successful poll, so a sub-collection that fails keeps
        its last answer until its resources go stale.  A resource the
        sub-collection reports unavailable is unavailable here too.  Returns
        members per polled sub."""
        now = float(self._clock())
        polled: dict[str, int] = {}
        for sub in list(self._subs.values()):
            if not force and now < sub.next_poll:
                continue
            sub.next_poll = now + sub.interval_s
            try:
                result = sub.source.query(sub.query, None, True)
            except Exception:  # a dead sub-collection must not take this one down
                continue
            fresh = {r.name for r in result.records}
            with self._lock:
                for gone in sub.members - fresh:
                    self.leave(gone)
                lifetime = self.stale_after * max(sub.interval_s, self.heartbeat_interval_s)
                for rec in result.records:
                    if rec.available:
                        self._sub_off.discard(rec.name)
                    else:
                        self._sub_off.add(rec.name)
                    self._join(public(rec), lifetime)
                sub.members = fresh
            polled[sub.name] = len(fresh)
        return polled

    # --- internals --------------------------------------------------------

    def _join(self, record: ResourceRecord, lifetime_s: float) -> None:
        """Join (or re-join) ``record``, alive for ``lifetime_s`` from now, off
        if an operator varied it off or its sub-collection reports it
        unavailable (``record.available`` itself is the callers' business)."""
        _check_public(record.name, record.attributes)
        with self._lock:
            now = float(self._clock())
            attrs: dict[str, AttrValue] = {"name": record.name, "kind": record.kind}
            if record.nodepool is not None:
                attrs["nodepool"] = record.nodepool
            attrs.update(record.attributes)
            attrs[ACCESS] = self._policy_id(record.access)
            attrs[HEARTBEAT] = now
            attrs[EXPIRES] = now + lifetime_s
            attrs[OFF] = self._is_off(record.name)
            self._put(record.model_copy(update={"attributes": attrs, "available": True}), replace=True)

    def _policy_id(self, policy: AccessPolicy) -> int:
        pid = self._policy_ids.get(policy)
        if pid is None:
            pid = self._policy_ids[policy] = len(self._policies)
            self._policies.append(policy)
        return pid

    def _get(self, name: str) -> ResourceRecord:
        try:
            return self._records[name]
        except KeyError:
            raise UnknownResourceError(f"no resource named {name!r} in collection {self.name!r}") from None

    def _put(self, rec: ResourceRecord, *, replace: bool = False, changed: Mapping[str, AttrValue | None] | None = None) -> None:
        """Write ``rec`` to the table, then to the records: the table validates
        values and raises CollectionError having changed nothing, so a refused
        join or heartbeat leaves no trace here either."""
        self._table.upsert(rec.name, rec.attributes if changed is None else changed, replace=replace)
        self._writable()[rec.name] = rec

    def _share_records(self) -> dict[str, ResourceRecord]:
        """The records, for a snapshot: shared until the next change copies them."""
        self._records_shared = True
        return self._records

    def _writable(self) -> dict[str, ResourceRecord]:
        """The records, to change: a copy first if a snapshot holds them."""
        if self._records_shared:
            self._records = dict(self._records)
            self._records_shared = False
        return self._records

    def _is_off(self, name: str) -> bool:
        return name in self._varied_off or name in self._sub_off

    def _set_off(self, name: str) -> None:
        """Write ``@off`` for ``name`` from the operator's and the sub-collection's say."""
        with self._lock:
            rec = self._get(name)
            off = self._is_off(name)
            self._put(rec.model_copy(update={"attributes": {**rec.attributes, OFF: off}}), changed={OFF: off})


def public(rec: ResourceRecord) -> ResourceRecord:
    """``rec`` without the Collection's reserved bookkeeping attributes."""
    attrs = {k: v for k, v in rec.attributes.items() if not k.startswith(RESERVED_PREFIX)}
    hb = rec.attributes.get(HEARTBEAT)
    update: dict = {"attributes": attrs}
    if hb is not None:
        update["last_heartbeat"] = float(hb)
    if rec.attributes.get(OFF):
        update["available"] = False
    return rec.replaced(**update)


def _plain_batch(updates: list[tuple[str, Mapping[str, Any] | None]], records: Mapping[str, object]) -> bool:
    """Every update names a known resource and no reserved (or non-text) attribute: what
    :func:`_check_public` and the lookups would pass, checked on the distinct keys at once."""
    if not updates:
        return True
    names, attrs = zip(*updates)
    if not set(map(type, attrs)) <= {dict, type(None)}:
        return False
    keys = set().union(*filter(None, attrs))
    return (all(isinstance(k, str) and not k.startswith(RESERVED_PREFIX) for k in keys)
            and all(map(records.__contains__, names)))


def _check_public(name: str, attrs: Mapping[str, object]) -> None:
    for key in attrs:
        if key.startswith(RESERVED_PREFIX):
            raise CollectionError(
                f"resource {name!r}: attribute {key!r} is reserved (names starting with '@' belong to the collection)"
            )
