"""Watching a Scheduler's instances: which still run, on their hosts
(:class:`~legionrm.scheduler.watch.hosts.HostWatch`), which run unknown to
any request (:func:`~legionrm.scheduler.watch.hosts.orphans`,
:func:`~legionrm.scheduler.watch.hosts.sweep_orphans`), and what their work
left: results, output and accounting records
(:class:`~legionrm.scheduler.watch.results.Results`); the Scheduler's tick
that does all this each round (:mod:`~legionrm.scheduler.watch.tick`)."""

from legionrm.scheduler.watch.hosts import HostWatch, orphans, sweep_orphans
from legionrm.scheduler.watch.results import Results, end_reason, end_state, record_of

__all__ = ["HostWatch", "Results", "end_reason", "end_state", "orphans", "record_of", "sweep_orphans"]
