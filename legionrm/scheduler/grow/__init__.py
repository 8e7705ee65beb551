"""Grow with the cluster: pending work that no node can take asks a Ray
autoscaler for nodes (issue 27 item 5; docs/autoscaling.md).

Ray's autoscaler adds nodes for the Ray tasks and actors that wait for
room.  legionrm's pending work waits in its own queue, never in Ray's, so
the autoscaler cannot see it: :class:`Grower` tells it, through Ray's
``ray.autoscaler.sdk.request_resources`` (the adapter is
:mod:`legionrm.scheduler.grow.actor`).  Each call names the whole demand as
bundles, one per instance that waits for a node (Ray's call replaces the
previous one), so demand that went away is withdrawn by the next call.

A request waits for a node when its latest failure is the planner's (stage
``plan``) and says no host can take it: too small even when empty
(``capacity.total``), nothing matches (``query.no_match``, a custom kind no
host has), or no host at all.  Work that waits for running work to end
asks nothing: the nodes it needs exist.  Pure: the ask is the caller's.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from legionrm import codes
from legionrm.models import ObjectRequest, PlacementFailure

log = logging.getLogger(__name__)

GB = 1024**3
MAX_BUNDLES = 1000
"""The most bundles one call asks for (the rest wait for the next)."""
NO_NODE = frozenset({codes.CAPACITY_TOTAL, codes.QUERY_NO_MATCH, codes.PLACEMENT_NO_HOSTS})
"""Plan failures that a new node can end (the hosts there are cannot take it, whatever ends)."""

Bundle = dict[str, float]
Ask = Callable[[list[Bundle]], None]


def bundle_of(obj: ObjectRequest) -> Bundle:
    """One instance of ``obj`` as a Ray resource bundle (``CPU``, ``GPU``,
    ``memory`` in bytes, and its custom kinds by name); zero amounts left out."""
    out: Bundle = {"CPU": float(obj.cpus), "GPU": float(obj.gpus), "memory": float(int(obj.memory_gb * GB))}
    out.update(obj.custom())
    return {k: v for k, v in out.items() if v > 0}


def waits_for_a_node(state: str, failures: Iterable[PlacementFailure]) -> bool:
    """Is a request in ``state`` with these latest ``failures`` pending for want of a node?"""
    fs = list(failures)
    return state == "pending" and bool(fs) and all(f.stage == "plan" and (f.code in NO_NODE or f.lasting) for f in fs)


class Grower:
    """Asks ``ask`` (Ray's ``request_resources``) for the nodes pending work
    waits for.  Asks only when the demand changed; an ask that raises is
    logged and tried again at the next call (it never breaks the caller)."""

    def __init__(self, ask: Ask, max_bundles: int = MAX_BUNDLES) -> None:
        self.ask, self.max_bundles = ask, max_bundles
        self.asked: list[Bundle] | None = None  # the last demand told (None: nothing yet)

    def demand(self, entries: Iterable[Any]) -> list[Bundle]:
        """The bundles of every instance of the requests among ``entries`` (the
        Scheduler's book entries) that wait for a node, oldest request first."""
        out: list[Bundle] = []
        for e in sorted((e for e in entries if waits_for_a_node(e.state, e.failures)), key=lambda e: e.submitted):
            for obj in e.request.objects:
                out.extend(bundle_of(obj) for _ in range(min(obj.count, self.max_bundles - len(out))))
            if len(out) >= self.max_bundles:
                break
        return out

    def __call__(self, entries: Iterable[Any]) -> list[Bundle]:
        """Tell the autoscaler the demand of ``entries`` when it changed (an
        empty demand is told once, so earlier asks are withdrawn); returns it."""
        bundles = self.demand(entries)
        if bundles == self.asked or (not bundles and self.asked is None):
            return bundles
        try:
            self.ask(bundles)
        except Exception as exc:  # noqa: BLE001 -- an autoscaler that cannot be reached: told again next time
            log.warning("the autoscaler was not told of %d waiting bundles: %s", len(bundles), exc)
            return bundles
        self.asked = bundles
        return bundles
