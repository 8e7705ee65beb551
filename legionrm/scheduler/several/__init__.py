"""Several schedulers on one cluster (Legion's schedulers side by side).

* ``served``: what one scheduler plans over (its nodepools and constraint,
  as a view of the Collection) and which instances are its own (it sweeps
  and audits only those);
* ``route``: which scheduler a request goes to (the gateway finds a request
  whichever scheduler holds it);
* ``reload``: what a live reconfiguration changes, decided before anything
  changes;
* ``actor``: the Ray shells: the one pool accounting every scheduler
  shares, and the Ray nodes that join after ``up`` bound as hosts (the
  default scheduler's actor binds them).

Pure but ``actor``.
"""

from legionrm.scheduler.several.reload import ReloadPlan, plan_reload
from legionrm.scheduler.several.route import Roster
from legionrm.scheduler.several.served import ServedCollection, issued_by

__all__ = ["ReloadPlan", "Roster", "ServedCollection", "issued_by", "plan_reload"]
