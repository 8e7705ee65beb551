"""Fault tests: each module boots one system with a state dir (:func:`durable_system`),
kills or stalls a part, and checks with the auditor that nothing was lost.
Each boots the cluster file cut to what it uses (tests/clusters.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def durable_system(spec: Any, prefix: str, state_dir: str | None = None, **boot_args: Any) -> Iterator[Any]:
    """A system booted from ``spec`` with a fresh state dir (heartbeats every
    0.5 s), shut down and its state dir removed afterwards.  Given
    ``state_dir``, the system boots on that one (a second boot on the state
    of an earlier one), which stays."""
    from legionrm.system import boot

    state = state_dir or tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    system = boot(spec, heartbeat_s=0.5, state_dir=state, **boot_args)
    try:
        yield system
    finally:
        system.shutdown()
        if state_dir is None:
            shutil.rmtree(state, ignore_errors=True)


def pid_of(handle: Any) -> int:
    from legionrm.system import call

    return call(handle.__ray_call__.remote(lambda self: os.getpid()), 10)


def back(handle: Any, old_pid: int | None = None, limit_s: float = 60) -> int:
    """Wait until ``handle`` answers (from a new process, when ``old_pid`` is given)."""
    import ray

    deadline = time.monotonic() + limit_s
    while True:
        try:
            pid = pid_of(handle)
            if old_pid is None or pid != old_pid:
                return pid
        except ray.exceptions.RayError:
            pass
        assert time.monotonic() < deadline, "the actor did not come back"
        time.sleep(0.1)
