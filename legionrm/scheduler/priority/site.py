"""The site's queue policy over a Scheduler's request book: :class:`SitePolicy`.

It joins the pure parts to the book's entries: which QoS a request is in
(:mod:`~legionrm.scheduler.priority.settings`), its users' usage from the
accounting records and what runs now (:mod:`~legionrm.scheduler.priority.usage`),
the fair-share factors (:mod:`~legionrm.scheduler.priority.sharetree`), the
order (:func:`~legionrm.scheduler.priority.multifactor.rank`) and the QoS limits
(:mod:`~legionrm.scheduler.priority.limits`); and it answers ``legionrm share``
and ``legionrm prio``.  Thread-safe.  Pure: no Ray.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import attrgetter, is_, itemgetter
from typing import Protocol

import numpy as np

from legionrm import codes
from legionrm.errors import ConfigError
from legionrm.models import FINAL_STATES, AccountRecord, Refusal, SchedulingRequest, SitePolicySpec
from legionrm.models.priority import PrioReport, PrioRow, ShareReport
from legionrm.scheduler.priority.limits import Ask, QosLimits
from legionrm.scheduler.priority.multifactor import Factors, PendingJob, factors, order_of, rank
from legionrm.scheduler.priority.settings import SiteSettings, settings_of
from legionrm.scheduler.priority.sharetree import ShareTree
from legionrm.scheduler.priority.slots import Ordered, Slots
from legionrm.scheduler.priority.usage import Stretches, Usage, UsageLedger, Use
from legionrm.scheduler.requests import Entry

HOLDING = ("admitted", "placing", "reserved", "running")
_REQUEST, _STATE, _INSTANCES = attrgetter("request"), attrgetter("state"), attrgetter("instances")
_RUNNING = "running"
_NOT_PENDING = {"pending": 0, "running": -2}
"""How :meth:`SitePolicy.order` numbers a request by state (a pending one: its slot; the rest: -3)."""
"""The states in which a request holds (or is taking) its cpus: they count against its QoS's limits."""


class RecordSource(Protocol):
    def after(self, row: int = 0, limit: int = 10_000) -> tuple[int, list[AccountRecord]]: ...


