"""The Ray shells shared by a system's schedulers: the one pool accounting,
and the Ray nodes that come and go.

:class:`PoolActor` owns the resource pools (Peloton-style) every Scheduler
actor admits through, so several schedulers share one set of pool totals;
it books who admitted each request, so each scheduler audits what it holds.
:class:`RemotePoolGate` is one scheduler's view of it.

A reload's calls on a Scheduler actor (:class:`ReloadCalls`) forward to the
pure cores: its site policy and what it serves (both written to its state
store first, :mod:`~legionrm.scheduler.several.kept`), and (the default
scheduler's) the owners' policies of the hosts and vaults, through the
actors that carry them.

Ray nodes that join after ``up`` (issue 27 item 2) become hosts within a
heartbeat: the default scheduler's actor looks at Ray's nodes once a
heartbeat (:class:`NodeJoins`) and binds each live node no host is bound to
(:func:`joined`) as ``up`` binds a node at boot: a host actor
``host:ray-<id8>`` pinned to the node, its capacity Ray's own view of it,
joining the Collection on its own (so ``legionrm hosts`` shows it and the
pools follow the cluster's capacity).  The class objects learn its carrier;
the Enactor finds it by name.  A node that leaves takes its host actor with
it: the instance watch ends that host's instances ``lost`` (their work
``node_lost``), as for any host whose actor died, and the Collection stops
counting it.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Iterable

import ray

from legionrm import codes
from legionrm.auth import CallSigner, signed
from legionrm.auth.actordoor import ActorDoor
from legionrm.auth.guard import SCHEDULER as SCHEDULER_AGENT
from legionrm.auth.guard import Guard
from legionrm.hostobj.actor import spawn_ray_node_host
from legionrm.models import (
    BoundNode,
    ClusterSpec,
    NodeBinding,
    OwnerPolicy,
    PoolChange,
    PoolSpec,
    Refusal,
    Resources,
    SchedulerSpec,
    SchedulingRequest,
    SitePolicySpec,
)
from legionrm.naming import POOLS, class_name, host_name, named_actor, vault_name
from legionrm.scheduler.pools import refused_or_reconfigured, specs_of
from legionrm.scheduler.ports import PoolGate
from legionrm.scheduler.remote.actor import CALL_TIMEOUT_S
from legionrm.scheduler.several.kept import KeptReload
from legionrm.scheduler.several.served import ServedCollection


@ray.remote(num_cpus=0, max_concurrency=4)
class PoolActor:
    """The one owner of a system's resource-pool accounting: every Scheduler
    actor (and its elastic cycle) admits and releases through it, so they
    share one set of pool totals.  Holds one pool gate and forwards.  With a
    home, only the Scheduler (or an administrator) changes the accounts; any
    verified caller may read the pool totals (no one's requests in them)."""

    def __init__(self, gate: PoolGate, auth_home: str | None = None, capacity: Resources | None = None) -> None:
        """``capacity``: the cluster's as its file says, what a first pool of a system without pools is
        entitled from until a Scheduler's tick reports the live one (a reload right after boot)."""
        self.gate = gate
        self.door = ActorDoor(Guard.for_home(auth_home, by=POOLS) if auth_home else None, "pools")
        self.admitted_by: dict[str, str] = {}  # request id -> the scheduler that admitted it (each audits its own)
        self.last_capacity = capacity

    def ping(self) -> str:
        return "ok"

    def admit(self, request: SchedulingRequest, scheduler: str = "", proof: Any = None) -> Refusal | None:
        self.door.require_system(proof, "admit", {"request": request, "scheduler": scheduler},
                                 agents=(SCHEDULER_AGENT,))
        refused = self.gate.admit(request)
        if refused is None:
            self.admitted_by[request.request_id] = scheduler
        return refused

    def release(self, request_id: str, proof: Any = None) -> None:
        self.door.require_system(proof, "release", {"request_id": request_id}, agents=(SCHEDULER_AGENT,))
        self.gate.release(request_id)
        self.admitted_by.pop(request_id, None)

    def held(self, scheduler: str | None = None, proof: Any = None) -> dict[str, str]:
        """Request id -> pool: whose work is admitted where (the Scheduler or an administrator);
        with ``scheduler``, only what that scheduler admitted."""
        self.door.require_system(proof, "held", {"scheduler": scheduler}, admin=True, agents=(SCHEDULER_AGENT,))
        held = getattr(self.gate, "held", None)
        out = held() if callable(held) else {}
        return out if scheduler is None else {r: p for r, p in out.items() if self.admitted_by.get(r, "") == scheduler}

    def report(self, proof: Any = None) -> dict[str, dict[str, Any]]:
        self.door.caller(proof, "report", {})
        report = getattr(self.gate, "report", None)
        return report() if callable(report) else {}

    def capacity(self, proof: Any = None) -> dict[str, float] | None:
        self.door.caller(proof, "capacity", {})
        cap = getattr(self.gate, "capacity", None)
        return dict(cap) if isinstance(cap, dict) else None

    def set_capacity(self, capacity: Resources, proof: Any = None) -> None:
        self.door.require_system(proof, "set_capacity", {"capacity": capacity}, admin=True, agents=(SCHEDULER_AGENT,))
        self.last_capacity = capacity  # what a first pool of a system without pools is entitled from
        set_capacity = getattr(self.gate, "set_capacity", None)
        if callable(set_capacity):
            set_capacity(capacity)

    def specs(self, proof: Any = None) -> list[PoolSpec]:
        """The pools as they run now (after every live change), parents first."""
        self.door.caller(proof, "specs", {})
        return list(specs_of(self.gate))

    def reconfigure(self, changes: list[PoolChange], default_pool: str | None | bool = False,
                    proof: Any = None) -> Refusal | None:
        """Apply ``changes`` (and the ``default_pool``; False keeps it), all or nothing, through the
        pool validators (an administrator's): None when applied, else ``reload.refused`` and
        the pools exactly as they were."""
        self.door.require_system(proof, "reconfigure", {"changes": changes, "default_pool": default_pool},
                                 admin=True, agents=())
        new = refused_or_reconfigured(self.gate, changes, self.last_capacity, default_pool)
        if isinstance(new, Refusal):
            return new
        self.gate = new
        return None


class RemotePoolGate:
    """A pool gate over the :class:`PoolActor` (the Scheduler ``name``'s view of the shared pools:
    what it admits is booked as its own, and ``held`` is what it holds)."""

    def __init__(self, handle: Any, signer: CallSigner | None = None, name: str = "") -> None:
        self.handle, self.signer, self.name = handle, signer, name

    def _call(self, method: str, args: dict[str, Any]) -> Any:
        proof = signed(self.signer, method, args, to=POOLS)
        return ray.get(getattr(self.handle, method).remote(*args.values(), proof=proof), timeout=CALL_TIMEOUT_S)

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        return self._call("admit", {"request": request, "scheduler": self.name})

    def release(self, request_id: str) -> None:
        self._call("release", {"request_id": request_id})

    def held(self) -> dict[str, str]:
        return self._call("held", {"scheduler": self.name})

    def held_all(self) -> dict[str, str]:
        """What every scheduler holds."""
        return self._call("held", {"scheduler": None})

    def report(self) -> dict[str, dict[str, Any]]:
        return self._call("report", {})

    @property
    def capacity(self) -> dict[str, float] | None:
        return self._call("capacity", {})

    def set_capacity(self, capacity: Resources) -> None:
        self._call("set_capacity", {"capacity": capacity})


log = logging.getLogger(__name__)


def node_host(node_id: str) -> str:
    """The host a Ray node is bound as: ``ray-`` and the first 8 hex digits of its id (as ``up`` names it)."""
    return f"ray-{node_id[:8]}"


def joined(alive: Iterable[str], bound: Iterable[str]) -> dict[str, str]:
    """Host name -> node id of each node in ``alive`` (live Ray node ids) no host is bound to (``bound``)."""
    have = set(bound)
    return {node_host(n): n for n in alive if n not in have}


class NodeJoins:
    """Mixin of the default scheduler's actor: it binds the Ray nodes that joined since boot
    (see the module).  Without a :class:`~legionrm.models.NodeBinding` it binds none."""

    _carriers: dict[str, Any]
    _class_actors: dict[str, Any]
    _signer: Any
    auth_home: str | None

    def _nodes_from(self, binding: NodeBinding | None, collection: Any, cluster: ClusterSpec) -> None:
        self._binding, self._node_collection, self._node_cluster = binding, collection, cluster
        self._bound = dict(binding.known) if binding is not None else {}  # host name -> node id
        self._nodes_seen_at = 0.0

    def _joined(self) -> list[str]:
        """The hosts bound since boot (those of the nodes that joined), by name."""
        known = self._binding.known if self._binding is not None else {}
        return sorted(h for h in self._bound if h not in known)

    def _join_nodes(self) -> list[str]:
        """Bind every live Ray node no host is bound to yet (at most once a heartbeat); the hosts bound."""
        b = self._binding
        if b is None or time.monotonic() - self._nodes_seen_at < b.heartbeat_s:
            return []
        self._nodes_seen_at = time.monotonic()
        alive = {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}
        new = joined(alive, self._bound.values())
        for host, node_id in new.items():
            keep: dict[str, Any] = {} if b.state_dir is None else {
                "state_path": str(Path(b.state_dir) / f"host-{host}.db"), "restarts": b.restarts,
                "log_dir": str(Path(b.state_dir) / "runs" / host)}
            # get_if_exists: a scheduler Ray restarted finds the host it bound before
            # a [[host]] of its name, else the first [[ray_node]] rule it matches: as `up` binds its nodes
            handle = spawn_ray_node_host(node_id, self._node_cluster.node_host(host, alive[node_id]),
                                         collection=self._node_collection, heartbeat_s=b.heartbeat_s,
                                         detached=b.detached, runner=self._node_cluster.runner,
                                         auth_home=self.auth_home, **keep)
            self._bound[host] = node_id
            self._carriers[host] = handle  # the watch, the stopper and the orphan sweep reach it
            args = {"hosts": [host], "vaults": []}
            for name, cls in self._class_actors.items():
                cls.add_resources.remote({host: handle}, {},
                                         proof=signed(self._signer, "add_resources", args, to=class_name(name)))
            log.warning("Ray node %s joined: bound as host %s", node_id, host)
        return list(new)


class ReloadCalls:
    """Mixin of a Scheduler actor: what ``legionrm reload`` asks of it (an administrator's),
    each first with ``check`` (nothing changes) and then to apply (see
    :mod:`legionrm.gateway.several.reload`)."""

    door: Any
    core: Any
    cycle: Any
    _carriers: dict[str, Any]
    _vaults: dict[str, Any]
    _signer: Any
    _bound: dict[str, str]
    _node_cluster: ClusterSpec
    _kept: KeptReload

    @ray.method(concurrency_group="control")
    def reconfigure_site(self, site: SitePolicySpec, check: bool = False, proof: Any = None) -> Refusal | None:
        """Order and limit the queue by ``site`` from now on (:meth:`SitePolicy.reload
        <legionrm.scheduler.priority.SitePolicy.reload>`), written to the state store first so
        that a restarted actor does too (:class:`~legionrm.scheduler.several.kept.KeptReload`):
        None, or why not and nothing changed."""
        self.door.require_admin(proof, "reconfigure_site", {"site": site, "check": check}, "reload")
        return self._kept.site(self.core.queue.site, self.core.book.entries, site, check)

    @ray.method(concurrency_group="control")
    def serve(self, spec: SchedulerSpec, proof: Any = None) -> Refusal | None:
        """Plan over the hosts ``spec`` serves from now on (``legionrm reload``), written to the
        state store first: an administrator's.  None, or why not (not written) and nothing changed."""
        self.door.require_admin(proof, "serve", {"spec": spec}, "vary_hosts")
        refused = self._kept.serves(spec)
        if refused is not None:
            return refused
        current = self.core.getCollection()
        served = ServedCollection(getattr(current, "source", current), spec)
        self.core.setCollection(served)
        self.cycle.collection = served
        return None

    @ray.method(concurrency_group="control")
    def reconfigure_owners(self, changes: list[OwnerPolicy], check: bool = False, cluster: ClusterSpec | None = None,
                           proof: Any = None) -> Refusal | None:
        """Give each host and vault of ``changes`` its owner's policy and access list, through the
        actors that carry them (:func:`legionrm.hostobj.live.reconfigure` on each, all at once);
        ``cluster`` (when given, and not ``check``) is what the Ray nodes that join from now on
        are bound by.  None, or the first refusal (an actor that fails raises)."""
        self.door.require_admin(proof, "reconfigure_owners", {"changes": changes, "check": check, "cluster": cluster},
                                "reload")
        binds = cluster if not check and getattr(self, "_node_cluster", None) is not None else None
        if binds is not None:  # written first: the actor Ray restarts binds the nodes that join by them too
            refused = self._kept.rules(binds.ray_nodes)
            if refused is not None:
                return refused
        by_actor: dict[int, tuple[str, Any, list[OwnerPolicy]]] = {}
        for c in changes:
            kept = self._carriers if c.kind == "host" else self._vaults
            handle = kept.get(c.resource) or named_actor((host_name if c.kind == "host" else vault_name)(c.resource))
            if handle is None:
                return Refusal(code=codes.RELOAD_REFUSED, by=c.resource, reason=f"no actor carries {c.kind} {c.resource!r}")
            by_actor.setdefault(id(handle), (c.resource, handle, []))[2].append(c)
        refs = [h.reconfigure.remote(cs, check, proof=signed(self._signer, "reconfigure", {"changes": cs, "check": check},
                                                            to=to)) for to, h, cs in by_actor.values()]
        refused = next((r for r in ray.get(refs, timeout=CALL_TIMEOUT_S) if r is not None), None)
        if binds is not None and refused is None:
            self._node_cluster = binds
        elif binds is not None:  # not taken: the store back to the rules the actor binds by
            self._kept.rules(self._node_cluster.ray_nodes)
        return refused

    @ray.method(concurrency_group="control")
    def bound_nodes(self, proof: Any = None) -> list[BoundNode]:
        """The Ray nodes this scheduler bound as hosts (the default one binds them), as a
        ``[[ray_node]]`` rule matches them (an administrator's)."""
        self.door.require_admin(proof, "bound_nodes", {}, "reload")
        bound = dict(getattr(self, "_bound", {}))
        if not bound:
            return []
        seen = {n["NodeID"]: n for n in ray.nodes()}
        return [BoundNode(host=h, node_id=n, address=str(seen.get(n, {}).get("NodeManagerAddress", "")),
                          hostname=str(seen.get(n, {}).get("NodeManagerHostname", "")),
                          labels={str(k): str(v) for k, v in (seen.get(n, {}).get("Labels") or {}).items()})
                for h, n in sorted(bound.items())]
