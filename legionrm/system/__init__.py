"""Boot or connect to a legionrm system on Ray, and this process as a Ray driver.

This package (with the ``*/actor.py`` shells) is where Ray lives.  A system is
a set of named actors in the ``legionrm`` namespace: the Collection, the host
groups and vaults, the class objects, the Enactor and the Scheduler.

- :mod:`~legionrm.system.driver`: this process and Ray, before any actor:
  :func:`init_connect` joins the Ray ``legionrm up`` started, :func:`local_cluster`
  makes a lean one on this machine, :func:`call` is the one place the driver
  waits on Ray, :func:`proof_for` signs a call as the driver's user.
- :mod:`~legionrm.system.handle`: :class:`System`, the handles of one system's
  actors and the driver's signed calls on them.
- :mod:`~legionrm.system.bootstrap`: :func:`boot` creates the actors, :func:`connect`
  finds a running system's by name.

``legionrm up`` starts a Ray head of its own (``ray start --head --block`` in
the background, so it outlives the command), creates the actors detached, and
writes what it started to ``~/.legionrm/up.json``; ``legionrm down`` kills
those actors and stops that head, and nothing else (it never runs
``ray stop``, which would kill every Ray on the machine).
"""

from __future__ import annotations

import os

os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # before Ray is imported: see notes/ray-on-a-small-machine.md

from legionrm.hostobj.ray_node import NODE_VAULT_GB, node_vault_name, node_vaults, ray_node_hosts  # noqa: E402
from legionrm.system.bootstrap import (  # noqa: E402
    JOIN_WAIT_S,
    RESTARTS,
    answers,
    await_answers,
    boot,
    connect,
    connect_collection,
    spawn_scheduler,
)
from legionrm.system.driver import (  # noqa: E402
    STATE_FILE,
    call,
    init_connect,
    instance_actor,
    local_cluster,
    node_ids,
    proof_for,
    ray_token_env,
    ray_token_path,
)
from legionrm.system.handle import System  # noqa: E402

__all__ = [
    "JOIN_WAIT_S", "NODE_VAULT_GB", "RESTARTS", "System", "answers", "await_answers", "boot", "connect",
    "connect_collection", "node_vault_name", "node_vaults", "ray_node_hosts", "spawn_scheduler",
    # this process as a Ray driver
    "STATE_FILE", "call", "init_connect", "instance_actor", "local_cluster", "node_ids", "proof_for",
    "ray_token_env", "ray_token_path",
]
