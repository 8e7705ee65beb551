"""What the running work holds, and the profile a pass starts from.

:func:`usage_of` reads a running request's :class:`~.profile.Usage`: the
cpus its live instances hold per host until its walltime ends;
:class:`UsageCache` keeps each one between passes while its instances and
the host set stay the same.  :func:`hosts_of` reads the snapshot's hosts as
a profile does, and :func:`profile_of` builds one pass's
:class:`~.profile.Profile` from a snapshot and the running requests.  Pure;
no Ray.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from legionrm.collection.view import CollectionSnapshot
from legionrm.scheduler.backfill.profile import INF, Profile, Usage
from legionrm.scheduler.requests import Entry


def usage_of(entry: Entry, profile: Profile) -> Usage:
    """The cpus a running ``entry`` holds per host, until its walltime ends
    (an instance's cpus and walltime are its class's first object request's)."""
    objs: dict[str, tuple[float, float]] = {}
    for o in reversed(entry.request.objects):
        objs[o.class_name] = (o.cpus, o.walltime_s if o.walltime_s is not None else INF)
    hosts, cpus, end = [], [], -INF
    for iid in entry.live_instances():
        ref = entry.refs.get(iid)
        i = profile.index.get(ref.host) if ref is not None else None
        if ref is None or i is None:
            continue
        c, wall = objs.get(ref.class_name, (0.0, INF))
        hosts.append(i)
        cpus.append(c)
        end = max(end, ref.started_at + wall)
    return Usage(tuple(hosts), tuple(cpus), end if hosts else INF)


class UsageCache:
    """Each running request's :class:`Usage`, kept between passes while its
    instances and the host set stay the same (a pass then reads only what
    changed).  The book changes an entry's instances only by writing a new
    map (:meth:`~legionrm.scheduler.requests.Entry.draft`), so the same map
    object means the same instances."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._usages: dict[str, tuple[object, Usage]] = {}

    def usages(self, profile: Profile, running: Iterable[Entry]) -> list[Usage]:
        """Each of ``running``'s usages on ``profile``'s hosts (only they are kept)."""
        if profile.names != self._names:
            self._names, self._usages = profile.names, {}
        kept: dict[str, tuple[object, Usage]] = {}
        for entry in running:
            got = self._usages.get(entry.id)
            kept[entry.id] = (got if got is not None and got[0] is entry.instances
                              else (entry.instances, usage_of(entry, profile)))
        self._usages = kept
        return [u for _, u in kept.values()]

    def more(self, profile: Profile, running: Iterable[Entry]) -> list[Usage]:
        """:meth:`usages` of ``running``, kept beside those kept already (``profile``: the hosts of the last call;
        a usage :meth:`keep` was given for the same instance map is not read again)."""
        out = []
        for entry in running:
            got = self._usages.get(entry.id)
            u = got[1] if got is not None and got[0] is entry.instances else usage_of(entry, profile)
            self._usages[entry.id] = (entry.instances, u)
            out.append(u)
        return out

    def keep(self, entry: Entry, profile: Profile, usage: Usage) -> None:
        """``usage``, :func:`usage_of` ``entry`` on ``profile`` (a pass's, which just started it), kept for
        :meth:`more` when ``profile`` has the hosts of the last call (else it is read again there)."""
        if profile.names is self._names or profile.names == self._names:
            self._usages[entry.id] = (entry.instances, usage)

    def forget(self, ids: Iterable[str]) -> None:
        """The usages of the requests ``ids`` no longer kept (they no longer run)."""
        for rid in ids:
            self._usages.pop(rid, None)


class Hosts(NamedTuple):
    """The columns of a snapshot a profile is built from: its available hosts' ``rows`` (name order),
    ``names``, total ``cpus`` and reported ``free_cpus``."""

    rows: np.ndarray
    names: list[str]
    cpus: np.ndarray
    free_cpus: np.ndarray


def hosts_of(snap: CollectionSnapshot) -> Hosts:
    """The snapshot's hosts as a profile reads them: the rows, names and figures of the planner's
    host table (:func:`~legionrm.scheduler.planning.snaptables.base_table`; a host that reports
    no ``free_cpus`` has its total free), read from those three columns alone (a pass that tries
    nothing never needs the table's others)."""
    rows = snap.rows('$kind == "host"')
    cpus = snap.numeric("cpus", rows, 0.0)
    free = snap.numeric("free_cpus", rows, np.nan)
    return Hosts(rows, [str(n) for n in snap.table.names[rows].tolist()], cpus, np.where(np.isnan(free), cpus, free))


def profile_of(snap: CollectionSnapshot, running: Iterable[Entry], cache: UsageCache | None = None) -> Profile:
    """The profile of the snapshot's hosts: free cpus as they reported, or
    less where the ``running`` requests hold more than the report shows (it
    predates their start), given back as each one's walltime ends."""
    base = hosts_of(snap)
    profile = Profile(float(snap.now), base.names, base.cpus, base.free_cpus)
    usages = (cache or UsageCache()).usages(profile, running)
    held = np.zeros(len(profile.names))
    hosts = [h for u in usages for h in u.hosts]
    np.add.at(held, hosts, [c for u in usages for c in u.cpus])
    profile.release(*usages)
    profile.free = np.minimum(profile.free, np.maximum(profile.total - held, 0.0))
    return profile
