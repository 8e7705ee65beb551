"""Live changes to the resources an actor carries (``legionrm reload``).

* ``owner``: an owner's policy and access list on a host or vault, checked
  for every resource before any changes (pure);
* ``calls``: ``reconfigure`` on the host, host-group and vault actors, which
  only forwards to ``owner``.
"""

from legionrm.hostobj.live.owner import owners_back, policy_for, reconfigure

__all__ = ["owners_back", "policy_for", "reconfigure"]
