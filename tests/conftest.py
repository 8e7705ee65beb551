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

Tests write only under their tmp paths (``tmp_path``, ``tmp_path_factory``):
a file that appears in the repository during the session fails the run,
named at the end of it (tool caches such as ``.hypothesis/`` excepted).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ("tests.osaccounts",)

# No test asserts a time, and Hypothesis's own timing checks are times too: on
# a loaded 2-core machine (CI, 3 workers) a slow example is not a failure.
settings.register_profile("legionrm", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("legionrm")
REPO = Path(__file__).resolve().parents[1]
_CACHES = {".git", ".venv", "__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_BEFORE = pytest.StashKey[set[str]]()


def _repo_files() -> set[str]:
    """Every file in the repository but version control, the venv and tool caches."""
    out: set[str] = set()
    for top, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in _CACHES and not d.endswith(".egg-info")]
        out.update(os.path.relpath(os.path.join(top, f), REPO) for f in files if f != ".git")
    return out


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_BEFORE] = _repo_files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_BEFORE, None)
    new = sorted(_repo_files() - before) if before is not None else []
    if new:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("")
            reporter.write_line(f"tests wrote into the repository (write under tmp_path instead): {', '.join(new)}",
                                red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
