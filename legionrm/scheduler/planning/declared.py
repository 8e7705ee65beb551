"""The hosts as the cluster file declares them: what the planner judges a
host by while the Collection does not hold it (not joined since a restart).

A request every reporting host refuses for what it is (``query.no_match``,
``access.denied``) may still be one a host of the system would take once it
reports: such a request waits for it (``host.unreported``) instead of failing
for good.  For a host the Collection holds but that is stale or varied off,
its last record says (:meth:`CollectionSnapshot.unavailable`); for one it
does not hold at all, only the cluster file does: its name, nodepool, declared
attributes and access list, read here as a Collection of their own.  What a
host adds when it reports (its owner's attributes, an owner policy's narrower
access) is not known before it does, so the judgement errs on waiting only
where the cluster file says the host would match.
"""

from __future__ import annotations

from typing import Iterable

from legionrm.collection.collection import Collection
from legionrm.collection.view import CollectionSnapshot
from legionrm.models import Identity, ResourceRecord
from legionrm.models.cluster import HostSpec


class DeclaredHosts:
    """The cluster file's hosts, asked by MIL which of them the Collection
    lacks and may take a request.  Built once per planner; immutable."""

    def __init__(self, hosts: Iterable[HostSpec] = ()) -> None:
        declared = Collection(clock=lambda: 0.0)  # time stands still: every declared host stays "available"
        for h in hosts:
            declared.join(ResourceRecord(name=h.name, kind="host", nodepool=h.nodepool,
                                         attributes={**h.resources, **h.attributes}, access=h.access))
        self._snap: CollectionSnapshot | None = declared.snapshot() if len(declared) else None

    def absent(self, snap: CollectionSnapshot, text: str, caller: Identity) -> list[str]:
        """The declared hosts ``snap`` does not hold that match the MIL ``text``
        (and the hosts ``snap`` serves) and accept ``caller`` by what the
        cluster file says of them; sorted.
        Pure read.  Raises MILError on a bad ``text``."""
        if self._snap is None:
            return []
        if snap.served_query is not None:  # a host that scheduler does not serve is no one it waits for
            text = f"({text}) and ({snap.served_query})"
        held = set(snap.resource_names())
        return [n for n in self._snap.names(text, caller) if n not in held]
