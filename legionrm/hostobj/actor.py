"""Ray shells for host, host group, vault and class objects (the class object's
shell and the remote ports live in :mod:`legionrm.hostobj.classes.actor`; its
:class:`ClassActor` is re-exported here; the Scheduler's ports to these actors
live in :mod:`legionrm.scheduler.remote.actor`).

Each actor holds one core and forwards to it; a daemon thread expires
reservations and sends a heartbeat every ``heartbeat_s`` (the cores lock
themselves, so the thread and the calls may interleave).  Every actor asks for
``num_cpus=0`` (a default actor needs a CPU and would sit pending on a node
with none).  Actors are named in the ``legionrm`` namespace:
``host:<name>``, ``hostgroup:<name>``, ``vault:<name>``, ``class:<name>``.

The ``spawn_*`` helpers are what ``legionrm up`` and tests call.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Mapping, Sequence

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from legionrm.auth.actordoor import own, own_or_refusal, require_visible, visible
from legionrm.auth.hostdoor import token_route
from legionrm.auth.resources import auth_sink, guard_resources, resource_doors
from legionrm.homefs import private_umask
from legionrm.hostobj.build import build_host, build_vault
from legionrm.hostobj.classes.actor import ClassActor
from legionrm.hostobj.durable import Keeper
from legionrm.hostobj.group import HostGroup, InstanceKey, TokenRef
from legionrm.hostobj.live.calls import OwnerCalls
from legionrm.hostobj.live.owner import owners_back
from legionrm.hostobj.runner.owner import build_work
from legionrm.hostobj.ray_node import RayNodeHost
from legionrm.hostobj.resource import ResourceObject
from legionrm.models import (
    AttrValue,
    ClassSpec,
    Holder,
    HostSpec,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    ResourceAudit,
    ResourceRecord,
    Resources,
    RunnerSpec,
    StartRequest,
    VaultSpec,
    WorkResult,
)
from legionrm.naming import class_name, control_plane, group_name, host_name, vault_name
from legionrm.objstate.actor import HostStateCalls, VaultStateCalls

log = logging.getLogger(__name__)


class _DrainCalls:
    """``drain`` on a host or host-group actor (``self.views``; ``self._batch`` or ``self.core``: a HostGroup)."""

    views: Any
    core: Any

    def drain(self, host: str, reason: str | None, proof: Any = None) -> bool:
        """Drain ``host`` for ``reason``, or with None resume it (the Scheduler or an
        administrator); its heartbeat says so at once.  False: this actor does not carry it."""
        self.views.require_system(proof, "drain", {"host": host, "reason": reason}, admin=True)
        group = getattr(self, "_batch", None) or self.core
        h = group.get(host)
        if h is None:
            return False
        h.drain(reason) if reason is not None else h.resume()
        group.heartbeat()
        return True


class _Beating:
    """The heartbeat thread and the state file shared by the resource shells."""

    _keeper: Keeper | None = None

    def _kept(self, out: Any) -> Any:
        """``out``, once what the resources granted is written to the state file
        (if any); a grant the file could not take is refused instead (:meth:`Keeper.kept`)."""
        return self._keeper.kept(out) if self._keeper is not None else out

    def _start_beat(self, beat: Any, interval: float) -> None:
        self._stop = threading.Event()
        beat()  # join at once

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    beat()
                except Exception:  # a missed beat must not kill the thread; the collection marks us stale
                    log.exception("heartbeat failed")

        threading.Thread(target=loop, name="heartbeat", daemon=True).start()

    def _beat_one(self, core: ResourceObject) -> Any:
        """One heartbeat of ``core``: what expired is swept (and written down), then the collection hears it."""

        def beat() -> None:
            self._kept(core.expire())
            core.heartbeat()

        return beat


class _OneResource(_Beating):
    """The calls a shell over one resource object (``self.core``: a host or a
    vault) answers the same way, with its doors ``self.door`` / ``self.views``."""

    core: Any
    door: Any
    views: Any

    def check_reservation(self, token_id: str, proof: Any = None) -> ReservationToken | Refusal:
        """The reservation (its holder, the system or an admin; else ``auth.not_owner``)."""
        who = self.views.viewer(proof, "check_reservation", {"token_id": token_id})
        return own_or_refusal(who, self.core.check_reservation(token_id), self.core.attested_holder(token_id),
                              f"reservation {token_id!r}", self.core.name)

    def cancel_reservation(self, token: str | ReservationToken, proof: Any = None) -> bool | Refusal:
        """Cancel one reservation: the Scheduler or Enactor, or its attested holder (a refusal with its code, else)."""
        return self._kept(self.door.gate_one(proof, "cancel_reservation", {"token": token}, token,
                                             self.door.may_cancel, self.core.cancel_reservation))

    def record(self, proof: Any = None) -> ResourceRecord:
        """This resource's record (``auth.forbidden`` to a user its access list refuses)."""
        require_visible(self.views.viewer(proof, "record", {}), self.core.name, self.core.admits, self.core.name)
        return self.core.record()

    def audit_views(self, proof: Any = None) -> list[ResourceAudit]:
        """What this actor's resource holds now, for the auditor (the system or an admin)."""
        self.views.require_system(proof, "audit_views", {}, admin=True)
        return [self.core.audit_view()]

    def heartbeat(self, proof: Any = None) -> dict[str, AttrValue]:
        self.views.require_system(proof, "heartbeat", {}, admin=True)
        return self.core.heartbeat()

    def expire(self, proof: Any = None) -> list[str]:
        self.views.require_system(proof, "expire", {}, admin=True)
        return self.core.expire()


