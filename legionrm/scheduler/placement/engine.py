"""The placement engine's entry point: :class:`Placer` chooses the path per
request (node buckets where they apply, else the per-node path) and keeps
both paths on one host state."""

from __future__ import annotations

import numpy as np

from legionrm.scheduler.placement.base import (
    Path,
    PathPlacer,
    PlaceConfig,
    PlacementResult,
    choose_path,
)
from legionrm.scheduler.placement.buckets import BucketPlacer
from legionrm.scheduler.placement.nodes import NodeTable
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.pernode import PerNodePlacer
from legionrm.scheduler.placement.select import SelectRequest


class Placer:
    """Chooses the path per request and keeps both paths on one host state.

    ``Placer(table, config).place(request, now, walltime, queue=...)`` runs the
    bucket path when :func:`choose_path` allows it, else the per-node path;
    ``occupy`` / ``release`` keep the bitmaps and the calendar current.
    """

    def __init__(self, table: NodeTable, config: PlaceConfig | None = None, state: HostState | None = None) -> None:
        self.table = table
        self.config = config or PlaceConfig(resources=table.resources)
        self.state = state if state is not None else HostState(table)
        self.buckets = BucketPlacer(table, self.config, self.state)
        self.nodes = PerNodePlacer(table, self.config, self.state)

    def choose(self, request: SelectRequest, **flags: bool) -> tuple[Path, str]:
        return choose_path(request, self.config, self.table, **flags)

    def place(
        self, request: SelectRequest, now: float | None = None, walltime: float | None = None, *,
        queue: str | None = None, earliest: bool = True, hosts: np.ndarray | None = None, **flags: bool,
    ) -> PlacementResult:
        """``hosts`` narrows the universe to these node indices (see :meth:`PathPlacer.place`)."""
        path, why = self.choose(request, **flags)
        placer: PathPlacer = self.buckets if path == "buckets" else self.nodes
        return placer.place(request, now, walltime, queue=queue, earliest=earliest, path_reason=why, hosts=hosts)

    def occupy(self, result: PlacementResult, start: float, end: float) -> list[int]:
        return self.buckets.occupy(result, start, end)

    def release(self, token: list[int]) -> None:
        self.state.release(token)
