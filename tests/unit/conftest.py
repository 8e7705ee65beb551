"""Unit tests run without Ray: a Ray call that would start a local Ray on its own
(``ray.kill``, ``ray.get``... before any ``ray.init``: Ray's auto-connect) raises
Ray's "not started" error instead, as it does on a driver that never connects.
Starting a whole Ray took one fake-host test 40 s of the suite and left no trace
in what it checked."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _no_ray_started_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = sys.modules.get("ray._private.auto_init_hook")  # (imported with ray: nothing to do without it)
    if hook is not None:
        monkeypatch.setattr(hook, "enable_auto_connect", False)
