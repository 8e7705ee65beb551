"""The backfill profile kept between passes: built again only from what changed.

:func:`~legionrm.scheduler.backfill.profile.profile_of` builds a pass's
:class:`Profile` from a Collection snapshot (each host's total and reported
free cpus) and the running requests (the cpus each holds until its walltime
ends).  Most passes follow one that saw the same: a pass after a submission
sees the same host table and the same running work, and one after a pass
that started work sees the same table and that work added at the end of the
running requests.  :class:`ProfileKeeper` keeps the last profile and

- hands out a copy of it (at the new time) when the table, its available
  hosts and the running requests are the same;
- adds only the new requests' usages when the table is the same and the
  running requests are the old ones (the same instance maps, in the same
  order) with new ones after them: their cpus are summed after the others
  and their events merged after those of the same time, the figures and
  order :func:`profile_of` gives;
- builds it afresh otherwise (each request's usage still kept while its
  instance map is the same, :class:`UsageCache`).

Every answer is the profile :func:`profile_of` builds from the same snapshot
and requests.  :attr:`ProfileKeeper.token` changes whenever the profile
does, so a pass can tell that nothing changed since an earlier one (the
top reservation kept between passes: :meth:`Backfill._holds`).  Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from legionrm.collection.collection import CollectionSnapshot
from legionrm.scheduler.backfill.profile import Profile, Usage, UsageCache, hosts_of
from legionrm.scheduler.requests import Entry


class ProfileKeeper:
    """:func:`profile_of` for one Scheduler's passes, kept between them (see the module).  Not thread-safe
    (a Scheduler runs one pass at a time)."""

    def __init__(self) -> None:
        self._usages = UsageCache()
        self._table: object = None  # the snapshot's table the base was read from
        self._served: str | None = None
        self._since, self._until = np.inf, -np.inf  # the base's hosts are those available from since to until
        self._running: list[tuple[Entry, object]] = []  # (entry, its instance map) counted in the profile, in order
        self._held = np.empty(0)  # the cpus they hold per host
        self._kept: Profile | None = None
        self.token: object = object()
        """Changes whenever the kept profile does (an equal token: the same hosts, cpus and running work)."""

    def profile(self, snap: CollectionSnapshot, running: Sequence[Entry]) -> Profile:
        """The profile :func:`profile_of` gives for ``snap`` and ``running``, as a copy of its own."""
        now = float(snap.now)
        same_hosts = (self._kept is not None and snap.table is self._table and snap.served_query == self._served
                      and self._since <= now <= self._until)
        if not same_hosts:
            self._fresh(snap, running)
        else:
            kept = self._running
            n = len(kept)
            if len(running) < n or any(e is not k[0] or e.instances is not k[1] for e, k in zip(running, kept)):
                self._fresh(snap, running)
            elif len(running) > n:
                self._more(running[n:])
        assert self._kept is not None
        out = self._kept.copy()
        out.moved_to(now)
        out.kept = self.token
        return out

    def _fresh(self, snap: CollectionSnapshot, running: Sequence[Entry]) -> None:
        """The profile built as :func:`profile_of` builds it (and what it was built from, kept)."""
        base = hosts_of(snap)
        now = float(snap.now)
        profile = Profile(now, base.names, base.cpus, base.free_cpus)
        self._table, self._served = snap.table, snap.served_query
        # the same table shows the same hosts available until the first of them goes stale
        self._since, self._until = now, snap.stale_at(base.rows)
        self._kept, self._running, self._held = profile, [], np.zeros(len(profile.names))
        self._more(running, self._usages.usages(profile, running))

    def _more(self, running: Sequence[Entry], usages: list[Usage] | None = None) -> None:
        """``running`` (after those counted) counted too: their cpus held, given back as their walltimes end."""
        profile = self._kept
        assert profile is not None  # (changed in place: a pass works on a copy)
        if usages is None:
            usages = self._usages.more(profile, running)
        held = self._held.copy()
        np.add.at(held, [h for u in usages for h in u.hosts], [c for u in usages for c in u.cpus])
        profile.release(*usages)
        profile.free = np.minimum(profile.reported, np.maximum(profile.total - held, 0.0))
        self._kept, self._held = profile, held
        self._running.extend((e, e.instances) for e in running)
        self.token = object()
