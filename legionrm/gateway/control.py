"""The control plane over Ray: the one gateway module that imports Ray or :mod:`legionrm.system`.

:class:`RayControlPlane` connects to the system ``legionrm up`` started in a
home (its Ray address and token from ``<home>/up.json``; a driver already
connected, as in tests, is used as it is), finds the actors by name,
and makes each call with a proof the gateway agent signs acting for the user
(:mod:`legionrm.gateway.plane`).  Ray's calls are awaited without blocking the
gateway's event loop; what an actor raised comes back as itself (a
:class:`~legionrm.errors.LegionError`), a dead actor or a timeout as
:class:`~legionrm.gateway.plane.Unavailable`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from legionrm.auth.guard import GATEWAY, load_agent
from legionrm.auth.proof import CallSigner
from legionrm.config import load_cluster
from legionrm.errors import ConfigError, SystemNotRunningError
from legionrm.gateway.plane import Unavailable
from legionrm.homefs import write_private
from legionrm.models import ClusterSpec
from legionrm.naming import COLLECTION, ENACTOR, POOLS, named_actor, scheduler_name
from legionrm.scheduler.several import Roster
from legionrm.system import init_connect

NAMES = {"collection": COLLECTION, "pools": POOLS, "enactor": ENACTOR}
CALL_TIMEOUT_S = 60.0


class RayControlPlane:
    """:class:`~legionrm.gateway.plane.ControlPlane` over the actors of the system at ``home``."""

    def __init__(self, home: str | os.PathLike[str], timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.signer = CallSigner(load_agent(Path(home), GATEWAY), time.time)  # first: no key, no Ray
        self._owns_ray = not ray.is_initialized()  # a driver already connected (a test) keeps its Ray
        if self._owns_ray:  # the Ray of this home's `up`, never whatever Ray "auto" would find
            try:
                address = json.loads((Path(home) / "up.json").read_text())["address"]
            except (OSError, ValueError, KeyError):
                raise SystemNotRunningError(f"no system is up in {home} (no up.json): `legionrm up` first") from None
            init_connect(address)
        self.timeout_s = timeout_s
        self.home = Path(home)
        self._handles: dict[str, Any] = {}
        self._up = str(self.home / "up.json")
        self._roster: tuple[tuple[int, int, int], Roster] | None = None

    def roster(self) -> Roster:
        """The system's schedulers as ``up`` (or the last ``reload``) wrote them in ``up.json``: read
        again whenever that file changed (one ``stat`` per call: every call of a route asks)."""
        try:
            st = os.stat(self._up)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0, 0)
        if self._roster is None or self._roster[0] != stamp:
            self._roster = (stamp, Roster.from_json(self._state().get("roster")))
        return self._roster[1]

    def _state(self) -> dict[str, Any]:
        try:
            state = json.loads((self.home / "up.json").read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def cluster(self) -> ClusterSpec | None:
        """The cluster file the system runs (``up``'s, or the last ``reload``'s); None when it cannot be read."""
        try:
            return load_cluster(self._state().get("cluster"))
        except (OSError, ConfigError):
            return None

    def record_reload(self, text: str, roster: Roster) -> None:
        """After a reload: its cluster file is the one the system runs (kept in the home, 0600),
        and its schedulers the roster (both in ``up.json``)."""
        path = self.home / "cluster.toml"
        write_private(path, text)
        state = self._state()
        state.update(cluster=str(path), roster=roster.as_json())
        write_private(self.home / "up.json", json.dumps(state, indent=2))

    def _actor(self, target: str) -> str:
        """The actor's name: ``scheduler`` is the default scheduler, ``scheduler:NAME`` that one."""
        if target == "scheduler":
            return scheduler_name(self.roster().default)
        if target.startswith("scheduler:"):
            return target
        if target not in NAMES:
            raise Unavailable(f"no {target!r} is running in this system")
        return NAMES[target]

    def _handle(self, actor: str) -> Any:
        handle = self._handles.get(actor)
        if handle is None:
            if (handle := named_actor(actor)) is None:
                raise Unavailable(f"no {actor!r} is running in this system")
            self._handles[actor] = handle
        return handle

    async def call(self, user: str, target: str, method: str, args: dict[str, Any]) -> Any:
        return await self.start(user, target, method, args)

    def start(self, user: str, target: str, method: str, args: dict[str, Any]) -> Awaitable[Any]:
        actor = None
        try:
            actor = self._actor(target)
            proof = self.signer.acting(user).sign(method, args, to=actor)
            ref = getattr(self._handle(actor), method).remote(**args, proof=proof)
        except Exception as exc:  # noqa: BLE001 -- raised where the call is awaited, as call raises it
            return self._answer(None, exc, actor, target, method)
        return self._answer(ref, None, actor, target, method)

    async def _answer(self, ref: Any, raised: Exception | None, actor: str | None, target: str, method: str) -> Any:
        """The answer of the call ``ref`` (or ``raised``, what starting it raised) as :meth:`call` gives it."""
        try:
            if raised is not None:
                raise raised
            return await asyncio.wait_for(asyncio.wrap_future(ref.future()), self.timeout_s)
        except RayTaskError as exc:
            cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else None
            if cause is not None and not isinstance(cause, RayTaskError):
                raise cause from None
            raise Unavailable(f"{target}.{method} failed: {str(exc).strip().splitlines()[-1]}") from None
        except RayActorError:
            if actor is not None:
                self._handles.pop(actor, None)  # a restarted actor is found again by name
            raise Unavailable(f"the {target} actor is dead or unreachable") from None
        except (TimeoutError, GetTimeoutError):
            raise Unavailable(f"{target}.{method} did not answer within {self.timeout_s:g} s") from None

    async def close(self) -> None:
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
