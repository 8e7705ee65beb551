"""The runs of one host object: :class:`WorkInstances` (its runner, how it
finds a user's account, which of its instances are runs), and how a
``Command`` instance's ``args`` and grant become the :class:`Work` it runs."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from typing import Any, Callable, Mapping

from legionrm.homefs import write_private
from legionrm.hostobj.owners.policy import import_object
from legionrm.hostobj.runner.accounts import Account, RunError
from legionrm.hostobj.runner.cgroup import Cgroup
from legionrm.hostobj.runner.files import session_members
from legionrm.hostobj.runner.process import Runner, Work, stop_state
from legionrm.models import InstanceRef, ReservationToken, WorkResult

ARGS = ("command", "function", "args", "env")
"""What a Command instance takes (its request's ``args`` table, and ``env``)."""


def is_work(cls: Any) -> bool:
    """Is ``cls`` (an imported implementation) work the runner starts?"""
    return getattr(cls, "legionrm_runner", False) is True


def names_work(path: str) -> bool:
    """Does the implementation ``path`` (``"module:Class"``) name runner work?  (False when it does not load.)"""
    if ":" not in path:
        return False
    try:
        return is_work(import_object(path, key="implementation"))
    except Exception:  # noqa: BLE001 - not work: the host's own start says why it cannot load
        return False


def request_of(reservation_request_id: str) -> str:
    """The Scheduler's request id a reservation was made for
    (``<request>[~tN][~replanN]/<key>/...``: an attempt's or re-plan's own ids)."""
    return re.sub(r"(~t\d+)?(~replan\d+)?$", "", reservation_request_id.split("/", 1)[0])


def work_for(ref: InstanceRef, token: ReservationToken, request_id: str, args: Mapping[str, Any],
             now: float) -> Work:
    """The run of instance ``ref``: its ``args`` (RunError, one line, for
    anything but :data:`ARGS`) and its grant (cpus, memory, and its walltime:
    what is left of its reservation)."""
    extra = sorted(set(args) - set(ARGS))
    if extra:
        raise RunError(f"Command takes {', '.join(ARGS)}; not {', '.join(extra)}")
    env = args.get("env") or {}
    if isinstance(env, str):  # the request's env table, as it crosses the wire
        try:
            env = json.loads(env)
        except ValueError:
            raise RunError("env must be a table of names to strings") from None
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise RunError("env must be a table of names to strings")
    raw = args.get("args", "")
    fargs = tuple(a for a in str(raw).split(",") if a) if raw != "" else ()
    r = token.resources
    walltime = max(1.0, token.end - max(now, token.start)) if token.end is not None else None
    return Work(instance_id=ref.instance_id, request_id=request_id, command=str(args.get("command", "")),
                function=str(args.get("function", "")), args=fargs, env=env, cpus=r.cpus, memory_gb=r.memory_gb,
                walltime_s=walltime)


class WorkInstances:
    """The runs of one Ray-node host: ``account(user)`` is the OS account a
    user's work runs as (RunError when there is none it may use)."""

    def __init__(self, runner: Runner, account: Callable[[str], Account]) -> None:
        self.runner, self.account = runner, account
        self.ids: set[str] = set()

    def start(self, ref: InstanceRef, token: ReservationToken, request_id: str, args: Mapping[str, Any],
              now: float) -> InstanceRef:
        """Start ``ref``'s run; RunError (one line) when it cannot."""
        work = work_for(ref, token, request_id, args, now)
        self.runner.start(work, self.account(ref.user))
        self.ids.add(ref.instance_id)
        return ref.model_copy(update={"work": True})

    def halt(self, instance_id: str, reason: str) -> None:
        """End a run as the stop's ``reason`` says, off the caller's thread
        (the grace between SIGTERM and SIGKILL must not hold the host)."""
        self.ids.discard(instance_id)
        if self.runner.is_running(instance_id):
            threading.Thread(target=self.runner.stop, args=(instance_id, stop_state(reason)), daemon=True).start()

    def ended(self) -> list[str]:
        """Runs that ended by themselves (their instances end too)."""
        return [i for i in self.ids if not self.runner.is_running(i)]

    def results(self, instance_ids: list[str]) -> dict[str, WorkResult]:
        return {i: r for i in instance_ids if (r := self.runner.result(i)) is not None}

    def orphan(self, instance_id: str) -> None:
        """A run started by an earlier process of this host (it died, and Ray
        restarted it): whatever is left of its session is killed."""
        pid_file = self.runner.settings.log_dir / instance_id / "pid"
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            return
        for p in session_members(pid):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:  # and what left its session, in its cgroup
            Cgroup(pid_file.with_name("cgroup").read_text()).remove()
        except OSError:
            pass
        if self.runner.result(instance_id) is None:
            at = pid_file.stat().st_mtime
            lost = WorkResult(instance_id=instance_id, state="node_lost", started_at=at, ended_at=time.time(),
                              error="its host's process ended while it ran")
            write_private(pid_file.parent / "result.json", lost.model_dump_json())