class SitePolicy:
    """The queue policy of ``settings`` over the records of ``records`` (None:
    only what runs counts), at ``clock``'s time, on a cluster of ``total_cpus``."""

    def __init__(self, settings: SiteSettings, records: RecordSource | None, clock: Callable[[], float],
                 total_cpus: float = 0.0) -> None:
        self.settings = settings
        self.formula = dataclasses.replace(settings.formula, total_cpus=total_cpus)
        self.tree = ShareTree(settings.groups)
        self._records, self._clock = records, clock
        self._ledger = UsageLedger(settings.half_life_s)
        self._running = RunningUses()
        self._row = 0
        self._lock = threading.Lock()
        self._jobs: dict[str, tuple[SchedulingRequest, PendingJob]] = {}
        self._table_lock = threading.Lock()  # the order's table: slots, rows, users' numbers
        self._slots = Slots()
        # each slot's row: submitted, cpus, QoS priority, user, fixed priority, held, unlimited (by these settings)
        self._cols, self._table_settings = np.zeros((0, 7)), settings
        self._users: dict[str, int] = {}  # each user's number in the rows, and the names by number
        self._user_names: list[str] = []

    # --- a request's QoS -----------------------------------------------------------------

    def qos_of(self, request: SchedulingRequest) -> str:
        """The QoS ``request`` chose, else its first object's class's, else the site's default."""
        first = request.objects[0].class_name if request.objects else None
        return self.settings.qos_name(first, request.qos)

    def max_walltime(self, request: SchedulingRequest) -> float | None:
        """The ``max_walltime_s`` of ``request``'s QoS (None: it has none, or the QoS is unknown)."""
        q = self.settings.qos.get(self.qos_of(request))
        return q.max_walltime_s if q is not None else None

    def refuse(self, request: SchedulingRequest) -> Refusal | None:
        """Why ``request`` cannot be queued at all: its QoS is unknown, or not
        its user's to choose (an administrator may move a request to any QoS)."""
        name = self.qos_of(request)
        q = self.settings.qos.get(name)
        if q is None:
            return Refusal(code=codes.QOS_UNKNOWN, by="qos",
                           reason=f"no QoS {name!r} (known: {', '.join(sorted(self.settings.qos))})")
        if request.qos is not None and not q.admits(request.identity.user, request.identity.groups):
            return Refusal(code=codes.QOS_DENIED, by="qos",
                           reason=f"user {request.identity.user!r} may not choose QoS {name!r}")
        return None

    def ask(self, entry: Entry) -> Ask:
        walls = [o.walltime_s for o in entry.request.objects if o.walltime_s is not None]
        return Ask(entry.id, entry.user, self.qos_of(entry.request), entry.submitted, entry.cpus(),
                   max(walls) if walls else None)

    # --- a live change (``legionrm reload``) ------------------------------------------------

    def refused(self, settings: SiteSettings, entries: Iterable[Entry]) -> Refusal | None:
        """Why ``settings`` cannot replace the running ones: a request of ``entries`` not yet
        finished is in a QoS they do not define (its limits, order and preemption read it)."""
        for e in entries:
            if e.state in FINAL_STATES:
                continue
            first = e.request.objects[0].class_name if e.request.objects else None
            name = settings.qos_name(first, e.request.qos)
            if name not in settings.qos:
                return Refusal(code=codes.RELOAD_REFUSED, by="qos",
                               reason=f"request {e.id} ({e.state}) is in QoS {name!r}, which the new file does not "
                                      f"define (it defines {', '.join(sorted(settings.qos))})")
        return None

    def reconfigure(self, settings: SiteSettings, entries: Iterable[Entry]) -> Refusal | None:
        """Order and limit by ``settings`` from now on (QoS, fair-share groups, weights, half-life),
        unless :meth:`refused` says why not: then nothing changes.  What was kept of each
        request is forgotten (and nothing read across the change is kept), so the next pass
        reads only the new settings; a new half-life counts the accounting records again."""
        why = self.refused(settings, entries)
        if why is not None:
            return why
        with self._lock:
            if settings.half_life_s != self.settings.half_life_s:
                self._ledger, self._row = UsageLedger(settings.half_life_s), 0
            self.formula = dataclasses.replace(settings.formula, total_cpus=self.formula.total_cpus)
            self.tree = ShareTree(settings.groups)
            self.settings = settings
            self._jobs = {}
        with self._table_lock:  # after the settings: a row worked out before this goes with its table
            self._slots, self._cols, self._table_settings = Slots(), np.zeros((0, 7)), settings
        return None

    def reload(self, spec: SitePolicySpec, entries: Iterable[Entry], check: bool = False) -> Refusal | None:
        """:meth:`reconfigure` to the site policy ``spec`` describes (with ``check``: only
        :meth:`refused`, changing nothing); settings that do not validate are refused too."""
        try:
            settings = settings_of(spec)
        except ConfigError as exc:
            return Refusal(code=codes.RELOAD_REFUSED, by="qos", reason=str(exc))
        entries = list(entries)
        return self.refused(settings, entries) if check else self.reconfigure(settings, entries)

    # --- usage and fair share --------------------------------------------------------------

    def usage(self, entries: Iterable[Entry], now: float | None = None) -> dict[str, Usage]:
        """Each user's raw and decayed cpu-seconds: finished work (records read once each) and running work."""
        now = self._clock() if now is None else now
        with self._lock:
            self._read_records(now)
            return self._ledger.usage(now, self._running.columns(entries))

    def _read_records(self, now: float) -> None:
        """(Under the lock.)  The accounting records not read yet, counted in the ledger."""
        while self._records is not None:
            self._row, got = self._records.after(self._row)
            if not got:
                break
            self._ledger.add((Use(r.user, r.cpus, r.start, r.end) for r in got), now)

    def fairshare(self, entries: list[Entry], now: float, users: Iterable[str] | None = None) -> dict[str, float]:
        """Each user's fair-share factor (of ``users``, default every user in ``entries``, and all with usage)."""
        every = {e.user for e in entries} if users is None else set(users)
        return self.tree.factors(self._decayed(entries, now), every)

    def _decayed(self, entries: list[Entry], now: float) -> dict[str, float]:
        """Each user's decayed usage at ``now`` (:meth:`usage`'s, without the raw usage)."""
        with self._lock:
            self._read_records(now)
            return self._ledger.decayed(now, self._running.columns(entries))

    # --- the order and the limits ----------------------------------------------------------

    def job(self, entry: Entry) -> PendingJob:
        """What the formula needs of ``entry`` (kept while its request is the same object)."""
        cached = self._jobs.get(entry.id)
        if cached is not None and cached[0] is entry.request:
            return cached[1]
        settings = self.settings
        job = self._job_of(entry)
        if self.settings is settings:  # (read across a reload: not kept, read anew next time)
            self._jobs[entry.id] = (entry.request, job)
        return job

    def _job_of(self, entry: Entry) -> PendingJob:
        q = self.settings.qos.get(self.qos_of(entry.request))
        return PendingJob(entry.id, entry.user, entry.submitted, entry.cpus(), q.priority if q else 0,
                          entry.request.priority)

    def order(self, entries: list[Entry], now: float | None = None) -> list[Entry]:
        """The pending requests that are not held, in the order they go next
        (:func:`order_of`, as numpy columns: each request's row is worked out
        once, kept by its slot while its request is the same object).  The
        list is an :class:`Ordered`: the walk of the backfill pass reads each
        entry's slot there."""
        now = self._clock() if now is None else now
        with self._table_lock:
            table = self._slots
            get = table.of.get
            # the one look at each entry (the pass's hot path): a pending request's slot (-1: not numbered yet),
            # -2 running (its usage counts in the fair share), -3 the rest
            # (read in C, without a Python loop: a pass looks at every live request)
            found = np.fromiter(map(get, map(id, map(_REQUEST, entries)), repeat(-1)), np.int64, len(entries))
            state = np.fromiter(map(_NOT_PENDING.get, map(_STATE, entries), repeat(-3)), np.int64, len(entries))
            found = np.where(state == 0, found, state)
            new = np.flatnonzero(found == -1)
            if len(new):
                found[new] = self._number([entries[i] for i in new.tolist()])
            at = np.flatnonzero(found >= 0)
            slots = found[at]
            if table.crowded(len(slots)):  # most requests numbered are gone: number those left afresh
                old = table.renew(slots.tolist())
                moved = np.full(len(self._cols), -1, np.int64)
                moved[old] = np.arange(len(old))
                self._cols, slots = self._cols[old], moved[slots]
            epoch, cols = table.epoch, self._cols[slots]
            names = list(self._user_names)
        unheld = cols[:, 5] == 0.0
        at, slots, cols = at[unheld], slots[unheld], cols[unheld, :5]
        if len(at) < 2:  # the order of one needs no factors (a submit to an empty queue: no usage read)
            return Ordered([entries[i] for i in at.tolist()], table, epoch, slots)
        users = cols[:, 3].astype(np.int64)
        running = [entries[i] for i in np.flatnonzero(found == -2).tolist()]
        waiting = [names[u] for u in set(users.tolist())]
        fs = self.tree.factors(self._decayed(running, now), waiting, only=waiting)  # (:meth:`fairshare`'s, of these)
        cols[:, 3] = np.fromiter(map(fs.get, names, repeat(1.0)), np.float64, len(names))[users]
        ranked = order_of(cols, lambda i: entries[at[i]].id, now, self.formula)
        picked = at[ranked].tolist()
        return Ordered(itemgetter(*picked)(entries), table, epoch, slots[ranked])  # (two or more: a tuple)

    def _number(self, entries: list[Entry]) -> np.ndarray:
        """Slots for requests not numbered yet, and their rows of :func:`order_of`'s
        columns, with the user's number in place of the fair-share factor, then
        1 when held, and 1 when :meth:`unlimited` (under the table's lock)."""
        table = self._slots
        slots, rows = [], []
        for entry in entries:
            slot = table.of.get(id(entry.request))  # (two entries may share one request)
            if slot is not None:
                slots.append(slot)
                continue
            slots.append(table.add(entry.request))
            job = self._job_of(entry)
            user = self._users.get(job.user)
            if user is None:
                user = self._users[job.user] = len(self._user_names)
                self._user_names.append(job.user)
            rows.append((job.submitted, job.cpus, float(job.qos_priority), float(user),
                         float("nan") if job.fixed is None else float(job.fixed),
                         0.0 if entry.request.hold is None else 1.0, 1.0 if self._unlimited(entry.request) else 0.0))
        if len(table.requests) > len(self._cols):
            grown = np.zeros((max(len(table.requests), 2 * len(self._cols)), 7))
            grown[:len(self._cols)] = self._cols
            self._cols = grown
        fresh = np.asarray(slots, np.int64)
        if rows:
            self._cols[len(table.requests) - len(rows):len(table.requests)] = rows
        return fresh

    def rank(self, entries: list[Entry], now: float | None = None) -> list[tuple[Entry, Factors]]:
        """The pending requests that are not held, in the order they go next, with their factors."""
        now = self._clock() if now is None else now
        pending = {e.id: e for e in entries if e.state == "pending" and e.request.hold is None}
        fs = self.fairshare(entries, now, {e.user for e in pending.values()})
        ranked = rank((self.job(e) for e in pending.values()), fs, now, self.formula)
        return [(pending[f.id], f) for f in ranked]

    def limits(self, entries: list[Entry], user: str | None = None) -> QosLimits:
        """The QoS limits over ``entries`` as they stand (held requests do not count as waiting); of
        ``user``'s only if given.  Only QoS with a per-user limit are counted (none: nothing is)."""
        per_user = {n for n, q in self.settings.qos.items()
                    if q.max_running_cpus_per_user is not None or q.max_pending_per_user is not None}
        held: dict[tuple[str, str], float] = {}
        pending: list[Ask] = []
        if per_user:
            for e in entries:
                if (user is not None and e.user != user) or (e.state not in HOLDING and e.state != "pending"):
                    continue
                qos = self.qos_of(e.request)
                if qos not in per_user:
                    continue
                if e.state in HOLDING:
                    held[(e.user, qos)] = held.get((e.user, qos), 0.0) + e.cpus()
                elif e.request.hold is None:
                    pending.append(self.ask(e))
        return QosLimits(self.settings.qos, held, pending)

    def unlimited(self, request: SchedulingRequest) -> bool:
        """Can no limit ever keep ``request`` waiting: not held, and its QoS is known and has no limit
        (then :meth:`blocked` is None whatever the pass's counts; a pass need not ask).  Read from
        the order's row of ``request`` when it has one worked out under these settings."""
        with self._table_lock:
            slot = self._slots.of.get(id(request))
            if slot is not None and self._table_settings is self.settings and self._slots.requests[slot] is request:
                return bool(self._cols[slot, 6])
        return self._unlimited(request)

    def _unlimited(self, request: SchedulingRequest) -> bool:
        q = self.settings.qos.get(self.qos_of(request))
        return (request.hold is None and q is not None and q.max_walltime_s is None
                and q.max_pending_per_user is None and q.max_running_cpus_per_user is None)

    def blocked(self, entry: Entry, limits: QosLimits) -> Refusal | None:
        """Why ``entry`` may not be tried now: held, or over a limit of its QoS (None: it may)."""
        if entry.request.hold is not None:
            who = "its user" if entry.request.hold == "user" else "an administrator"
            return Refusal(code=codes.QUEUE_HELD, by="queue", reason=f"held by {who}: `legionrm release {entry.id}`")
        return limits.blocked(self.ask(entry))

    # --- views ------------------------------------------------------------------------------

    def share_report(self, entries: list[Entry], user: str | None = None) -> ShareReport:
        """The fair-share tree (``legionrm share``); for ``user``: the groups and their own row."""
        rows = self.tree.rows(self.usage(entries), (e.user for e in entries))
        if user is not None:
            rows = [r for r in rows if r.user is None or r.user == user]
        return ShareReport(half_life_s=self.settings.half_life_s, rows=tuple(rows))

    def prio_report(self, entries: list[Entry], user: str | None = None) -> PrioReport:
        """Each pending request's factors (``legionrm prio``), in queue order, then the held ones; of ``user`` only if given."""
        now = self._clock()
        limits = self.limits(entries)
        ranked = self.rank(entries, now)
        fs = self.fairshare(entries, now)
        held = [(e, factors(self.job(e), fs.get(e.user, 1.0), now, self.formula)) for e in entries
                if e.state == "pending" and e.request.hold is not None]
        rows = []
        for e, f in ranked + sorted(held, key=lambda p: (p[0].submitted, p[0].id)):
            if user is None or e.user == user:
                why = self.blocked(e, limits)
                rows.append(PrioRow(id=e.id, user=e.user, qos=self.qos_of(e.request), priority=f.priority, age=f.age,
                                    fairshare=f.fairshare, qos_factor=f.qos, size=f.size, fixed=f.fixed,
                                    hold=e.request.hold, blocked=f"{why.code}: {why.reason}" if why is not None else ""))
        return PrioReport(weights=dataclasses.asdict(self.formula.weights), rows=tuple(rows))


