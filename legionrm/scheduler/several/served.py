"""One scheduler's share of a cluster: the hosts it serves, the instances it issued.

Schedulers share nodepools, hosts and the one pool accounting; the hosts
arbitrate between them.  Each plans over the resources its
:class:`~legionrm.models.SchedulerSpec` serves (:class:`ServedCollection`)
and sweeps and audits only the instances whose reservations it issued
(:func:`issued_by`): a second scheduler never stops the first one's work.
"""

from __future__ import annotations

from typing import Any, Callable

from legionrm.models import ClusterSpec, SchedulerSpec

CYCLE_SUFFIX = "-cycle"
"""A scheduler's elastic cycle holds its reservations as ``<name>-cycle``."""


class ServedCollection:
    """A :class:`~legionrm.scheduler.ports.SnapshotSource` over ``source``
    whose snapshots show the hosts outside ``spec``'s nodepools and
    constraint as unavailable.  Other attributes (a remote Collection's
    ``handle``) are the source's."""

    def __init__(self, source: Any, spec: SchedulerSpec) -> None:
        self.source = source
        self.serves = spec.serves()

    def snapshot(self) -> Any:
        return self.source.snapshot().served(self.serves)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)


def issued_by(name: str, cluster: ClusterSpec) -> Callable[[str], bool]:
    """Whether a reservation's issuer (its holder's ``enactor``, as an
    :class:`~legionrm.models.InstanceRef`'s ``scheduler`` names it) is the
    scheduler ``name`` (or its elastic cycle).  An instance no configured scheduler issued (one
    started before schedulers were named, or by a scheduler since removed)
    belongs to the default scheduler, or to a scheduler the cluster does not
    list (a standalone one, as in process)."""
    names = [s.name for s in cluster.scheduler_specs()]
    strays = name == names[0] or name not in names
    others = frozenset(names) - {name}

    def mine(issuer: str) -> bool:
        who = issuer.removesuffix(CYCLE_SUFFIX)
        return who == name or (strays and who not in others)

    return mine
