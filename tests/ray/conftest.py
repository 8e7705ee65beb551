"""The one Ray cluster for the whole test session (every Ray test uses it).

A lean local cluster made with ``ray.cluster_utils.Cluster``: a head with 2
CPUs and no dashboard, monitor or log monitor, plus two worker nodes of 1 CPU
each that advertise distinct custom resources (``node_a`` and ``node_b``), so
tests can pin work to a node and check where it ran.  The temp dir is short
(Unix socket paths are capped at 107 bytes) and removed afterwards; token auth
is off (``RAY_AUTH_MODE=disabled``).  Nothing is left running: the driver
disconnects and the cluster shuts down at the end of the session.

Fixtures:
* ``ray_cluster``: the :class:`ray.cluster_utils.Cluster` (the driver is connected);
  a test may ``add_node`` / ``remove_node`` but must undo what it adds.
* ``ray_nodes``: ``{"head": id, "node_a": id, "node_b": id}`` node id hex strings.
Mark Ray tests with ``pytest.mark.ray`` and kill any named or detached actor you create.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Iterator

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator["object"]:
    os.environ["RAY_AUTH_MODE"] = "disabled"
    import ray
    from ray.cluster_utils import Cluster

    temp_dir = tempfile.mkdtemp(prefix="lrm", dir="/tmp")
    # Cluster writes "<RAY_TMPDIR>/ray/ray_current_cluster": keep it in our dir, not the shared /tmp/ray
    old_tmp = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)
    lean = dict(include_dashboard=False, no_monitor=True, include_log_monitor=False)
    cluster = None
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args=dict(num_cpus=2, temp_dir=temp_dir, resources={"head": 1}, **lean),
        )
        # one at a time: parallel node starts collide on ports on this machine
        cluster.add_node(num_cpus=1, resources={"node_a": 1})
        cluster.add_node(num_cpus=1, resources={"node_b": 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        if old_tmp is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old_tmp


@pytest.fixture(scope="session")
def ray_nodes(ray_cluster) -> dict[str, str]:
    """Node ids by the custom resource each node advertises."""
    import ray

    out: dict[str, str] = {}
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        for label in ("head", "node_a", "node_b"):
            if label in n.get("Resources", {}):
                out[label] = n["NodeID"]
    assert set(out) == {"head", "node_a", "node_b"}, out
    return out