class RunningUses:
    """What runs now, as stretches of cpus from each instance's start, in the order of the entries and their
    instances; each running request's stretches kept while its request and instance map are the same objects
    (the book writes a new map when its instances change), as :class:`Use` and as columns."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        self._columns: tuple[list[_Kept], Stretches] = ([], Stretches.of([]))
        self._last: tuple[list, list, list, list] | None = None  # the last call's entries, states, requests, maps

    def __call__(self, entries: Iterable[Entry]) -> list[Use]:
        out: list[Use] = []
        for k in self._read(entries):
            out += k.uses
        return out

    def columns(self, entries: Iterable[Entry]) -> Stretches:
        """The same stretches as :class:`Stretches` (kept while the running requests' stretches are the same;
        given back without a look at each request when ``entries`` are the last call's, each in the same state
        with the same request and instance map: a pass after one that started and ended nothing)."""
        entries = list(entries)  # (kept: compared with the next call's)
        key = (entries, list(map(_STATE, entries)), list(map(_REQUEST, entries)), list(map(_INSTANCES, entries)))
        last = self._last
        if (last is not None and len(entries) == len(last[0]) and key[1] == last[1]
                and all(all(map(is_, key[i], last[i])) for i in (0, 2, 3))):
            return self._columns[1]
        self._last = key
        kept = [k for k in self._read(entries) if len(k.each)]
        was, columns = self._columns
        if len(kept) == len(was) and all(map(is_, kept, was)):
            return columns
        users = list(dict.fromkeys(k.user for k in kept))
        number = {u: i for i, u in enumerate(users)}
        rows = [len(k.cpus) for k in kept]
        first = np.cumsum([0] + rows)[:-1]  # each request's first row
        stack = (lambda c: np.concatenate([getattr(k, c) for k in kept])) if kept else (lambda c: np.zeros(0))
        columns = Stretches(users, np.repeat(np.asarray([number[k.user] for k in kept], np.int64), rows),
                            stack("cpus"), stack("start"), stack("end"),
                            stack("each").astype(np.int64) + np.repeat(first, [len(k.each) for k in kept]), True)
        self._columns = (kept, columns)
        return columns

    def _read(self, entries: Iterable[Entry]) -> list[_Kept]:
        """Each running entry's stretches, in order (kept, or read anew); the kept ones are now these."""
        out: list[_Kept] = []
        kept: dict[str, _Kept] = {}
        entries = entries if isinstance(entries, list) else list(entries)  # (read twice)
        for e in compress(entries, map(_RUNNING.__eq__, map(_STATE, entries))):  # (the state read in C)
            got = self._kept.get(e.id)
            if got is None or got.request is not e.request or got.instances is not e.instances:
                got = _Kept(e)
            kept[e.id] = got
            out.append(got)
        self._kept = kept
        return out


