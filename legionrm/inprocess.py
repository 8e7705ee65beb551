"""A whole legionrm system in one process, without Ray.

The same cores the actors hold, wired with in-process collaborators: the
Collection, host groups of host objects (each sending its heartbeats to the
Collection), vaults, class objects, the Enactor over an in-process gateway,
and the Scheduler.  With ``runs_dir`` its hosts run ``Command`` work for
real, each through a runner (as its owner's OS account).  Tests, the
offline tools and examples use it; the Ray system (:mod:`legionrm.system`)
wires the same cores through actors.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from legionrm.collection.collection import Collection
from legionrm.config import host_groups
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.gateway import InProcessGateway
from legionrm.hostobj.build import build_class, build_host, build_vault
from legionrm.hostobj.classobj import ClassObject
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.runner.owner import build_work, owner_gate
from legionrm.hostobj.runner.instances import WorkInstances
from legionrm.hostobj.vault import VaultObject
from legionrm.models import ClusterSpec
from legionrm.objstate.mobility import LocalStatePort, Mobility
from legionrm.scheduler.build import core_for_cluster
from legionrm.scheduler.elastic import HostStopper
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.ports import PoolGate
from legionrm.scheduler.scheduler import Scheduler
from legionrm.scheduler.sharegate import ShareGate
from legionrm.scheduler.watch import HostWatch
from legionrm.state import RequestStore


class LocalSystem:
    """Build every core of ``spec`` in this process.  ``clock`` is shared by
    all of them so a test can move time for the whole system at once."""

    def __init__(
        self, spec: ClusterSpec, *, clock: Callable[[], float] = time.time, pools: PoolGate | None = None,
        store: RequestStore | None = None, runs_dir: str | Path | None = None,
    ) -> None:
        self.spec = spec
        self.clock = clock
        self.collection = Collection(
            heartbeat_interval_s=spec.collection.heartbeat_interval_s, stale_after=spec.collection.stale_after, clock=clock
        )
        self.groups: dict[str, HostGroup] = {}
        for name, specs in host_groups(spec).items():
            group = HostGroup(name, [build_host(s, clock=clock, **self._work(s.name, runs_dir)) for s in specs],
                              sink=self.collection)
            group.join()
            self.groups[name] = group
        self.vaults: dict[str, VaultObject] = {}
        for v in spec.vaults:
            vault = build_vault(v, clock=clock, sink=self.collection)
            vault.join()
            self.vaults[v.name] = vault
        self.classes: dict[str, ClassObject] = {
            c.name: build_class(c, hosts=self.carrier, vaults=self.vaults) for c in spec.classes
        }
        self.gateway = InProcessGateway.of([*self.groups.values(), *self.vaults.values()], list(self.classes.values()))
        self.enactor = Enactor(self.gateway, clock=clock)
        self.scheduler = Scheduler(self.collection, self.enactor, Planner({c.name: c for c in spec.classes}, clock=clock),
                                   pools, shares=ShareGate.from_core(core_for_cluster(spec)),
                                   stopper=HostStopper(self.carrier, self.classes), watch=HostWatch(self.carrier, lambda: self.groups.values()),
                                   clock=clock, store=store,
                                   owner_gate=owner_gate(spec.classes, spec.runner, None) if runs_dir else None)
        self.enactor.approve = self.scheduler.approve  # Legion's step 6: the scheduler confirms
        # deactivate / activate / migrate: states move between the host objects and the vaults' stores
        self.mobility = Mobility(self.scheduler, LocalStatePort(self.carrier, self.vaults))

    def _work(self, host: str, runs_dir: str | Path | None) -> dict[str, WorkInstances]:
        """With ``runs_dir``, each host runs ``Command`` work for real, through a
        runner of its own (outputs in ``runs_dir/<host>``; how: the spec's ``[runner]``)."""
        return {"work": build_work(self.spec.runner, Path(runs_dir) / host, None)} if runs_dir else {}

    def carrier(self, host: str) -> HostGroup | None:
        """The host group that carries ``host`` (a class object's host resolver)."""
        for g in self.groups.values():
            if host in g:
                return g
        return None

    def host(self, name: str):
        g = self.carrier(name)
        return g.get(name) if g is not None else None

    def heartbeat(self) -> None:
        """Every resource expires what timed out and reports to the Collection."""
        for g in self.groups.values():
            g.expire()
            g.heartbeat()
        for v in self.vaults.values():
            v.expire()
            v.heartbeat()

    def tick(self) -> int:
        """One beat of the whole system: resources expire and report, then the
        Scheduler watches its instances and re-plans its queue.  Returns how
        many instances ended."""
        self.heartbeat()
        return self.scheduler.tick()