@ray.remote(num_cpus=0)
class HostActor(_OneResource, HostStateCalls, _DrainCalls, OwnerCalls):
    """One host object (a real Ray node when ``node_id`` is given).

    Answers both single calls and the batched calls of a host group, so the
    Enactor can treat a lone host as a group of one.
    """

    def __init__(self, spec: HostSpec, collection: Any = None, heartbeat_s: float = 5.0, node_id: str | None = None,
                 auth_home: str | None = None, state_path: str | None = None, runner: RunnerSpec | None = None,
                 log_dir: str | None = None) -> None:
        if state_path:  # it writes the home: what it (and SQLite) creates is the service's alone
            private_umask()
        sink = auth_sink(collection, auth_home, "host", [spec.name])
        if node_id is not None:  # its Command work runs through a runner, as its owners' accounts
            work = build_work(runner or RunnerSpec(), log_dir, auth_home)
            self.core = build_host(spec, sink=sink, cls=RayNodeHost, node_id=node_id, work=work)
        else:
            self.core = build_host(spec, sink=sink)
        self._batch = HostGroup(self.core.name, [self.core], sink=self.core.sink)  # batches for a group of one
        self._keeper = Keeper.open(state_path, [self.core], _boot())  # restarted: its grants back, dead instances ended
        owners_back([self.core])  # and the policy a reload gave it
        guard_resources([self.core], auth_home)
        self.door, self.views = resource_doors(auth_home, self.core.name, self._batch.attested_holder,
                                               self._batch.instance_holder)
        self._start_beat(self._beat_one(self.core), heartbeat_s)

    def ping(self) -> str:
        return "ok"

    def make_reservation(self, request: ReservationRequest) -> ReservationToken | Refusal:
        return self._kept(self.core.make_reservation(request))

    def make_reservations(self, requests: list[ReservationRequest]) -> list[ReservationToken | Refusal]:
        return self._kept(self._batch.make_reservations(requests))

    def cancel_reservations(self, items: list[TokenRef], proof: Any = None) -> list[bool | Refusal]:
        return self._kept(self.door.gate(proof, "cancel_reservations", {"items": items}, items, self.door.may_cancel,
                                         self._batch.cancel_reservations))

    def cancel_requests(self, request_ids: list[str], prefix: bool = False, proof: Any = None) -> list[str]:
        """Cancel what was granted for these caller request ids (see ResourceObject.cancel_requests):
        the Scheduler or Enactor only."""
        self.views.require_system(proof, "cancel_requests", {"request_ids": request_ids, "prefix": prefix})
        return self._kept(self.core.cancel_requests(request_ids, prefix=prefix))

    def start_object(self, token: ReservationToken, class_name: str, holder: Holder, vault: str | None = None,
                     args: dict | None = None, impl: str | None = None, proof: Any = None) -> InstanceRef | Refusal:
        req = StartRequest(token=token, class_name=class_name, holder=holder, vault=vault, args=dict(args or {}), impl=impl)
        return self.door.gate_one(proof, "start_object", {"token": token, "class_name": class_name, "holder": holder,
                                  "vault": vault, "args": dict(args or {}), "impl": impl}, req, self.door.may_start,
                                  lambda r: self._batch.start_objects([r])[0])

    def start_objects(self, starts: list[StartRequest], proof: Any = None) -> list[InstanceRef | Refusal]:
        """Start each (only with the Scheduler's approval: signed by the Enactor or a class object)."""
        return self._kept(self.door.gate(proof, "start_objects", {"starts": starts}, starts, self.door.may_start,
                                         self._batch.start_objects))

    def stop_object(self, instance_id: str, reason: str = "stopped", proof: Any = None) -> Resources | Refusal:
        return self.door.gate_one(proof, "stop_object", {"instance_id": instance_id, "reason": reason}, instance_id,
                                  self.door.may_stop, lambda i: self._batch.stop_objects([i], reason)[0])

    def stop_objects(self, items: list[InstanceKey], reason: str = "stopped", proof: Any = None) -> list[Resources | Refusal]:
        """Stop each: the Scheduler, the Enactor, a class object, or the instance's attested holder."""
        return self._kept(self.door.gate(proof, "stop_objects", {"items": items, "reason": reason}, items,
                                         self.door.may_stop, lambda xs: self._batch.stop_objects(xs, reason)))

    def list_instances(self, host: str | None = None, proof: Any = None) -> list[InstanceRef]:
        """This host's running instances (``host``, when given, must be this host's name); a user's own only."""
        who = self.views.viewer(proof, "list_instances", {"host": host})
        return own(who, self.core.list_instances() if host in (None, self.core.name) else [], lambda i: i.user)

    def reservations(self, proof: Any = None) -> list[ReservationToken]:
        """Tokens of the reservations that still hold capacity here (a user's own only)."""
        return own(self.views.viewer(proof, "reservations", {}), self.core.reservations(), lambda t: t.holder.user)

    def state(self, resources: Resources | None = None, duration_s: float | None = None, proof: Any = None) -> str:
        """``free`` / ``busy_later`` / ``busy`` now, for the whole host or for one request."""
        who = self.views.viewer(proof, "state", {"resources": resources, "duration_s": duration_s})
        require_visible(who, self.core.name, self.core.admits, self.core.name)
        return self.core.state(resources, duration_s)

    def shutdown(self, reason: str = "host stopped", proof: Any = None) -> None:
        """Stop the heartbeat and every instance, and leave the collection (the system or an admin)."""
        self.views.require_system(proof, "shutdown", {"reason": reason}, admin=True)
        self._stop.set()
        self.core.shutdown(reason)

    def work_results(self, instance_ids: list[str], proof: Any = None) -> dict[str, WorkResult]:
        """The results of these instances' ended runs (the system or an admin: the Scheduler books them)."""
        self.views.require_system(proof, "work_results", {"instance_ids": instance_ids}, admin=True)
        return self.core.work_results(instance_ids) if isinstance(self.core, RayNodeHost) else {}

    def work_output(self, instance_id: str, stream: str = "stdout", offset: int = 0, limit: int = 1 << 20,
                    proof: Any = None) -> tuple[bytes, int]:
        """A run's stdout or stderr from ``offset`` (the system or an admin: users read theirs through the
        Scheduler, which checks they are its owner)."""
        self.views.require_system(proof, "work_output", {"instance_id": instance_id, "stream": stream,
                                                         "offset": offset, "limit": limit}, admin=True)
        return self.core.work_output(instance_id, stream, offset, limit) if isinstance(self.core, RayNodeHost) \
            else (b"", 0)


