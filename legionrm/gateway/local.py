"""The control plane in process, behind the same doors as the actors: for tests and tools.

A :class:`~legionrm.inprocess.LocalSystem` whose Scheduler and Collection
are put behind their doors (:class:`~legionrm.scheduler.door.SchedulerDoor`,
:class:`~legionrm.collection.door.CollectionDoor`) with guards over the
registry of a home, and called with proofs the gateway agent signs acting
for the user: the routes, the signature check and the doors' rules run as
they do on Ray.  No Ray here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable
from typing import Any

from legionrm.auth.actordoor import ActorDoor
from legionrm.auth.guard import GATEWAY, Guard, load_agent
from legionrm.auth.proof import CallSigner
from legionrm.collection.door import CollectionDoor
from legionrm.config import parse_cluster
from legionrm.errors import SchedulingError
from legionrm.inprocess import LocalSystem
from legionrm.hostobj.live import reconfigure
from legionrm.models import BoundNode, ClusterSpec, OwnerPolicy, PoolChange, PoolSpec, Refusal, SchedulerSpec, SitePolicySpec
from legionrm.scheduler.door import SchedulerDoor, status_for
from legionrm.scheduler.pools import refused_or_reconfigured, specs_of
from legionrm.scheduler.several import Roster
from legionrm.tomlio import loads_toml


class LocalPlane:
    """:class:`~legionrm.gateway.plane.ControlPlane` over ``system``, checking callers against ``home``."""

    def __init__(self, system: LocalSystem, home: str | os.PathLike[str]) -> None:
        self.system = system
        self._roster: tuple[ClusterSpec, Roster] | None = None
        self.signer = CallSigner(load_agent(home, GATEWAY), time.time)
        self.doors: dict[str, Any] = {
            "scheduler": _SchedulerFacade(SchedulerDoor(system.scheduler, Guard.for_home(home, by="scheduler"),
                                                        mobility=system.mobility), system),
            "collection": CollectionDoor(system.collection, Guard.for_home(home, by="collection")),
            "enactor": _EnactorFacade(system),
            "pools": _PoolsFacade(system, ActorDoor(Guard.for_home(home, by="pools"), "pools")),
        }

    def roster(self) -> Roster:
        """Its one scheduler (as the cluster file describes it) and the classes' choices (made again
        when the system's spec changed)."""
        name, spec = self.system.scheduler.name, self.system.spec
        if self._roster is None or self._roster[0] is not spec:
            mine = next((s for s in spec.scheduler_specs() if s.name == name), SchedulerSpec(name=name))
            self._roster = (spec, Roster((mine,), Roster.of(spec).by_class))
        return self._roster[1]

    def cluster(self) -> ClusterSpec:
        return self.system.spec

    def record_reload(self, text: str, roster: Roster) -> None:
        """After a reload: its cluster file is the one the system runs."""
        self.system.spec = parse_cluster(loads_toml(text), file=self.system.spec.source)

    def start(self, user: str, target: str, method: str, args: dict[str, Any]) -> Awaitable[Any]:
        """:meth:`call`, run when awaited (in process nothing is on its way before that)."""
        return self.call(user, target, method, args)

    async def call(self, user: str, target: str, method: str, args: dict[str, Any]) -> Any:
        if target == f"scheduler:{self.system.scheduler.name}":
            target = "scheduler"
        door = self.doors.get(target)
        if door is None:
            raise SchedulingError(f"this system has no {target!r}")
        proof = self.signer.acting(user).sign(method, args, to=target)
        return getattr(door, method)(**args, proof=proof)

    async def close(self) -> None:
        return None


class _SchedulerFacade:
    """The Scheduler door plus the calls the Ray actor adds to it (``status``)."""

    def __init__(self, door: SchedulerDoor, system: LocalSystem) -> None:
        self.door, self.system = door, system

    def drain(self, host: str, reason: str | None, proof: Any = None) -> bool:
        """As the actor's: drain (or, with None, resume) ``host``, an administrator's; its heartbeat follows."""
        self.door.require_admin(proof, "drain", {"host": host, "reason": reason}, "vary_hosts")
        h = self.system.host(host)
        if h is None:
            return False
        h.drain(reason) if reason is not None else h.resume()
        self.system.heartbeat()
        return True

    def reconfigure_site(self, site: SitePolicySpec, check: bool = False, proof: Any = None) -> Refusal | None:
        """As the actor's: the Scheduler's site policy from now on (an administrator's)."""
        self.door.require_admin(proof, "reconfigure_site", {"site": site, "check": check}, "reload")
        return self.door.core.queue.site.reload(site, self.door.core.book.entries(), check)

    def reconfigure_owners(self, changes: list[OwnerPolicy], check: bool = False, cluster: ClusterSpec | None = None,
                           proof: Any = None) -> Refusal | None:
        """As the actor's: the hosts' and vaults' owners' policies and access lists (an administrator's)."""
        self.door.require_admin(proof, "reconfigure_owners", {"changes": changes, "check": check, "cluster": cluster},
                                "reload")
        return reconfigure(lambda n: self.system.host(n) or self.system.vaults.get(n), changes, check)

    def bound_nodes(self, proof: Any = None) -> list[BoundNode]:
        self.door.require_admin(proof, "bound_nodes", {}, "reload")
        return []  # an in-process system binds no Ray node

    def status(self, proof: Any = None) -> Any:
        return status_for(self.door.core, None, self.door.view_user(proof, "status", {}))

    def cycle_reports(self, after: int = 0, timeout_s: float = 0.0, proof: Any = None) -> list[Any]:
        self.door.viewer(proof, "cycle_reports", {"after": after, "timeout_s": timeout_s})
        return []  # an in-process system runs no elastic cycle of its own

    def __getattr__(self, name: str) -> Any:
        return getattr(self.door, name)


class _PoolsFacade:
    """The pool owner's live changes, as the actor answers them, over the Scheduler's own gate."""

    def __init__(self, system: LocalSystem, door: ActorDoor) -> None:
        self.system, self.door = system, door

    def specs(self, proof: Any = None) -> list[PoolSpec]:
        self.door.caller(proof, "specs", {})
        return list(specs_of(self.system.scheduler.accounts.pools))

    def reconfigure(self, changes: list[PoolChange], default_pool: str | None | bool = False,
                    proof: Any = None) -> Refusal | None:
        self.door.require_system(proof, "reconfigure", {"changes": changes, "default_pool": default_pool},
                                 admin=True, agents=())
        accounts = self.system.scheduler.accounts
        new = refused_or_reconfigured(accounts.pools, changes, self.system.spec.capacity(), default_pool)
        if isinstance(new, Refusal):
            return new
        accounts.pools = new
        return None


class _EnactorFacade:
    """The Enactor's counters (no one's work in them), as the actor answers them."""

    def __init__(self, system: LocalSystem) -> None:
        self.system = system

    def stats(self, proof: Any = None) -> dict[str, int]:
        return dict(self.system.enactor.stats)
