"""Trace replay: a Standard Workload Format trace through the real
Scheduler in simulated time (``legionrm simulate --swf``).

- :mod:`.swf`: the trace format;
- :mod:`.replay`: the Scheduler it runs, the time points, the policies;
- :mod:`.hosts`: the simulated hosts below the Enactor (a light resource port);
- :mod:`.metrics`: utilization, waits, bounded slowdown, Jain's index.
"""

from legionrm.replay.metrics import Outcome, summary
from legionrm.replay.replay import POLICIES, Replay, replay
from legionrm.replay.swf import Job, Trace, parse, read

__all__ = ["POLICIES", "Job", "Outcome", "Replay", "Trace", "parse", "read", "replay", "summary"]