@ray.remote(num_cpus=0)
class HostGroupActor(_Beating, HostStateCalls, _DrainCalls, OwnerCalls):
    """Many simulated host objects in one process; one batched call per Enactor step."""

    def __init__(self, name: str, specs: list[HostSpec], collection: Any = None, heartbeat_s: float = 5.0,
                 auth_home: str | None = None, state_path: str | None = None) -> None:
        if state_path:  # it writes the home: what it (and SQLite) creates is the service's alone
            private_umask()
        sink = auth_sink(collection, auth_home, "host", [s.name for s in specs])
        hosts = [build_host(s) for s in specs]
        guard_resources(hosts, auth_home)
        self.core = HostGroup(name, hosts, sink=sink)
        # with a state file, what the hosts granted survives a restart of this actor
        self._keeper = Keeper.open(state_path, hosts, _boot())
        owners_back(hosts)
        self.door, self.views = resource_doors(auth_home, group_name(name), self.core.attested_holder,
                                               self.core.instance_holder, audience=[s.name for s in specs])

        def beat() -> None:
            self._kept(self.core.expire())
            self.core.heartbeat()

        self._start_beat(beat, heartbeat_s)

    def ping(self) -> str:
        return "ok"

    def _admits(self, host: str, who: Any) -> bool:
        core = self.core.get(host)
        return core is not None and core.admits(who)

    def names(self, proof: Any = None) -> list[str]:
        """The hosts here (a user: those their access allows)."""
        return visible(self.views.viewer(proof, "names", {}), self.core.names(), self._admits)

    def make_reservations(self, requests: list[ReservationRequest]) -> list[ReservationToken | Refusal]:
        return self._kept(self.core.make_reservations(requests))

    def check_reservations(self, items: list[TokenRef], proof: Any = None) -> list[ReservationToken | Refusal]:
        """Each reservation, to its holder, the system or an admin (else ``auth.not_owner`` in its place)."""
        who = self.views.viewer(proof, "check_reservations", {"items": items})
        return [own_or_refusal(who, got, self.core.attested_holder(*token_route(it)), f"reservation {token_route(it)[1]!r}",
                               self.views.by) for it, got in zip(items, self.core.check_reservations(items))]

    def cancel_reservations(self, items: list[TokenRef], proof: Any = None) -> list[bool | Refusal]:
        """Cancel each: the Scheduler or Enactor, or the reservation's attested holder."""
        return self._kept(self.door.gate(proof, "cancel_reservations", {"items": items}, items, self.door.may_cancel,
                                         self.core.cancel_reservations))

    def cancel_requests(self, request_ids: list[str], prefix: bool = False, proof: Any = None) -> list[str]:
        """Cancel what any host here granted for these caller request ids
        (see ResourceObject.cancel_requests): the Scheduler or Enactor only."""
        self.views.require_system(proof, "cancel_requests", {"request_ids": request_ids, "prefix": prefix})
        out: list[str] = []
        for name in self.core.names():
            host = self.core.get(name)
            if host is not None:
                out += host.cancel_requests(request_ids, prefix=prefix)
        return self._kept(out)

    def start_objects(self, starts: list[StartRequest], proof: Any = None) -> list[InstanceRef | Refusal]:
        """Start each (only with the Scheduler's approval: signed by the Enactor or a class object)."""
        return self._kept(self.door.gate(proof, "start_objects", {"starts": starts}, starts, self.door.may_start,
                                         self.core.start_objects))

    def stop_objects(self, items: list[InstanceKey], reason: str = "stopped", proof: Any = None) -> list[Resources | Refusal]:
        """Stop each: the Scheduler, the Enactor, a class object, or the instance's attested holder."""
        return self._kept(self.door.gate(proof, "stop_objects", {"items": items, "reason": reason}, items,
                                         self.door.may_stop, lambda xs: self.core.stop_objects(xs, reason)))

    def list_instances(self, host: str | None = None, proof: Any = None) -> list[InstanceRef]:
        """The running instances (on ``host``, when given); a user's own only."""
        return own(self.views.viewer(proof, "list_instances", {"host": host}), self.core.list_instances(host),
                   lambda i: i.user)

    def records(self, proof: Any = None) -> list[ResourceRecord]:
        """The hosts' records (a user: those their access allows)."""
        return visible(self.views.viewer(proof, "records", {}), self.core.records(), lambda r, w: self._admits(r.name, w))

    def audit_views(self, proof: Any = None) -> list[ResourceAudit]:
        """What this actor's resources hold now, for the auditor (the system or an admin)."""
        self.views.require_system(proof, "audit_views", {}, admin=True)
        return self.core.audit_views()

    def heartbeat(self, proof: Any = None) -> dict[str, dict[str, AttrValue]]:
        self.views.require_system(proof, "heartbeat", {}, admin=True)
        return self.core.heartbeat()

    def expire(self, proof: Any = None) -> dict[str, list[str]]:
        self.views.require_system(proof, "expire", {}, admin=True)
        return self.core.expire()

    def shutdown(self, reason: str = "host group stopped", proof: Any = None) -> None:
        self.views.require_system(proof, "shutdown", {"reason": reason}, admin=True)
        self._stop.set()
        self.core.shutdown(reason)


