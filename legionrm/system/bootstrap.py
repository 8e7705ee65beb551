"""Boot a system's actors on the connected Ray (:func:`boot`), or find a running
one's by name (:func:`connect`, :func:`connect_collection`); either gives a
:class:`~legionrm.system.handle.System`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import ray

from legionrm.auth import signed
from legionrm.auth.guard import ensure_home, signer_for
from legionrm.collection.actor import CollectionActor, RemoteCollection
from legionrm.collection.answering import Answering, answering
from legionrm.config import host_groups, load_cluster
from legionrm.enactor.actor import EnactorActor
from legionrm.errors import ResourcesSilentError
from legionrm.hostobj.actor import spawn_class, spawn_host_group, spawn_ray_node_host, spawn_vault
from legionrm.hostobj.ray_node import node_vaults, ray_node_hosts
from legionrm.models import ClusterSpec, NodeBinding
from legionrm.naming import COLLECTION, ENACTOR, POOLS, SCHEDULER, control_plane, named_actor, require_actor, scheduler_name
from legionrm.scheduler.actor import PoolActor, SchedulerActor
from legionrm.scheduler.wiring import pool_gate
from legionrm.system.driver import HOME, STATE_FILE, call, caller_name, init_connect, signer_for_actor, signer_if
from legionrm.system.handle import System

RESTARTS = 10
"""How many times Ray restarts an actor that can rebuild its state."""


def boot(spec: ClusterSpec, *, detached: bool = False, ray_nodes: dict[str, str] | None = None,
         heartbeat_s: float | None = None, bind_nodes: bool = False, state_dir: str | Path | None = None,
         auth_home: str | os.PathLike[str] | None | bool = None, node_vaults_too: bool | None = None) -> System:
    """Create the system's actors on the connected Ray: the Collection, one
    host group per nodepool, the vaults, the class objects, the Enactor and
    the Scheduler.  ``ray_nodes`` maps a host name to a Ray node id: that
    host is the real node (its instances run there as Ray actors);
    ``bind_nodes`` binds every live Ray node so (:func:`ray_node_hosts`), its
    capacity from Ray's own view of the node, and each node that joins later
    (the default scheduler does: :class:`~legionrm.scheduler.several.actor.NodeJoins`).
    ``node_vaults_too`` (default: ``bind_nodes``) gives each Ray-node host at
    boot a vault of its own pinned to its node (:func:`node_vaults`), so
    objects can rest and move between nodes.  ``state_dir`` is where the
    Scheduler keeps its requests (a restarted Scheduler, or a new boot on the
    same directory, reloads them) and each host group what its hosts granted
    (such a group then restarts too); None keeps them in memory only.
    ``auth_home`` is the legionrm home whose registry the system checks
    every caller against (None: :data:`HOME` when ``detached``, as for
    ``legionrm up``, else no authentication; False: none).  Boot creates the
    registry, an administrator for the operator and the agent keys if missing.
    Not idempotent: boot once per Ray namespace."""
    if auth_home is None:
        auth_home = HOME if detached else False
    home = str(auth_home) if auth_home else None
    if home is not None:
        ensure_home(home)
    auth: dict[str, Any] = {"auth_home": home} if home is not None else {}
    if bind_nodes and ray_nodes is None:
        ray_nodes = ray_node_hosts()
    if node_vaults_too is None:
        node_vaults_too = bind_nodes
    hb = heartbeat_s or spec.collection.heartbeat_interval_s
    coll = CollectionActor.options(**control_plane(COLLECTION, detached=detached)).remote(spec.collection, **auth)
    system = System(spec=spec, collection=coll, detached=detached)
    try:
        # up before any resource signs its join: a verifier refuses what was signed before it started
        # (its nonces are gone after a restart), and on a loaded box Ray may start a host group first
        call([coll.ping.remote()])
        node_hosts = set(ray_nodes or ())
        for name, hosts in host_groups(spec).items():
            hosts = [h for h in hosts if h.name not in node_hosts]
            if hosts:  # with a state dir a group keeps what its hosts granted, so it may restart
                system.groups[name] = spawn_host_group(
                    name, hosts, collection=coll, heartbeat_s=hb, detached=detached,
                    state_path=str(Path(state_dir) / f"hostgroup-{name}.db") if state_dir is not None else None,
                    restarts=RESTARTS if state_dir is not None else 0, **auth)
        # with a state dir every host and vault keeps what it granted, so it may restart too
        keep = (lambda f: {"state_path": str(Path(state_dir) / f), "restarts": RESTARTS}) if state_dir is not None else (
            lambda f: {})
        seen = {n["NodeID"]: n for n in ray.nodes()} if ray_nodes else {}  # a [[ray_node]] rule matches on these
        for host, node_id in (ray_nodes or {}).items():
            system.nodes[host] = spawn_ray_node_host(
                node_id, spec.node_host(host, seen.get(node_id, {})), collection=coll, heartbeat_s=hb, detached=detached,
                runner=spec.runner, log_dir=str(Path(state_dir) / "runs" / host) if state_dir is not None else None,
                **keep(f"host-{host}.db"), **auth)
        pinned = node_vaults(ray_nodes or {}, {v.name for v in spec.vaults}) if node_vaults_too else {}
        for v in [*spec.vaults, *(v for v, _ in pinned.values())]:
            system.vaults[v.name] = spawn_vault(v, collection=coll, heartbeat_s=hb, detached=detached, **auth,
                                                shelf_dir=str(Path(state_dir) / f"vault-{v.name}") if state_dir else None,
                                                node_id=pinned[v.name][1] if v.name in pinned else None,
                                                **keep(f"vault-{v.name}.db"))
        carriers = {h.name: system.groups[g] for g, hosts in host_groups(spec).items() for h in hosts
                    if h.name not in node_hosts}
        carriers.update(system.nodes)
        for c in spec.classes:
            system.classes[c.name] = spawn_class(c, hosts=carriers, vaults=system.vaults, detached=detached, **auth)
        # the Enactor keeps nothing between calls, the Scheduler reloads its state store and the
        # pool owner is charged again by the Scheduler: those three may restart
        system.enactor = EnactorActor.options(**control_plane(ENACTOR, detached=detached, restarts=RESTARTS)).remote(
            groups=system.groups, resources={**system.nodes, **system.vaults}, batched=list({**system.nodes, **system.vaults}),
            classes=system.classes, deadline_s=spec.enactor.deadline_s, **auth,
        )
        system.pools = PoolActor.options(**control_plane(POOLS, detached=detached, restarts=RESTARTS)).remote(
            pool_gate(spec), capacity=spec.capacity(), **auth)  # one owner: every scheduler shares it
        nodes = NodeBinding(known=dict(ray_nodes or {}), heartbeat_s=hb, detached=detached, state_dir=state_dir and str(
            state_dir), restarts=RESTARTS if state_dir is not None else 0) if bind_nodes else None  # as nodes join
        for i, s in enumerate(spec.scheduler_specs()):  # the default (first) keeps scheduler.db, binds the nodes
            system.schedulers[s.name] = spawn_scheduler(s.name, system, carriers, state_dir, None if i else nodes, **auth)
        system.scheduler = next(iter(system.schedulers.values()))
        system.resources = tuple(sorted({*carriers, *system.vaults}))
        call([h.ping.remote() for h in system.handles()])
        if home is not None:
            system.signer = signer_if(True, home) if _has_key(home) else None
        if home is None or system.signer is not None:  # (a driver without a key here cannot ask)
            await_answers(system)  # every resource has joined, so the first query sees them all
    except BaseException:
        _abandon(system)  # a boot that failed half way leaves no named actor to block the next one
        raise
    return system


def spawn_scheduler(name: str, system: System, carriers: dict[str, Any], state_dir: str | Path | None,
                    nodes: NodeBinding | None = None, **auth: Any) -> Any:
    """The scheduler ``name`` of ``system`` as the actor ``scheduler:NAME`` (its requests in
    ``scheduler.db`` for the default, ``scheduler-NAME.db`` for the others, under ``state_dir``)."""
    spec = system.spec
    db = f"{SCHEDULER}.db" if name == spec.scheduler_specs()[0].name else f"{SCHEDULER}-{name}.db"
    return SchedulerActor.options(**control_plane(scheduler_name(name), detached=system.detached,
                                                  restarts=RESTARTS)).remote(
        system.collection, system.enactor, list(spec.classes), pool_owner=system.pools, cluster=spec, name=name,
        carriers=carriers, state_path=str(Path(state_dir) / db) if state_dir is not None else None,
        vault_actors=system.vaults, class_actors=system.classes, nodes=nodes, **auth)


JOIN_WAIT_S = 30.0
"""How long boot waits for every resource to join the Collection."""


def _abandon(system: System) -> None:
    """Kill every actor a failed boot created (no restart), so their names are free again."""
    for h in system.handles():
        if h is not None:
            try:
                ray.kill(h, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass


def answers(system: System) -> Answering:
    """Which of ``system``'s resources the Collection holds, and why the others are missing."""
    coll, signer = system.collection, system.signer
    present, refused = call([coll.names.remote(proof=signed(signer, "names", {}, to=COLLECTION)),
                             coll.refused_writes.remote(proof=signed(signer, "refused_writes", {}, to=COLLECTION))])
    return answering(system.resources, present, refused)


