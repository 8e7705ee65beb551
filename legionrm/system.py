"""Boot or connect to a legionrm system on Ray, and this process as a Ray driver.

This module (with the ``*/actor.py`` shells) is where Ray lives.  A system is
a set of named actors in the ``legionrm`` namespace: the Collection, the host
groups and vaults, the class objects, the Enactor and the Scheduler:
:class:`System` holds their handles, :func:`boot` creates them,
:func:`connect` finds them by name.  Before any actor, this process meets Ray
here too: :func:`init_connect` joins the Ray that ``legionrm up`` started (by
its state file, :data:`STATE_FILE`, presenting Ray's auth token when that
``up`` asked for one: :func:`ray_token_path`), :func:`local_cluster` makes a
lean Ray of a few nodes on this machine, :func:`call` is the one place the
driver waits on Ray, and :func:`proof_for` signs a call as the driver's user
(:func:`caller_name`) for the actor it goes to.

``legionrm up`` starts a Ray head of its own (``ray start --head --block`` in
the background, so it outlives the command), creates the actors detached, and
writes what it started to ``~/.legionrm/up.json``; ``legionrm down`` kills
those actors and stops that head, and nothing else (it never runs
``ray stop``, which would kill every Ray on the machine).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # see notes/ray-on-a-small-machine.md

import ray  # noqa: E402
from ray._raylet import Config as RayConfig  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from legionrm.auth import CallSigner, signed  # noqa: E402
from legionrm.auth.guard import ensure_home, signer_for  # noqa: E402
from legionrm.collection.actor import CollectionActor, RemoteCollection  # noqa: E402
from legionrm.collection.answering import Answering, answering  # noqa: E402
from legionrm.config import host_groups, load_cluster  # noqa: E402
from legionrm.enactor.actor import EnactorActor  # noqa: E402
from legionrm.errors import ResourcesSilentError, SystemNotRunningError  # noqa: E402
from legionrm.homefs import write_private  # noqa: E402
from legionrm.hostobj.ray_node import NODE_VAULT_GB, node_vault_name, node_vaults, ray_node_hosts  # noqa: E402
from legionrm.hostobj.actor import (  # noqa: E402
    spawn_class,
    spawn_host_group,
    spawn_ray_node_host,
    spawn_vault,
)
from legionrm.models import (  # noqa: E402
    ClusterSpec,
    Identity,
    NodeBinding,
    ObjectStatus,
    QueryResult,
    Refusal,
    SchedulerResponse,
    SchedulingRequest,
    StatusEvent,
)
from legionrm.naming import (  # noqa: E402
    COLLECTION,
    NAMESPACE,
    ENACTOR,
    POOLS,
    SCHEDULER,
    class_name,
    control_plane,
    group_name,
    host_name,
    instance_name,
    instance_actor_names,
    kill_named,
    named_actor,
    require_actor,
    scheduler_name,
    vault_name,
)
from legionrm.scheduler.actor import PoolActor, SchedulerActor  # noqa: E402
from legionrm.scheduler.wiring import pool_gate  # noqa: E402

__all__ = [
    "JOIN_WAIT_S", "NODE_VAULT_GB", "RESTARTS", "System", "answers", "await_answers", "boot", "connect",
    "connect_collection", "node_vault_name", "node_vaults", "ray_node_hosts", "spawn_scheduler",
    # this process as a Ray driver
    "STATE_FILE", "call", "init_connect", "instance_actor", "local_cluster", "node_ids", "proof_for",
    "ray_token_env", "ray_token_path",
]

# --- this process as a Ray driver: connecting, waiting on calls, signing them -----------------

STATE_FILE = Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm"))) / "up.json"
HOME = STATE_FILE.parent
RAY_NOTES = logging.getLogger("legionrm.ray")


def caller_name() -> str | None:
    """Who this driver acts as: ``LEGIONRM_USER``, else the login name."""
    return os.environ.get("LEGIONRM_USER") or None


def signer_if(authenticated: bool, home: str | os.PathLike[str] | None = None) -> CallSigner | None:
    """The caller's signer when the system checks who calls (None when it does not).
    Raises (one line, with the fix) when it does and the caller has no credential."""
    return signer_for(home or HOME, caller_name()) if authenticated else None


def signer_for_actor(handle: Any, home: str | os.PathLike[str] | None = None) -> CallSigner | None:
    """:func:`signer_if` the actor (Scheduler or Collection) says it checks proofs."""
    try:
        on = bool(call(handle.authenticated.remote(), 30))
    except AttributeError:  # an actor from before authentication
        on = False
    return signer_if(on, home)


_SIGNERS: dict[str, CallSigner | None] = {}


def proof_for(handle: Any, call_name: str, args: Any, *, to: str) -> Any:
    """The proof to send with ``call_name`` on the actor ``handle``, made out to
    ``to`` (that actor's name: ``scheduler``, ``collection``...; None when that
    actor checks nobody); the signer is looked up once per actor."""
    key = str(getattr(handle, "_actor_id", id(handle)))  # reach-in: a Ray actor handle has no public id
    if key not in _SIGNERS:
        _SIGNERS[key] = signer_for_actor(handle)
    return signed(_SIGNERS[key], call_name, args, to=to)


def call(ref_or_refs: Any, timeout: float | None = 60.0) -> Any:
    """Wait for one Ray call (or a list) — the one place the driver blocks on Ray."""
    return ray.get(ref_or_refs, timeout=timeout)


@contextmanager
def local_cluster(workers: tuple[str, ...] = ("node_a", "node_b"), head_cpus: int = 2) -> Iterator[Any]:
    """A lean multi-node Ray on this machine, connected, for the demo and the
    tests: a head (``head_cpus``, no dashboard, monitor or log monitor) and one
    1-CPU worker node per name in ``workers``, each advertising a custom
    resource of that name so work can be pinned to it.  The temp dir is short
    (Unix socket paths are capped at 107 bytes) and removed afterwards.
    Yields the :class:`ray.cluster_utils.Cluster`; on exit the driver
    disconnects and every node stops, so nothing is left running."""
    temp_dir = tempfile.mkdtemp(prefix="lrm", dir="/tmp")
    old_tmp = os.environ.get("RAY_TMPDIR")
    # Cluster writes "<RAY_TMPDIR>/ray/ray_current_cluster": keep it in our dir, not a shared /tmp/ray
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)
    lean = dict(include_dashboard=False, no_monitor=True, include_log_monitor=False)
    cluster = None
    try:
        cluster = Cluster(initialize_head=True,
                          head_node_args=dict(num_cpus=head_cpus, temp_dir=temp_dir, resources={"head": 1}, **lean))
        for name in workers:  # one at a time: parallel node starts collide on ports
            cluster.add_node(num_cpus=1, resources={name: 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace=NAMESPACE, logging_level="ERROR", log_to_driver=False)
        _raylet_notes_to_log()  # the demo's tables, not the raylet's worker-pool notes
        yield cluster
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        if old_tmp is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old_tmp


def instance_actor(instance_id: str) -> Any:
    """The Ray actor running an instance on a host bound to a Ray node."""
    return ray.get_actor(instance_name(instance_id), namespace=NAMESPACE)


def node_ids(labels: tuple[str, ...] = ("head", "node_a", "node_b")) -> dict[str, str]:
    """Live Ray node ids by the custom resource each advertises."""
    out: dict[str, str] = {}
    for n in ray.nodes():
        if n.get("Alive"):
            out.update({label: n["NodeID"] for label in labels if label in n.get("Resources", {})})
    return out


RAY_TOKEN_FILE = "ray_token"


def ray_token_path(home: str | os.PathLike[str], create: bool = False) -> Path:
    """The file holding the Ray cluster's auth token (``auth/ray_token``, 0600);
    with ``create`` a fresh random token is written first."""
    path = Path(home) / "auth" / RAY_TOKEN_FILE
    if create:
        write_private(path, secrets.token_hex(32))
    return path


def ray_token_env(path: str | os.PathLike[str]) -> dict[str, str]:
    """The environment that makes a Ray process (head, driver) use token auth with the token at ``path``."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}