@ray.remote(num_cpus=0)
class VaultActor(_OneResource, VaultStateCalls, OwnerCalls):
    def __init__(self, spec: VaultSpec, collection: Any = None, heartbeat_s: float = 5.0,
                 auth_home: str | None = None, shelf_dir: str | None = None,  # objects' states: shelf_dir
                 state_path: str | None = None) -> None:
        if state_path or shelf_dir:  # it writes the home: what it (and SQLite) creates is the service's alone
            private_umask()
        self.core = build_vault(spec, sink=auth_sink(collection, auth_home, "vault", [spec.name]),
                                shelf=self._open_shelf(spec.name, shelf_dir))
        self._keeper = Keeper.open(state_path, [self.core], _boot())  # restarted: its grants and uses back
        owners_back([self.core])
        guard_resources([self.core], auth_home)
        self.door, self.views = resource_doors(auth_home, self.core.name,
                                               lambda r, t: self.core.attested_holder(t) if r == self.core.name else None)
        self._start_beat(self._beat_one(self.core), heartbeat_s)

    def ping(self) -> str:
        return "ok"

    def make_reservation(self, request: ReservationRequest, for_host: str | None = None) -> ReservationToken | Refusal:
        return self._kept(self.core.make_reservation(request, for_host))

    def make_reservations(self, requests: list[ReservationRequest]) -> list[ReservationToken | Refusal]:
        return self._kept([self.core.make_reservation(r) for r in requests])

    def cancel_reservations(self, items: list[str | ReservationToken], proof: Any = None) -> list[bool | Refusal]:
        return self._kept(self.door.gate(proof, "cancel_reservations", {"items": items}, items, self.door.may_cancel,
                                         lambda xs: [self.core.cancel_reservation(t) for t in xs]))

    def cancel_requests(self, request_ids: list[str], prefix: bool = False, proof: Any = None) -> list[str]:
        """Cancel what was granted for these caller request ids: the Scheduler or Enactor only."""
        self.views.require_system(proof, "cancel_requests", {"request_ids": request_ids, "prefix": prefix})
        return self._kept(self.core.cancel_requests(request_ids, prefix=prefix))

    def use(self, token: ReservationToken, host: str, holder: Holder, proof: Any = None) -> str | Refusal:
        """Take the space for an instance: the Enactor or a class object only."""
        return self._kept(self.door.gate_one(proof, "use", {"token": token, "host": host, "holder": holder}, token,
                                             lambda who, _t: self.door.may_use_vault(who),
                                             lambda t: self.core.use(t, host, holder)))

    def release(self, use_id: str, rollback: bool = False, proof: Any = None) -> Resources | Refusal:
        return self._kept(self.door.gate_one(proof, "release", {"use_id": use_id, "rollback": rollback}, use_id,
                                             lambda who, _u: self.door.may_use_vault(who),
                                             lambda u: self.core.release(u, rollback=rollback)))

    def list_uses(self, proof: Any = None) -> dict[str, str]:
        self.views.require_system(proof, "list_uses", {}, admin=True)
        return self.core.list_uses()

    def shutdown(self, proof: Any = None) -> None:
        self.views.require_system(proof, "shutdown", {}, admin=True)
        self._stop.set()
        self.core.leave()
        self._drop_shelf()


