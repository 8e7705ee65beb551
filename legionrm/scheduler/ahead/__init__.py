"""Reservations ahead of time (issue 18): a request with a future ``start``.

* :mod:`legionrm.ahead.steps`: the calendar a host publishes (its usage as a
  step function over time) and how it is read back;
* :mod:`legionrm.ahead.window`: the planner's host table over a future window
  ``[start, start + walltime)`` instead of "free now";
* :mod:`legionrm.ahead.starts`: the Scheduler's reserved requests, started by
  its clock at their start time (or failed when their reservations expired),
  released on cancel.
"""
