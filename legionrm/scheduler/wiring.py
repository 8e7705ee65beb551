"""One wiring: a Scheduler and its collaborators, built from the cluster's settings.

:func:`wire` takes the one typed :class:`~legionrm.models.SchedulerSettings`
(the validated cluster file and the Scheduler's own numbers) and the runtime
:class:`SchedulerPorts` (the Collection, the Enactor, the pools, the hosts'
stop and watch, the state stores, the clock), and builds, in dependency
order and with nothing assigned after construction: the status triggers,
the request book, the planner, the enactment, the mobility of objects, the
accounts (pools and DUCC allotments), the elastic cycle (when the ports
bring its Enactor) and the :class:`~legionrm.scheduler.scheduler.Scheduler`
composing them.  The Ray shell (:mod:`legionrm.scheduler.actor`) and the
in-process system (:mod:`legionrm.inprocess`) both call it, with Ray
adapters or in-process cores as the ports.

:func:`pool_gate` and :func:`core_for_cluster` build the admission gate and
the fair-share core of a cluster (a fresh object each call: one per
Scheduler).  They raise ConfigError naming the file.  Pure: no Ray.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from legionrm.errors import SchedulingError
from legionrm.events.triggers import Triggers
from legionrm.models import ClusterSpec, Refusal, SchedulerSettings, SchedulerSpec, SchedulingRequest
from legionrm.scheduler.accounts import Accounts
from legionrm.scheduler.elastic import ElasticCycle
from legionrm.scheduler.enactment import Enactment
from legionrm.scheduler.fairshare import core_for_cluster
from legionrm.scheduler.mobility import Mobility, StatePort
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning.declared import DeclaredHosts
from legionrm.scheduler.pools import RespoolGate, tree_for_cluster
from legionrm.scheduler.ports import (
    EnactorFor,
    EnactorPort,
    InstanceWatch,
    OpenGate,
    PoolGate,
    SnapshotSource,
    Stopper,
    Swappable,
)
from legionrm.scheduler.requests import RequestBook
from legionrm.scheduler.scheduler import Scheduler
from legionrm.scheduler.grow import Grower
from legionrm.scheduler.several import ServedCollection, issued_by
from legionrm.scheduler.sharegate import ShareGate
from legionrm.scheduler.watch import Results
from legionrm.state import AccountingStore, ElasticStore, RequestStore

SERVES_ALL = SchedulerSpec().serves()

__all__ = ["SchedulerPorts", "SchedulerSettings", "Wired", "core_for_cluster", "pool_gate", "wire"]


@dataclass(frozen=True)
class SchedulerPorts:
    """What a Scheduler reaches at run time, in process or over Ray.

    ``collection``: the Collection it plans over; ``enactor``: builds the
    Enactor from the Scheduler's approval (see
    :data:`~legionrm.scheduler.ports.EnactorFor`); ``clock``: shared by every
    part; ``pools``: the admission gate (None: admit everything); ``stopper``
    and ``watch``: stop instances on their hosts and see which still run;
    ``store``: the request book's state store (None: nothing survives a
    restart); ``objects``: the hosts' and vaults' state calls (None: no
    deactivate, activate or migrate); ``grow``: the Enactor of the elastic
    cycle's growth (None: no cycle); ``cycle_store``: the cycle's state store;
    ``accounting``: where one record per finished instance is written (None:
    kept in memory); ``owner_gate``: refuses at submit a request whose user no
    OS account maps to (:func:`~legionrm.hostobj.runner.owner.owner_gate`; None: every user may run)."""

    collection: SnapshotSource
    enactor: EnactorFor
    clock: Callable[[], float] = time.time
    pools: PoolGate | None = None
    stopper: Stopper | None = None
    watch: InstanceWatch | None = None
    store: RequestStore | None = None
    objects: StatePort | None = None
    grow: EnactorPort | None = None
    cycle_store: ElasticStore | None = None
    accounting: AccountingStore | None = None
    owner_gate: Callable[[SchedulingRequest], Refusal | None] | None = None
    autoscaler: Callable[[list[dict[str, float]]], None] | None = None
    """Ray's ``request_resources`` (:mod:`legionrm.scheduler.grow.actor`): with
    ``[autoscaler] enabled``, pending work that no node can take asks it for nodes."""


@dataclass(frozen=True)
class Wired:
    """What :func:`wire` built: the Scheduler, its objects' mobility (None
    without an ``objects`` port) and its elastic cycle (None without ``grow``)."""

    scheduler: Scheduler
    mobility: Mobility | None = None
    cycle: ElasticCycle | None = None


def wire(settings: SchedulerSettings, ports: SchedulerPorts) -> Wired:
    """Build a Scheduler and its collaborators (see the module).  A cycle is
    restored from its store before the Scheduler's first orphan sweep can
    see its instances.  Raises ConfigError for a bad ``[fairshare]`` table."""
    clock, cluster = ports.clock, settings.cluster
    triggers = Triggers(clocked=True)  # status events: every change the book records is fired there
    book = RequestBook(clock, ports.store, listener=triggers.fire, listener_many=triggers.fire_many,
                       keep_s=settings.history_keep_s,
                       keep=settings.history_keep, wants=triggers.wants)
    # a scheduler of the cluster's plans over the hosts it serves (its nodepools, its constraint)
    served = next((s for s in cluster.scheduler_specs() if s.name == settings.name and s.serves() != SERVES_ALL), None)
    source = ServedCollection(ports.collection, served) if served is not None else ports.collection
    collection: Swappable[SnapshotSource] = Swappable(source)
    planner = Planner({c.name: c for c in cluster.classes}, max_masters=settings.max_masters,
                      max_deltas=settings.max_deltas, clock=clock, declared=DeclaredHosts(cluster.hosts))
    enactment = Enactment(ports.enactor, ports.stopper, name=settings.name, token_timeout_s=settings.token_timeout_s,
                          issued=issued_by(settings.name, cluster))
    # deactivate / activate / migrate: states move between the hosts' instances and the vaults' stores
    mobility = (Mobility(book, planner, collection, enactment, ports.objects, clock=clock)
                if ports.objects is not None else None)
    # the pools are the whole cluster's, shared by every scheduler: they follow every host's capacity
    whole = collection if served is None else Swappable(ports.collection)
    accounts = Accounts(ports.pools or OpenGate(), ShareGate.from_core(core_for_cluster(cluster)), whole,
                        name=settings.name, on_finish=mobility.forget if mobility is not None else None,
                        owner_gate=ports.owner_gate, grower=grower(cluster, ports.autoscaler))
    cycle = None
    if ports.grow is not None:  # its growth is confirmed by the actor's approve_growth: the DUCC core decided it
        if ports.stopper is None:
            raise SchedulingError(f"scheduler {settings.name!r}: an elastic cycle needs a stopper (ports.stopper)")
        cycle = ElasticCycle(core_for_cluster(cluster), ports.grow, ports.stopper, source,
                             clock=clock, interval_s=settings.cycle_interval_s, name=f"{settings.name}-cycle",
                             token_timeout_s=settings.token_timeout_s, pools=accounts.pools,
                             store=ports.cycle_store, watch=ports.watch)
        cycle.restore()  # after a restart: the elastic book back before the orphan sweep sees its instances
    scheduler = Scheduler(settings, collection, planner, book, triggers, accounts, enactment, ports.watch,
                          activator=mobility.activate_for_request if mobility is not None else None,
                          also_running=cycle.instance_ids if cycle is not None else None,
                          results=Results(book, lambda: ports.watch, ports.accounting, settings.name, clock), clock=clock)
    return Wired(scheduler, mobility, cycle)


def grower(cluster: ClusterSpec, ask: Callable[[list[dict[str, float]]], None] | None) -> Grower | None:
    """What asks the autoscaler ``ask`` for nodes, when the cluster file turns ``[autoscaler]`` on (else None)."""
    if ask is None or not cluster.autoscaler.enabled:
        return None
    return Grower(ask, cluster.autoscaler.max_bundles)


def pool_gate(spec: ClusterSpec) -> PoolGate:
    """The Scheduler's admission gate for the cluster: an :class:`OpenGate`
    (admit everything) when no ``[[pool]]`` is configured, else a
    :class:`RespoolGate` over a fresh pool tree, entitled to the cluster's
    total capacity (hosts' cpus, memory and gpus, vaults' storage) with the
    cluster's default pool."""
    tree = tree_for_cluster(spec)
    if tree is None:
        return OpenGate()
    return RespoolGate(tree, spec.capacity(), default_pool=spec.default_pool())