# --- spawning ----------------------------------------------------------------


def _boot() -> str:
    """This actor's boot: its id, which Ray keeps when it restarts the actor (see :attr:`~legionrm.hostobj.durable.Durable.boot`)."""
    return ray.get_runtime_context().get_actor_id() or ""


def _opts(name: str, detached: bool, *, on_head: bool = True) -> dict[str, Any]:
    # never restarted (but a host group with a state file): a host object that
    # lost its calendar and token serials would grant what it had already granted.  On the head node, but for the
    # host object of a Ray node, which lives and dies with its node.
    opts = dict(control_plane(name, detached=detached), get_if_exists=True)
    if not on_head:
        opts.pop("resources")
    return opts


def spawn_host(spec: HostSpec, *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
               auth_home: str | None = None) -> Any:
    """A HostActor for a simulated host, named ``host:<name>``."""
    return HostActor.options(**_opts(host_name(spec.name), detached)).remote(spec, collection, heartbeat_s,
                                                                             auth_home=auth_home)


def spawn_ray_node_host(
    node_id: str, spec: HostSpec | None = None, *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
    auth_home: str | None = None, state_path: str | None = None, restarts: int = 0, runner: RunnerSpec | None = None,
    log_dir: str | None = None,
) -> Any:
    """A HostActor for the real Ray node ``node_id``, itself pinned to that node.
    ``spec`` gives the name, policy and extra attributes (default name: ``node-<id[:8]>``);
    capacity comes from the node unless the spec's attributes set it.  With
    ``state_path`` it keeps its grants across ``restarts`` (as a host group).
    ``runner`` says how its Command work runs, ``log_dir`` where the work's
    output and results are kept (None: a private temporary directory)."""
    spec = spec or HostSpec(name=f"node-{node_id[:8]}")
    return HostActor.options(
        **{**_opts(host_name(spec.name), detached, on_head=False), "max_restarts": restarts},
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
    ).remote(spec, collection, heartbeat_s, node_id, auth_home=auth_home, state_path=state_path, runner=runner,
             log_dir=log_dir)