def await_answers(system: System, timeout_s: float = JOIN_WAIT_S, settle_s: float = 2.0) -> None:
    """Wait until every resource booted has joined the Collection (their joins
    are sent, not waited for).  Raises :class:`ResourcesSilentError`, one line
    with how many did not and why, once the deadline passes, or sooner when
    every missing one was refused and nothing changed for ``settle_s`` (a
    refused join is not sent again): a system never starts half-working."""
    start = time.monotonic()
    last, since = None, start
    while not (now := answers(system)).ok:
        t = time.monotonic()
        if now.silent != last:
            last, since = now.silent, t
        settled = len(now.refusals) == len(now.silent) and t - since >= settle_s
        if settled or t - start >= timeout_s:
            raise ResourcesSilentError(now.line())
        time.sleep(0.1)


def _has_key(home: str) -> bool:
    try:
        signer_for(home, caller_name())
    except Exception:  # the driver's user has no key here: it signs nothing (and the system refuses it)
        return False
    return True


def connect(address: str = "auto") -> System:
    """The system `legionrm up` started (or the one at ``address``), by its
    actors' names: a :class:`System` to call ``schedule`` / ``query`` on.
    Raises SystemNotRunningError when there is none."""
    init_connect(address)
    source = json.loads(STATE_FILE.read_text()).get("cluster") if STATE_FILE.exists() else None
    spec = load_cluster(source)
    schedulers = {s.name: named_actor(scheduler_name(s.name)) for s in spec.scheduler_specs()}
    scheduler = require_actor(scheduler_name(spec.scheduler_specs()[0].name))
    return System(spec=spec, collection=require_actor(COLLECTION), scheduler=scheduler,
                  schedulers={n: h for n, h in schedulers.items() if h is not None},
                  pools=named_actor(POOLS), enactor=require_actor(ENACTOR), detached=True,
                  signer=signer_for_actor(scheduler))


def connect_collection(address: str = "auto") -> RemoteCollection:
    """The running system's Collection (what ``legionrm query`` and ``shell``
    talk to).  Raises SystemNotRunningError when there is none."""
    init_connect(address)
    handle = require_actor(COLLECTION)
    return RemoteCollection(handle, signer=signer_for_actor(handle))
