"""The one Ray cluster for the whole test session (every Ray and fault test uses it).

A lean local cluster (:func:`legionrm.system.local_cluster`): a head with 2
CPUs and no dashboard, monitor or log monitor, plus two worker nodes of 1 CPU
each that advertise distinct custom resources (``node_a`` and ``node_b``), so
tests can pin work to a node and check where it ran.  Token auth is off
(``RAY_AUTH_MODE=disabled``).  Nothing is left running: the driver
disconnects and the cluster shuts down at the end of the session.

Fixtures:
* ``ray_cluster``: the :class:`ray.cluster_utils.Cluster` (the driver is connected);
  a test may ``add_node`` / ``remove_node`` but must undo what it adds.
* ``ray_nodes``: ``{"head": id, "node_a": id, "node_b": id}`` node id hex strings.
Mark Ray tests with ``pytest.mark.ray`` and kill any named or detached actor you create.
The fixtures of tests that act as other OS accounts (``os_accounts``,
``work_python``) are in tests/osaccounts.py, loaded here as a plugin.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

pytest_plugins = ("tests.osaccounts",)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator["object"]:
    os.environ["RAY_AUTH_MODE"] = "disabled"
    from legionrm.system import local_cluster

    with local_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def ray_nodes(ray_cluster) -> dict[str, str]:
    """Node ids by the custom resource each node advertises."""
    from legionrm.system import node_ids

    out = node_ids()
    assert set(out) == {"head", "node_a", "node_b"}, out
    return out
