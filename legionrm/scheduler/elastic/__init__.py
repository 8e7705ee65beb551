"""The continuous cycle over elastic work.

Long-running elastic jobs (submitted under FAIR_SHARE classes) are kept at
their weighted fair share of the cluster: each cycle runs the fair-share
core over every job, grows jobs through the Enactor (repairing what a host
refused) and shrinks them through the hosts, in investment order.

Modules: ``enact`` (carrying a cycle's decisions out: growth, stops), ``hosts``
(the core's machines kept in line with the Collection), ``book``
(the book written ahead to the state store, and restored after a restart),
``charges`` (the pools), ``report`` (a cycle's report),
``jobs`` (the callers' side: jobs admitted, completed, updated, processes gone),
``cycle`` (:class:`ElasticCycle`, over ``jobs``), ``runner`` (the clock: a thread that runs
the cycle when due and lets callers wait for its reports).

May import: the fair-share engine's public names, the Collection,
:mod:`legionrm.scheduler.ports`, models and errors.  Never Ray (the actor
passes Ray adapters in) or the command line.
"""

from legionrm.scheduler.elastic.cycle import ElasticCycle
from legionrm.scheduler.elastic.enact import HostStopper
from legionrm.scheduler.elastic.runner import CycleRunner

__all__ = ["CycleRunner", "ElasticCycle", "HostStopper"]
