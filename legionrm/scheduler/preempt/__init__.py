"""Preemption on the negotiated path (issue 26): higher-priority or
non-preemptable work takes cpus from running preemptable work.

- :mod:`.rules`: who may preempt whom and which victims (DUCC's rules, the
  fair-share order); pure numpy;
- :mod:`.preemption`: :class:`Preemption`, the Scheduler's hook: after a
  queue pass it picks a preemptor and its victims, writes each victim's end
  or requeue first, stops them through the Enactor's stop path, and claims
  the freed cpus for the preemptor.

Pure; no Ray.
"""

from legionrm.scheduler.preempt.preemption import CLAIM_S, Preemption
from legionrm.scheduler.preempt.rules import Rank, Victim, choose, may_preempt, victim_order

__all__ = ["CLAIM_S", "Preemption", "Rank", "Victim", "choose", "may_preempt", "victim_order"]