def spawn_host_group(
    name: str, host_specs: Sequence[HostSpec], *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
    auth_home: str | None = None, state_path: str | None = None, restarts: int = 0,
) -> Any:
    """A HostGroupActor carrying ``host_specs``, named ``hostgroup:<name>``.
    With ``state_path`` (its SQLite file) its hosts keep their secrets, token
    serials, reservations and instances across a restart; ``restarts`` is how
    many times Ray restarts it (give it only with a state file)."""
    opts = {**_opts(group_name(name), detached), "max_restarts": restarts}
    return HostGroupActor.options(**opts).remote(name, list(host_specs), collection, heartbeat_s,
                                                 auth_home=auth_home, state_path=state_path)


def spawn_vault(spec: VaultSpec, *, collection: Any = None, heartbeat_s: float = 5.0, detached: bool = False,
                auth_home: str | None = None, shelf_dir: str | None = None, state_path: str | None = None,
                restarts: int = 0, node_id: str | None = None) -> Any:
    """A VaultActor, named ``vault:<name>``, keeping objects' states in ``shelf_dir`` (None: a temporary
    directory); with ``state_path`` it keeps its grants and uses across ``restarts``; with ``node_id``
    pinned to that Ray node (its shelf is that node's disk), else on the head."""
    pin = {} if node_id is None else {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)}
    return VaultActor.options(**{**_opts(vault_name(spec.name), detached, on_head=node_id is None), "max_restarts": restarts},
                              **pin).remote(spec, collection, heartbeat_s, auth_home=auth_home, shelf_dir=shelf_dir,
                                            state_path=state_path)


def spawn_class(
    spec: ClassSpec, *, hosts: Mapping[str, Any] | None = None, vaults: Mapping[str, Any] | None = None, detached: bool = False,
    auth_home: str | None = None,
) -> Any:
    """A ClassActor, named ``class:<name>``; ``hosts`` maps host name -> carrier handle."""
    return ClassActor.options(**_opts(class_name(spec.name), detached)).remote(spec, dict(hosts or {}), dict(vaults or {}),
                                                                               auth_home=auth_home)