class _Kept:
    """One running request's stretches for its request and instance map: each running instance's
    cpus (its class's first object's) from its start, until now; as the rows of :class:`Stretches`
    (its distinct stretches, and each instance's row), and as :class:`Use` when asked."""

    __slots__ = ("request", "instances", "user", "rows", "cpus", "start", "end", "each", "_uses")

    def __init__(self, e: Entry) -> None:
        self.request, self.instances, self.user = e.request, e.instances, e.user
        cpus = {o.class_name: o.cpus for o in reversed(e.request.objects)}  # a class's first object wins
        refs = e.refs
        rows: dict[tuple[float, float], int] = {}  # (its instances most often share their numbers)
        each = [rows.setdefault((cpus.get(ref.class_name, 0.0), ref.started_at), len(rows))
                for iid, info in e.instances.items() if info.state == _RUNNING and (ref := refs.get(iid)) is not None]
        self.rows = list(rows)
        self.each = np.asarray(each, np.int64)
        self.cpus, self.start = (np.fromiter((r[c] for r in self.rows), np.float64, len(rows)) for c in range(2))
        self.end = np.full(len(rows), np.inf)
        self._uses: list[Use] | None = None

    @property
    def uses(self) -> list[Use]:
        """The stretches as :class:`Use`, in the order of the request's instances (made once)."""
        if self._uses is None:
            rows = [Use(self.user, c, s, float("inf")) for c, s in self.rows]  # (frozen: one per row)
            self._uses = [rows[i] for i in self.each.tolist()]
        return self._uses
