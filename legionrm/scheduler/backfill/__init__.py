"""Backfill with reservations: which waiting requests a scheduling pass
tries, and the reserved starts they must not delay.

- :mod:`.profile`: each host's cpus over time (free now, given back as
  walltimes end) and the shadow time of a blocked request;
- :mod:`.running`: what the running work holds, and the profile a pass starts from;
- :mod:`.kept`: that profile kept between passes, built again from what changed;
- :mod:`.policy`: the pass rules (``greedy``, ``fcfs``, ``easy``) and the
  gate a fresh submission passes.

The holds themselves, and how the planner keeps them, are in
:mod:`legionrm.scheduler.planning.holds`.  Pure; no Ray.
"""

from legionrm.scheduler.backfill.kept import ProfileKeeper
from legionrm.scheduler.backfill.policy import Backfill, Mode, demand_of, walltime_of, with_walltime
from legionrm.scheduler.backfill.profile import Profile, Usage
from legionrm.scheduler.backfill.running import UsageCache, profile_of, usage_of

__all__ = ["Backfill", "Mode", "Profile", "ProfileKeeper", "Usage", "UsageCache", "demand_of", "profile_of", "usage_of",
           "walltime_of", "with_walltime"]
