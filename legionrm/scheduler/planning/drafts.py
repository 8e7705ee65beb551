"""Master schedules decided as columns, made models when first read.

A plan of 1,000 instances holds three masters of 1,000 placements each.
Building 3,000 :class:`~legionrm.models.Placement` models is most of what
planning would cost (each a tracked object with its own dict: the garbage
collector's passes follow the allocations), and a plan is often read only
for its verdict (``Plan.ok``, a count, a failure).  So the planner keeps
what it decided (per object request: the keys, hosts, vaults and host
groups) and :class:`LazyMasters` makes the models when a master is first
read: by the Enactor when it reaches that master (the enactment hands it
the plan's own sequence: most enactments read master 1 only), the wire form
(``Plan.suite``, a request sent to an Enactor actor) or an explanation.
What is read is exactly what an eager build would have made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Iterator, overload

from legionrm.models import DeltaSchedule, MasterSchedule, Placement, Resources


@dataclass(frozen=True)
class Columns:
    """The placements of one object request in one master: instance *i* is
    ``keys[i]`` on ``hosts[i]`` (with ``vaults[i]``, in host group ``groups[i]``)."""

    class_name: str
    resources: Resources
    keys: list[str]
    hosts: list[str]
    vaults: list[str | None]
    groups: list[str | None]


@dataclass(frozen=True)
class MasterDraft:
    """One master schedule as the planner decided it: its placements as
    columns (object request by object request, in key order), its deltas
    (few: made models at once) and its score."""

    columns: tuple[Columns, ...]
    deltas: tuple[DeltaSchedule, ...]
    score: float

    def build(self) -> MasterSchedule:
        """The master as a model (trusted values: a validated request, snapshot names)."""
        placements: list[Placement] = []
        for c in self.columns:
            placements += Placement.trusted_many({"class_name": c.class_name, "resources": c.resources},
                                                 key=c.keys, host=c.hosts, vault=c.vaults, group=c.groups)
        return MasterSchedule.model_construct(placements=tuple(placements), deltas=self.deltas, score=self.score)


class LazyMasters(Sequence[MasterSchedule]):
    """The masters of a plan, in rank order: a read-only sequence whose
    masters are made (once each) when read.  Its length needs none made.
    Equal, as the list it stands for, to a list of the same masters; pickled as that list."""

    def __init__(self, drafts: Sequence[MasterDraft]) -> None:
        self._drafts = list(drafts)
        self._made: list[MasterSchedule | None] = [None] * len(self._drafts)

    def __len__(self) -> int:
        return len(self._drafts)

    def _one(self, i: int) -> MasterSchedule:
        m = self._made[i]
        if m is None:
            m = self._made[i] = self._drafts[i].build()
        return m

    @overload
    def __getitem__(self, i: int) -> MasterSchedule: ...

    @overload
    def __getitem__(self, i: slice) -> list[MasterSchedule]: ...

    def __getitem__(self, i: int | slice) -> MasterSchedule | list[MasterSchedule]:
        if isinstance(i, slice):
            return [self._one(k) for k in range(*i.indices(len(self)))]
        return self._one(range(len(self))[i])  # (an IndexError past the end, as a list's)

    def __iter__(self) -> Iterator[MasterSchedule]:
        return (self._one(k) for k in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyMasters, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  (a list's equality: unhashable)

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))
