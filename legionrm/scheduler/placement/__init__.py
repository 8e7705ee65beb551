"""The PBS-style placement engine: node buckets and the per-node path.

A request is PBS select/place syntax (``2:ncpus=12:mem=16gb``,
``scatter:excl``).  Hosts are a static node table of numpy columns; what
runs on them over time is a flat calendar (the host state).  Alike hosts form
buckets kept as bitmaps, so an exclusive request is placed by counting; what
buckets cannot do (shared hosts, pack, named hosts) takes the per-node path.
Both answer "run", "not now" (with the earliest start from the calendar) or
"never", with PBS's texts.

Modules, lowest first: ``select`` (syntax and models), ``nodes`` (the node
table), ``nodestate`` (the calendar and its views), ``chunkfit`` (does a
chunk fit a host), ``psets`` (placement sets), ``base`` (config, result,
path choice, :class:`PathPlacer`, the flow both paths share), ``bucketset``
(alike hosts' buckets and their live pool bitmaps), ``buckets`` and
``pernode`` (the two paths), ``engine`` (:class:`Placer`, the entry point),
``scenario`` (``legionrm place`` files).

May import: :mod:`legionrm.models`, :mod:`legionrm.errors`,
:mod:`legionrm.tomlio`, lark, numpy.  Never another engine, the Legion
scheduler above it, Ray or the command line.  Other parts import this
package's names below, not its modules.
"""

from legionrm.scheduler.placement.base import (
    PathPlacer,
    PlaceConfig,
    PlacementResult,
    choose_path,
    requested_resources,
)
from legionrm.scheduler.placement.engine import Placer
from legionrm.scheduler.placement.nodes import NodeSpec, NodeTable
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.scenario import Scenario, load_scenario, run_scenario
from legionrm.scheduler.placement.select import (
    Chunk,
    Place,
    SelectRequest,
    parse_select,
)

__all__ = [
    "Chunk", "HostState", "NodeSpec", "NodeTable", "PathPlacer", "Place", "PlaceConfig", "PlacementResult", "Placer", "Scenario",
    "SelectRequest", "choose_path", "load_scenario", "parse_select", "requested_resources", "run_scenario",
]
