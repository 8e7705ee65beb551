"""Reservations ahead of time (issue 18): a request with a future ``start``.

* :mod:`legionrm.scheduler.ahead.starts`: the Scheduler's reserved requests,
  started by its clock at their start time (or failed when their reservations
  expired), released on cancel.

Beside it, not in it: the calendar a host publishes (its usage as a step
function over time, and how it is read back) is :mod:`legionrm.heartbeat`,
as hosts below the scheduler write it; the planner's host table over a
future window ``[start, start + walltime)`` is
:mod:`legionrm.scheduler.planning.window`, as the planner reads it.
"""
