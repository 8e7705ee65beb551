"""Dependencies between requests, job arrays, start-after times, requeue on a lost node.

::

    request (after_ok / after_any / after_not_ok, begin_at, array task)
        -> gate.Depend.blocked: never (cancel) | begin_at | waiting | array.limit | None
    array request "ID" with array = "0-99%10"
        -> arrays.Arrays.submit: tasks ID_0 .. ID_99, each an ordinary request
        -> arrays.summary / grouped: one line for an array (show ID, list)
    an instance lost with its host
        -> requeue.requeue (requeue = true: back to pending) | requeue.run_end (node_lost)

The Scheduler calls them from thin hooks (its submit, its queue's gate,
its cancel and show, an instance's end).  Written out in docs/requests.md.
Pure: no Ray.
"""

from legionrm.scheduler.depend.arrays import Arrays, grouped, summary, tasks
from legionrm.scheduler.depend.gate import ArrayCounts, Depend, array_state, met
from legionrm.scheduler.depend.requeue import requeue, run_end, wants_requeue

__all__ = ["ArrayCounts", "Arrays", "Depend", "array_state", "grouped", "met", "requeue", "run_end", "summary",
           "tasks", "wants_requeue"]
