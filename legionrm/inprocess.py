"""A whole legionrm system in one process, without Ray.

The same cores the actors hold, wired with in-process collaborators: the
Collection, host groups of host objects (each sending its heartbeats to the
Collection), vaults, class objects, the Enactor over an in-process port,
and the Scheduler.  With ``runs_dir`` its hosts run ``Command`` work for
real, each through a runner (as its owner's OS account).  Tests, the
offline tools and examples use it; the Ray system (:mod:`legionrm.system`)
wires the same cores through actors.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Callable

from legionrm.collection.collection import Collection
from legionrm.config import host_groups
from legionrm.enactor.enactor import Approver, Enactor
from legionrm.enactor.ports import InProcessPort
from legionrm.hostobj.build import build_class, build_host, build_vault
from legionrm.hostobj.classobj import ClassObject
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.runner.instances import WorkInstances
from legionrm.hostobj.runner.owner import build_work, owner_gate
from legionrm.hostobj.vault import VaultObject
from legionrm.models import ClusterSpec, SchedulerSettings
from legionrm.scheduler.elastic import HostStopper
from legionrm.scheduler.mobility import LocalStatePort
from legionrm.scheduler.ports import PoolGate
from legionrm.scheduler.watch import HostWatch
from legionrm.scheduler.wiring import SchedulerPorts, wire
from legionrm.state import RequestStore


class LocalSystem:
    """Build every core of ``spec`` in this process.  ``clock`` is shared by
    all of them so a test can move time for the whole system at once.  The
    Scheduler is built by :func:`~legionrm.scheduler.wiring.wire` from
    ``settings`` (default: the cluster's, with the Scheduler's defaults)."""

    def __init__(
        self, spec: ClusterSpec, *, clock: Callable[[], float] = time.time, pools: PoolGate | None = None,
        store: RequestStore | None = None, settings: SchedulerSettings | None = None,
        runs_dir: str | Path | None = None,
    ) -> None:
        self.spec = spec
        self.clock = clock
        self.runs_dir = runs_dir
        self.collection = Collection(
            heartbeat_interval_s=spec.collection.heartbeat_interval_s, stale_after=spec.collection.stale_after, clock=clock
        )
        self.groups: dict[str, HostGroup] = {}
        self._carriers: dict[str, HostGroup] = {}  # host -> the group found carrying it (a hint: checked when used)
        self.frozen = False  # freeze() was called: the heartbeats then collect what they leave behind
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
        self.resource_port = InProcessPort.of([*self.groups.values(), *self.vaults.values()], list(self.classes.values()))
        default = SchedulerSettings(cluster=spec, name=spec.scheduler_specs()[0].name)  # the cluster's first scheduler
        wired = wire(settings or default, self.scheduler_ports(pools, store))
        self.scheduler, self.mobility = wired.scheduler, wired.mobility
        self.enactor: Enactor = self.scheduler.getEnactor()

    def scheduler_ports(self, pools: PoolGate | None = None, store: RequestStore | None = None) -> SchedulerPorts:
        """What a Scheduler of this system reaches: its Collection, an Enactor
        over its resources, its hosts' stop and watch, its clock; ``pools``
        and ``store`` as given; with ``runs_dir``, the gate that refuses a
        user no OS account maps to."""
        return SchedulerPorts(
            collection=self.collection, enactor=self._enactor_for, clock=self.clock, pools=pools, store=store,
            stopper=HostStopper(self.carrier, self.classes), watch=HostWatch(self.carrier, lambda: self.groups.values()),
            # deactivate / activate / migrate: states move between the host objects and the vaults' shelves
            objects=LocalStatePort(self.carrier, self.vaults),
            owner_gate=owner_gate(self.spec.classes, self.spec.runner, None) if self.runs_dir is not None else None)

    def _enactor_for(self, approve: Approver) -> Enactor:
        """An Enactor over this system's resources that asks ``approve`` (Legion's step 6: the scheduler confirms)."""
        return Enactor(self.resource_port, clock=self.clock, approve=approve)

    def _work(self, host: str, runs_dir: str | Path | None) -> dict[str, WorkInstances]:
        """With ``runs_dir``, each host runs ``Command`` work for real, through a
        runner of its own (outputs in ``runs_dir/<host>``; how: the spec's ``[runner]``)."""
        return {"work": build_work(self.spec.runner, Path(runs_dir) / host, None)} if runs_dir else {}

    def carrier(self, host: str) -> HostGroup | None:
        """The host group that carries ``host`` (a class object's host resolver, asked at every
        start: the group that carried it last is asked first, then every group)."""
        g = self._carriers.get(host)
        if g is not None and host in g:
            return g
        for g in self.groups.values():
            if host in g:
                self._carriers[host] = g
                return g
        return None

    def host(self, name: str):
        g = self.carrier(name)
        return g.get(name) if g is not None else None

    def heartbeat(self) -> None:
        """Every resource expires what timed out and reports to the Collection.

        In a deployment the reports are the Collection actor's work, in its own process; here the
        Collection's replaced records (two objects a host, every beat) are left in the collector's
        young generations, where the Scheduler's next calls would walk them.  So a frozen system
        (:meth:`freeze`: the process's collector is the caller's choice already) collects after its
        heartbeat, as part of it: the Scheduler's calls then meet only their own garbage."""
        for g in self.groups.values():
            g.expire()
            g.heartbeat()
        for v in self.vaults.values():
            v.expire()
            v.heartbeat()
        if self.frozen:
            gc.collect()

    def tick(self) -> int:
        """One beat of the whole system: resources expire and report, then the
        Scheduler watches its instances and re-plans its queue.  Returns how
        many instances ended."""
        self.heartbeat()
        return self.scheduler.tick()

    def freeze(self) -> int:
        """Put what this process holds now (the system just built: its hosts, calendars,
        Collection) out of the garbage collector's way, as the Scheduler actor and the gateway
        do after boot: garbage is collected once, then everything alive is frozen
        (:func:`gc.freeze`), so a full collection no longer walks the hosts' objects.

        Opt-in, because it is process-wide: the caller's own objects are frozen too and are
        never collected, nor their cycles (a caller that builds and drops many systems should
        not call it; :func:`gc.unfreeze` undoes it).  Benchmarks call it and say so.  From then on
        :meth:`heartbeat` collects what it leaves behind.  Returns how many objects are frozen."""
        gc.collect()  # (garbage now would be kept for ever once frozen)
        gc.freeze()
        self.frozen = True
        return gc.get_freeze_count()