def use_ray_token(path: str | os.PathLike[str]) -> None:
    """Make this driver present Ray's auth token from ``path`` when it connects
    (Ray reads RAY_AUTH_MODE into its C++ config: refresh it, as ``ray`` itself does)."""
    os.environ.update(ray_token_env(path))
    RayConfig.initialize("")


def init_connect(address: str = "auto") -> None:
    """Connect to a running Ray (the one ``legionrm up`` started, by default).
    When that ``up`` started Ray with token authentication, present its token."""
    if ray.is_initialized():
        return
    if STATE_FILE.exists():
        token = json.loads(STATE_FILE.read_text()).get("ray_token_path")
        if token:
            use_ray_token(token)
    if address == "auto" and STATE_FILE.exists():
        address = json.loads(STATE_FILE.read_text())["address"]
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
    except ConnectionError as exc:
        raise SystemNotRunningError(f"no Ray cluster at {address!r}: {exc}; start one with `legionrm up`") from None
    _raylet_notes_to_log()


def _raylet_notes_to_log() -> None:
    """Ray prints the raylet's broadcast notes (such as "14 PYTHON worker processes
    have been started ...", every two more workers on a 2-cpu head) on the driver's
    stdout, even without ``log_to_driver``: that stdout is a command's answer (one
    line, or JSON).  Send them to the ``legionrm.ray`` logger instead; workers' own
    output (not asked for here) is untouched.  Does nothing if Ray moves the hook."""
    worker = ray._private.worker  # reach-in: Ray has no public hook for these notes
    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "__module__", None) == __name__:  # hooked already (by this module)
        return

    def to_log(data: dict[str, Any], ignore_prefix: bool) -> None:
        if data.get("pid") == "raylet":
            RAY_NOTES.info("%s", " ".join(map(str, data.get("lines", ()))))
        else:
            printer(data, ignore_prefix)

    worker.print_to_stdstream = to_log


