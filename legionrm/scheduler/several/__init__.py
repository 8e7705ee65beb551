"""Several schedulers on one cluster (Legion's schedulers side by side).

* ``served``: what one scheduler plans over (its nodepools and constraint,
  as a view of the Collection) and which instances are its own (it sweeps
  and audits only those);
* ``route``: which scheduler a request goes to, and finding a request
  whichever scheduler holds it.

Pure: no Ray.
"""

from legionrm.scheduler.several.route import Roster
from legionrm.scheduler.several.served import ServedCollection, issued_by

__all__ = ["Roster", "ServedCollection", "issued_by"]
