"""The backfill profile kept between passes: built again only from what changed.

:func:`~legionrm.scheduler.backfill.running.profile_of` builds a pass's
:class:`Profile` from a Collection snapshot (each host's total and reported
free cpus) and the running requests (the cpus each holds until its walltime
ends).  Most passes follow one that saw much the same: a pass after a
submission sees the same host table and the same running work; one after a
pass that started work sees the same table and that work added at the end of
the running requests; one after work ended sees the same running requests
less those that ended, and a table whose hosts reported the cpus they gave
back.  :class:`ProfileKeeper` keeps the last profile, and each running
request's usage as columns (in their order: a row per instance counted), and

- hands out a copy of it (at the new time) when the table, its available
  hosts and the running requests are the same;
- takes out the requests that are no longer running when the others are
  the kept ones in their order (the same instance maps): the rows of those
  left, in order, are the usages :func:`profile_of` would count, so their
  cpus are summed and their events sorted as it does; with the hosts' figures
  read again when the table is another with the same hosts;
- adds only the new requests' usages when the running requests are the
  counted ones (the same instance maps, in the same order) with new ones
  after them: their cpus are summed after the others and their events merged
  after those of the same time, the figures and order :func:`profile_of`
  gives;
- builds it afresh otherwise (each request's usage still kept while its
  instance map is the same, :class:`UsageCache`).

Every answer is the profile :func:`profile_of` builds from the same snapshot
and requests.  :attr:`ProfileKeeper.token` changes whenever the profile
does, so a pass can tell that nothing changed since an earlier one (the
top reservation kept between passes: :meth:`Backfill._holds`).  Pure; no Ray.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.scheduler.backfill.profile import INF, Profile, Usage
from legionrm.scheduler.backfill.running import Hosts, UsageCache, hosts_of, usage_of
from legionrm.scheduler.requests import Entry


class ProfileKeeper:
    """:func:`profile_of` for one Scheduler's passes, kept between them (see the module).  Thread-safe:
    a pass, a fresh submit's check against the reservations and a preemption pass may each ask for the
    profile at once (the Scheduler actor serves calls beside its tick), and a change to the kept rows is
    made whole under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usages = UsageCache()
        self._table: object = None  # the snapshot's table the base was read from
        self._served: str | None = None
        self._since, self._until = np.inf, -np.inf  # the base's hosts are those available from since to until
        self._base: Hosts | None = None  # what the profile's hosts reported, as hosts_of read it
        self._running: list[tuple[Entry, object]] = []  # (entry, its instance map) counted in the profile, in order
        # a row per instance counted, in the order profile_of counts them: its request (a place in _running),
        # host (a profile position), cpus and end
        self._no_rows()
        self._held = np.empty(0)  # the cpus they hold per host
        self._kept: Profile | None = None
        self.token: object = object()
        """Changes whenever the kept profile does (an equal token: the same hosts, cpus and running work)."""

    def profile(self, snap: CollectionSnapshot, running: Sequence[Entry]) -> Profile:
        """The profile :func:`profile_of` gives for ``snap`` and ``running``, as a copy of its own."""
        with self._lock:
            return self._profile(snap, running)

    def usage(self, entry: Entry, profile: Profile) -> Usage:
        """:func:`usage_of` ``entry`` on ``profile`` (a copy this keeper gave): for a pass that just started
        ``entry``, kept so the next profile counts it without reading it again."""
        usage = usage_of(entry, profile)
        with self._lock:
            self._usages.keep(entry, profile, usage)
        return usage

    def _profile(self, snap: CollectionSnapshot, running: Sequence[Entry]) -> Profile:
        now = float(snap.now)
        gone = self._gone(running) if self._kept is not None and snap.served_query == self._served else None
        if gone is None:
            self._fresh(snap, running)
        else:
            n = len(self._running)
            if not (snap.table is self._table and self._since <= now <= self._until):
                base = hosts_of(snap)
                if self._base is None or base.names != self._base.names:
                    self._fresh(snap, running, base)
                    gone = None
                else:
                    self._rebuild(gone, snap, base)
            elif gone:
                self._rebuild(gone)
            if gone is not None and len(running) > n - len(gone):
                self._more(running[n - len(gone):])
        assert self._kept is not None
        out = self._kept.copy()
        out.moved_to(now)
        out.kept = self.token
        return out

    def _gone(self, running: Sequence[Entry]) -> list[int] | None:
        """The places in ``_running`` of the requests counted that ``running`` no longer holds, when
        ``running`` is the others (the same instance maps, in their order) then requests not counted
        (None: it is not)."""
        kept, gone = self._running, []
        n, j = len(kept), 0
        for pos, e in enumerate(running):
            while j < n and kept[j][0] is not e:
                gone.append(j)
                j += 1
            if j == n:  # e and those after it are new: none of them counted (then not counted twice)
                if gone:
                    counted = {id(k[0]) for k in kept}
                    if any(id(x) in counted for x in running[pos:]):
                        return None
                return gone
            if e.instances is not kept[j][1]:
                return None
            j += 1
        gone.extend(range(j, n))
        return gone

    def _fresh(self, snap: CollectionSnapshot, running: Sequence[Entry], base: Hosts | None = None) -> None:
        """The profile built as :func:`profile_of` builds it (and what it was built from, kept)."""
        base = hosts_of(snap) if base is None else base
        now = float(snap.now)
        self._at(snap, base)
        self._kept = Profile(now, base.names, base.cpus, base.free_cpus)
        self._running, self._held = [], np.zeros(len(base.names))
        self._no_rows()
        self._more(running, self._usages.usages(self._kept, running))

    def _no_rows(self) -> None:
        """No instance counted: the row columns empty."""
        self._owner, self._host = np.empty(0, np.int64), np.empty(0, np.int64)
        self._cpus, self._end = np.empty(0), np.empty(0)

    def _at(self, snap: CollectionSnapshot, base: Hosts) -> None:
        """The hosts' figures read from ``snap`` (``base``)."""
        self._table, self._served, self._base = snap.table, snap.served_query, base
        # the same table shows the same hosts available until the first of them goes stale
        self._since, self._until = float(snap.now), snap.stale_at(base.rows)

    def _rebuild(self, gone: list[int], snap: CollectionSnapshot | None = None, base: Hosts | None = None) -> None:
        """The profile without the requests at ``gone`` (over the hosts' figures of ``base`` when given:
        the same hosts, read again from ``snap``): the rows of the others, as :func:`profile_of` counts them."""
        if snap is not None and base is not None:
            self._at(snap, base)
        base = self._base
        assert base is not None and self._kept is not None
        if gone:
            alive = np.ones(len(self._running), bool)
            alive[gone] = False
            rows = alive[self._owner]
            self._owner = (np.cumsum(alive) - 1)[self._owner[rows]]
            self._host, self._cpus, self._end = self._host[rows], self._cpus[rows], self._end[rows]
            self._usages.forget(self._running[i][0].id for i in gone)
            self._running = [k for k, a in zip(self._running, alive.tolist()) if a]
        ending = self._end < INF
        events = np.column_stack([self._end[ending], self._host[ending].astype(float), self._cpus[ending]])
        profile = self._kept.rebased(base.cpus, base.free_cpus, events)
        held = np.bincount(self._host, self._cpus, len(profile.names))  # (summed in order, as np.add.at on zeros)
        profile.free = np.minimum(profile.reported, np.maximum(profile.total - held, 0.0))
        self._kept, self._held = profile, held
        self.token = object()

    def _more(self, running: Sequence[Entry], usages: list[Usage] | None = None) -> None:
        """``running`` (after those counted) counted too: their cpus held, given back as their walltimes end."""
        profile = self._kept
        assert profile is not None  # (changed in place: a pass works on a copy)
        if usages is None:
            usages = self._usages.more(profile, running)
        sizes = [len(u.hosts) for u in usages]
        hosts = np.fromiter((h for u in usages for h in u.hosts), np.int64, sum(sizes))
        cpus = np.fromiter((c for u in usages for c in u.cpus), float, len(hosts))
        held = self._held.copy()
        np.add.at(held, hosts, cpus)
        profile.release(*usages)
        profile.free = np.minimum(profile.reported, np.maximum(profile.total - held, 0.0))
        self._kept, self._held = profile, held
        first = len(self._running)
        self._owner = np.concatenate([self._owner, np.repeat(np.arange(first, first + len(usages)), sizes)])
        self._host, self._cpus = np.concatenate([self._host, hosts]), np.concatenate([self._cpus, cpus])
        self._end = np.concatenate([self._end, np.repeat([u.end for u in usages], sizes)])
        self._running.extend((e, e.instances) for e in running)
        self.token = object()