# --- a system -------------------------------------------------------------------------------

RESTARTS = 10
"""How many times Ray restarts an actor that can rebuild its state."""


@dataclass
class System:
    """Handles to the actors of one running system."""

    spec: ClusterSpec
    collection: Any
    scheduler: Any = None  # the default scheduler (the first), as ``schedulers[name]``
    enactor: Any = None
    pools: Any = None  # the PoolActor every scheduler admits through
    groups: dict[str, Any] = field(default_factory=dict)
    vaults: dict[str, Any] = field(default_factory=dict)
    classes: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, Any] = field(default_factory=dict)  # hosts bound to real Ray nodes
    detached: bool = False
    signer: CallSigner | None = None  # signs each call as this driver's user (None: the system checks nobody)
    resources: tuple[str, ...] = ()  # every host and vault booted: what the Collection should hold
    schedulers: dict[str, Any] = field(default_factory=dict)  # every scheduler actor by name, the default first

    def handles(self) -> list[Any]:
        return [*self.schedulers.values(), self.enactor, self.pools, *self.classes.values(), *self.nodes.values(),
                *self.groups.values(), *self.vaults.values(), self.collection]

    def names(self) -> list[str]:
        """The named actors of this system (what `legionrm down` kills)."""
        return ([*map(scheduler_name, self.schedulers), ENACTOR, POOLS, COLLECTION] + [group_name(g) for g in self.groups]
                + [vault_name(v) for v in self.vaults] + [class_name(c) for c in self.classes]
                + [host_name(n) for n in self.nodes])

    def schedule(self, request: SchedulingRequest, timeout: float = 120.0) -> SchedulerResponse:
        """``scheduleObjects`` on this system's Scheduler actor."""
        return self._signed("scheduleObjects", {"request": request}, timeout)

    def _signed(self, call_name: str, args: dict[str, Any], timeout: float = 120.0, /, **unsigned: Any) -> Any:
        """``call_name`` on the Scheduler actor, with this driver's proof over ``args``
        when the system checks who calls (``unsigned`` arguments go along unsigned)."""
        proof = signed(self.signer, call_name, args, to=SCHEDULER)
        return call(getattr(self.scheduler, call_name).remote(**args, **unsigned, proof=proof), timeout)

    def deactivate(self, object_id: str, reason: str = "deactivated by its user") -> ObjectStatus | Refusal:
        """Save a running object's state to a vault and stop its active copy; it stays known, inert."""
        return self._signed("deactivate", {"object_id": object_id, "reason": reason})

    def activate_on(self, object_id: str, constraint: str = "true") -> ObjectStatus | Refusal:
        """Re-activate an inert object on a host matching the MIL ``constraint``, its state restored."""
        return self._signed("activate", {"object_id": object_id, "constraint": constraint})

    def activate(self, *object_ids: str, user: str | None = None) -> SchedulerResponse:
        """``scheduleObjects`` activating ``object_ids`` as ``user`` (a system that checks
        who calls uses the signer's): an inert object is placed anew and restored."""
        who = Identity(user=user or caller_name() or "anonymous")
        return self.schedule(SchedulingRequest(request_id=f"activate-{secrets.token_hex(4)}", identity=who,
                                               activate=tuple(object_ids), wait=False))

    def migrate(self, object_id: str, constraint: str = "true") -> ObjectStatus | Refusal:
        """Move a running object to a host matching the MIL ``constraint``, its state kept."""
        return self._signed("migrate", {"object_id": object_id, "constraint": constraint})

    def object_status(self, object_id: str) -> ObjectStatus | Refusal:
        """Where the object is now: running (its instance) or inert (its vault)."""
        return self._signed("object_status", {"object_id": object_id})

    def subscribe(self, subject: str, statuses: list[str], handle: Any, method: str = "on_event",
                  timeout: float = 30.0) -> str:
        """Call ``handle.method(event)`` (a :class:`~legionrm.models.StatusEvent`)
        for each of ``statuses`` (none: all) of ``subject``: a request id, an
        instance id, or ``*``; returns the trigger id (:meth:`unsubscribe`)."""
        return self._signed("register_trigger", {"subject": subject, "statuses": list(statuses)}, timeout,
                            handle=handle, method=method)

    def unsubscribe(self, trigger_id: str, timeout: float = 30.0) -> bool:
        return self._signed("remove_trigger", {"trigger_id": trigger_id}, timeout)

    def events_since(self, request_id: str, cursor: int = 0, timeout: float = 30.0) -> list[StatusEvent]:
        """``request_id``'s status events after ``cursor`` (each event's ``seq`` is the next cursor)."""
        return self._signed("events_since", {"request_id": request_id, "cursor": cursor}, timeout)

    def query(self, text: str, caller: Identity | None = None) -> QueryResult:
        if self.signer is None:
            return call(self.collection.query.remote(text, caller))
        proof = self.signer.sign("query", {"text": text, "caller": caller, "include_unavailable": False},
                                 to=COLLECTION)
        return call(self.collection.query.remote(text, caller, False, proof=proof))

    def shutdown(self) -> None:
        """Stop every actor of this system, instances first (the hosts of Ray nodes that joined after
        boot too), and any instance actor of its Ray-node hosts still running after them (idempotent)."""
        joined: list[str] = []  # the hosts the default scheduler bound as nodes joined: no booted list names them
        for name, handle in self.schedulers.items():
            try:
                joined += call(handle.stop_cycle.remote(proof=signed(self.signer, "stop_cycle", {},
                                                                     to=scheduler_name(name))), 10) or []
            except Exception:  # already gone
                pass
        nodes = {**{h: a for h in joined if (a := named_actor(host_name(h))) is not None}, **self.nodes}
        carriers = [*nodes.items(), *((group_name(g), h) for g, h in self.groups.items())]
        for to, h in carriers:
            try:  # as this driver's user: an administrator's shutdown (else refused, and the actors are killed)
                reason = "host group stopped" if to.startswith(group_name("")) else "host stopped"
                call(h.shutdown.remote(reason, proof=signed(self.signer, "shutdown", {"reason": reason}, to=to)), 10)
            except Exception:  # already gone
                pass
        for name, v in self.vaults.items():  # a vault drops its temporary shelf
            try:
                call(v.shutdown.remote(proof=signed(self.signer, "shutdown", {}, to=name)), 10)
            except Exception:  # already gone
                pass
        for h in [*self.handles(), *nodes.values()]:
            try:
                ray.kill(h)
            except Exception:  # already gone (or None)
                pass
        # instance actors are detached: those a dead host could not stop would outlive everything
        kill_named([n for host in nodes for n in instance_actor_names(host + "~")])


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
            pool_gate(spec), **auth)  # one owner: every scheduler shares it
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
