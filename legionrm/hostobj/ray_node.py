"""A host object bound to a real Ray node.

:class:`RayNodeHost` is a :class:`~legionrm.hostobj.host.HostObject` whose
capacity and attributes come from one node of the Ray cluster
(``ray.nodes()``), and whose instances are real Ray actors: ``start_object``
imports the class's implementation (``"module:Class"``) and starts it pinned
to the node with ``NodeAffinitySchedulingStrategy(node_id, soft=False)`` and
exactly the reserved cpus, gpus and memory; ``stop_object`` kills it.

Instance actors are detached and named (``legionrm-instance-<id>`` in the
``legionrm`` namespace): they outlive the host's own actor, so a host actor
that Ray restarts finds them again by name (:meth:`RayNodeHost.reattach`)
and its running instances keep running.  Ray never cleans a detached actor
up, so every way an instance ends kills it by name: a stop, the host's
shutdown (with any stray of this host's the host no longer lists), a
reattach (the strays of a start the host never recorded), and whatever
stops a whole system (``System.shutdown``, ``legionrm down``).

A ``Command`` (runner work, :mod:`legionrm.hostobj.work`) is no Ray actor:
the host starts it through its runner (as every host object with one
does), as the owner's OS account, in a process of its own.

Which GPU devices an instance sees (``CUDA_VISIBLE_DEVICES``) is the host's
choice, from one ledger for Ray actors and runner work alike: Ray counts an
actor's ``num_gpus`` but never sees the runner's work, so left to itself it
could give an actor a device a run already uses.  Each instance's devices are
in its ``InstanceRef.gpus``, so a restarted host reads the ledger back.

Every reservation rule of the base class still applies: Ray only ever sees
work the host object already admitted, and the reserved resources are what
Ray accounts, so the two cannot disagree about what is free.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from legionrm import codes
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.owners.policy import import_object
from legionrm.hostobj.runner.instances import is_work
from legionrm.hostobj.tokens import TOKEN_ID_SEP as ID_SEP
from legionrm.models import AttrValue, InstanceRef, Refusal, ReservationToken, Resources, VaultSpec
from legionrm.models.reservations import BUILTIN_KINDS, KIND_NAME, custom_kinds
from legionrm.naming import NAMESPACE, instance_actor_names, instance_name, kill_named
from legionrm.objstate import with_state_hooks

GB = 1024**3
REAP_WAIT_S = 0.5
"""How long a reap waits for instance actors to answer (a busy one is alive)."""
STATE_TIMEOUT_S = 30.0
"""How long a save or a restore waits for the instance actor."""
_SKIP = ("node:", "accelerator_type:", "object_store_memory", "CPU", "GPU", "memory")


def find_node(node_id: str) -> dict[str, Any]:
    """The ``ray.nodes()`` entry of a live node.  Raises KeyError when absent or dead."""
    for n in ray.nodes():
        if n.get("NodeID") == node_id and n.get("Alive"):
            return n
    raise KeyError(f"no live Ray node {node_id}")


def custom_resources(node: dict[str, Any]) -> dict[str, str]:
    """A node's Ray custom resources as resource kinds: the kind's name (what
    MIL sees: ``\\W`` -> ``_``) -> Ray's name; Ray's own resources left out."""
    out: dict[str, str] = {}
    for key in node.get("Resources", {}):
        kind = re.sub(r"\W", "_", key)
        if not (key.startswith(_SKIP) or key in _SKIP or kind in BUILTIN_KINDS) and re.fullmatch(KIND_NAME, kind):
            out.setdefault(kind, key)
    return out


def node_capacity(node: dict[str, Any]) -> Resources:
    """Ray's own view of the node: its CPU, memory, GPU and custom resources."""
    r = node.get("Resources", {})
    custom = {kind: float(r[key]) for kind, key in custom_resources(node).items()}
    return Resources(cpus=float(r.get("CPU", 0)), memory_gb=round(float(r.get("memory", 0)) / GB, 3),
                     gpus=int(r.get("GPU", 0)), custom=custom_kinds(custom))


def node_attributes(node: dict[str, Any]) -> dict[str, AttrValue]:
    """Attributes a node exports: its id, address and hostname, its Ray labels
    (``label_KEY``), and each custom resource (a name such as ``node_a``
    becomes an attribute ``node_a = 1.0``; the host adds ``free_node_a``)."""
    attrs: dict[str, AttrValue] = {
        "ray_node_id": node["NodeID"],
        "node_ip": str(node.get("NodeManagerAddress", "")),
        "node_hostname": str(node.get("NodeManagerHostname", "")),
    }
    for key, value in (node.get("Labels") or {}).items():
        if not str(key).startswith("ray.io/"):
            attrs["label_" + re.sub(r"\W", "_", str(key))] = str(value)
    r = node.get("Resources", {})
    for kind, key in custom_resources(node).items():
        attrs[kind] = float(r[key])
    return attrs


def gpu_devices(held: dict[str, tuple[int, ...]], total: int, want: int) -> tuple[int, ...]:
    """The ``want`` lowest device indexes of ``total`` that no run in ``held`` has
    (the host's calendar already counted them, so there are always enough)."""
    taken = {d for ids in held.values() for d in ids}
    return tuple(d for d in range(total) if d not in taken)[:want]


class RayNodeHost(HostObject):
    """A host object for the Ray node ``node_id``.

    ``capacity`` defaults to (and a zero capacity is read as) the node's own
    CPU, GPU and memory; configured attributes are added to the node's.
    """

    def __init__(self, name: str, capacity: Resources | None = None, *, node_id: str, **kw: Any) -> None:
        node = find_node(node_id)
        if capacity is None or (capacity.cpus == 0 and capacity.memory_gb == 0 and capacity.gpus == 0):
            capacity = node_capacity(node)
        elif not capacity.custom:  # configured cpus/memory/gpus; its custom kinds are Ray's still
            capacity = capacity.model_copy(update={"custom": node_capacity(node).custom})
        kw["attributes"] = {**node_attributes(node), **dict(kw.get("attributes") or {})}
        super().__init__(name, capacity, **kw)
        self.node_id = node_id
        self._actors: dict[str, Any] = {}
        self._ray_kinds = custom_resources(node)  # kind -> Ray's name, for the instance actors' options
        self._gpus: dict[str, tuple[int, ...]] = {}  # the GPU devices each instance holds, Ray actor or runner work

    def _launch(
        self, ref: InstanceRef, token: ReservationToken, impl: str | None, args: dict[str, Any]
    ) -> InstanceRef | Refusal:
        path = impl or (ref.class_name if ":" in ref.class_name else None)
        if path is None:
            return self._refuse(codes.START_FAILED, f"class {ref.class_name!r} names no implementation 'module:Class' to run")
        try:
            cls = import_object(path, key="implementation")
        except Exception as exc:  # a bad path refuses this start, it does not break the host
            return self._refuse(codes.START_FAILED, f"cannot load {path!r}: {exc}")
        r = token.resources
        # one ledger of devices for both kinds of work: Ray would give an actor the devices its own count
        # says are free, blind to the runner's work (which Ray never sees), so the host picks them for both
        ids = self._gpus[ref.instance_id] = gpu_devices(self._gpus, self.capacity.gpus, r.gpus)
        ref = ref.model_copy(update={"gpus": ids})
        if is_work(cls):  # no Ray worker: the run sees only its devices
            started = self._start_work(ref, token, with_devices(args, ids))
        else:
            started = self._start_actor(ref, cls, path, r, ids, args)
        if isinstance(started, Refusal):
            self._gpus.pop(ref.instance_id, None)
        return started

    def _start_actor(self, ref: InstanceRef, cls: Any, path: str, r: Resources, ids: tuple[int, ...],
                     args: dict[str, Any]) -> InstanceRef | Refusal:
        """Start a Ray-actor instance pinned to the node with the reserved resources; it sees the devices ``ids``."""
        opts: dict[str, Any] = dict(
            name=instance_name(ref.instance_id),
            namespace=NAMESPACE,
            num_cpus=r.cpus,
            num_gpus=r.gpus,  # Ray counts them; which devices the actor sees is the host's ledger's (runtime_env)
            resources={self._ray_kinds.get(k, k): v for k, v in r.custom},
            max_restarts=0,
            lifetime="detached",  # it outlives a restart of this host's actor (reattach finds it by name)
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=False),
        )
        if r.memory_gb > 0:
            opts["memory"] = int(r.memory_gb * GB)
        if ids:
            opts["runtime_env"] = devices_env(getattr(cls, "_default_options", {}).get("runtime_env"), ids)
        try:
            # a plain class gets the save / restore methods a host calls (objstate.hooks)
            actor_cls = cls if isinstance(cls, ray.actor.ActorClass) else ray.remote(with_state_hooks(cls))
            self._actors[ref.instance_id] = self._create_actor(actor_cls, opts, args)
        except Exception as exc:
            return self._refuse(codes.START_FAILED, f"Ray refused to start {path!r}: {exc}")
        return ref.model_copy(update={"node_id": self.node_id})

    def _create_actor(self, actor_cls: Any, opts: dict[str, Any], args: dict[str, Any]) -> Any:
        """The Ray actor of an instance, created (a test's fake host records the options instead)."""
        return actor_cls.options(**opts).remote(**args)

    def _halt(self, ref: InstanceRef, reason: str) -> None:
        """Kill the instance's actor: by its handle, else by its name (detached, it is never reaped by Ray);
        runner work: end its process group as ``reason`` says."""
        self._gpus.pop(ref.instance_id, None)
        if ref.work:
            return super()._halt(ref, reason)
        handle = self._actors.pop(ref.instance_id, None)
        if handle is not None:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already gone
                pass
        else:
            kill_named([instance_name(ref.instance_id)])

    def _strays(self) -> list[str]:
        """Live instance actors named for this host that it does not list (a start it
        never recorded before its actor died): their actor names."""
        mine = {instance_name(i) for i in self._actors}
        return [n for n in instance_actor_names(self.name + ID_SEP) if n not in mine]

    def shutdown(self, reason: str = "host stopped") -> None:
        """Stop every instance (and any stray of this host's) and leave the collection."""
        super().shutdown(reason)
        kill_named(self._strays())

    def _save(self, ref: InstanceRef) -> bytes | Refusal:
        got = self._call_state(ref, "legion_save_state")
        if not isinstance(got, Refusal) and not isinstance(got, bytes):
            return self._refuse(codes.STATE_SAVE_FAILED, f"{ref.instance_id} saved a {type(got).__name__}, not bytes")
        return got

    def _restore(self, ref: InstanceRef, data: bytes) -> bool | Refusal:
        got = self._call_state(ref, "legion_restore_state", data)
        return True if got is True else got if isinstance(got, Refusal) else self._refuse(
            codes.STATE_RESTORE_FAILED, f"{ref.instance_id} answered {got!r} to its restore")

    def _call_state(self, ref: InstanceRef, method: str, *args: Any) -> Any:
        """Call ``method`` on the instance's actor (bounded wait); a refusal when it cannot answer."""
        code = codes.STATE_SAVE_FAILED if method == "legion_save_state" else codes.STATE_RESTORE_FAILED
        handle = self._actors.get(ref.instance_id)
        if handle is None or not hasattr(handle, method):
            return self._refuse(code, f"{ref.instance_id} ({ref.class_name}) has no {method}: its class is a Ray actor "
                                "class legionrm did not wrap, or it is gone")
        try:
            return ray.get(getattr(handle, method).remote(*args), timeout=STATE_TIMEOUT_S)
        except Exception as exc:  # the instance's hook raised, or it died, or it hung
            return self._refuse(code, f"{ref.instance_id}.{method}: {type(exc).__name__}: {str(exc)[:300]}")

    def reap(self) -> list[str]:
        """Stop every instance whose Ray actor has died or exited, so its
        capacity comes back; returns their ids.  Idempotent."""
        done_work = self._reap_work()
        probes = {iid: h.__ray_ready__.remote() for iid, h in list(self._actors.items())}
        if not probes:
            return done_work
        # a live actor answers (or is busy: not ready within the wait); a dead one raises
        ready, _ = ray.wait(list(probes.values()), num_returns=len(probes), timeout=REAP_WAIT_S)
        done = set(ready)
        gone = []
        for iid, ref in probes.items():
            if ref in done:
                try:
                    ray.get(ref)
                except RayActorError:
                    gone.append(iid)
        for iid in gone:
            self.stop_object(iid, "instance actor ended")
        return done_work + gone

    def reattach(self) -> list[str]:
        """After the actor carrying this host restarted (its state restored):
        find each listed instance's Ray actor by its name (detached, it
        survived the old process) and keep it running; an instance whose actor
        is gone (it ended meanwhile) is stopped, so its capacity comes back
        and its watchers see it end; an actor named for this host that it
        does not list (started, never recorded) is killed.  Returns the ids
        stopped."""
        gone = []
        self._gpus = {ref.instance_id: ref.gpus for ref in super().list_instances() if ref.gpus}  # the ledger again
        for ref in super().list_instances():
            if ref.work:  # its process was a child of the old one: nothing waits for it any more
                if self.work is not None:
                    self.work.orphan(ref.instance_id)
                gone.append(ref.instance_id)
            elif ref.instance_id not in self._actors:
                try:
                    self._actors[ref.instance_id] = ray.get_actor(instance_name(ref.instance_id), namespace=NAMESPACE)
                except ValueError:
                    gone.append(ref.instance_id)
        for iid in gone:
            self.stop_object(iid, "instance actor ended while its host's actor restarted")
        kill_named(self._strays())
        return gone + self.reap()

    def list_instances(self) -> list[InstanceRef]:
        """Running instances, in start order (the dead reaped first)."""
        self.reap()
        return super().list_instances()

    def expire(self) -> list[str]:
        """The timer's sweep, and the dead reaped (every heartbeat)."""
        self.reap()
        return super().expire()

    def actor(self, instance_id: str) -> Any:
        """The Ray actor handle of a running instance (None if unknown)."""
        return self._actors.get(instance_id)


def with_devices(args: dict[str, Any], ids: tuple[int, ...]) -> dict[str, Any]:
    """A start's arguments with ``CUDA_VISIBLE_DEVICES`` (the devices ``ids``) in its
    ``env`` (JSON text on the wire), over what the request set; a malformed env is
    left as it is, for the runner to refuse."""
    env = args.get("env") or {}
    try:
        env = json.loads(env) if isinstance(env, str) else dict(env)
    except (ValueError, TypeError):
        return args
    if not isinstance(env, dict):
        return args
    env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, ids))
    return {**args, "env": json.dumps(env, sort_keys=True)}


NOSET_DEVICES = "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"
"""Ray's switch that leaves a worker's ``CUDA_VISIBLE_DEVICES`` as its environment set it."""


def devices_env(runtime_env: Any, ids: tuple[int, ...]) -> dict[str, Any]:
    """A Ray actor's ``runtime_env`` (the class's own, when it has one) with ``CUDA_VISIBLE_DEVICES`` the
    devices ``ids`` and Ray told to leave it so (else Ray sets it to the devices of its own count)."""
    env = dict(runtime_env) if isinstance(runtime_env, dict) else {}
    env["env_vars"] = {**dict(env.get("env_vars") or {}), "CUDA_VISIBLE_DEVICES": ",".join(map(str, ids)),
                       NOSET_DEVICES: "1"}
    return env


class Probe:
    """A tiny instance class for demos and tests (``"legionrm.hostobj.ray_node:Probe"``):
    it reports where it runs and what Ray gave it."""

    def __init__(self, tag: str = "") -> None:
        self.tag = tag

    def where(self) -> dict[str, Any]:
        ctx = ray.get_runtime_context()
        return {"tag": self.tag, "node_id": ctx.get_node_id(), "resources": ctx.get_assigned_resources(),
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


class Counter:
    """A counter that remembers (``"legionrm.hostobj.ray_node:Counter"``), for
    demos and tests of deactivate / activate / migrate: its persistent state is
    its count (the default pickled state), and it says where it runs."""

    def __init__(self, start: int = 0) -> None:
        self.count = int(start)

    def increment(self, by: int = 1) -> int:
        self.count += int(by)
        return self.count

    def value(self) -> int:
        return self.count

    def where(self) -> str:
        """The Ray node id it runs on."""
        return ray.get_runtime_context().get_node_id()


# --- Ray nodes as hosts, when a system boots ----------------------------------------------


def ray_node_hosts() -> dict[str, str]:
    """Every live Ray node as a host name (``ray-`` and the first 8 hex digits
    of its node id, stable across restarts of the driver) -> its node id."""
    return {f"ray-{n['NodeID'][:8]}": n["NodeID"] for n in ray.nodes() if n.get("Alive")}


NODE_VAULT_GB = 10.0
"""The storage a Ray node's own vault offers (a ``[[vault]]`` of that name in the cluster file replaces it)."""


def node_vault_name(host: str) -> str:
    """The vault of the Ray-node host ``host``: ``ray-1a2b3c4d`` -> ``vault-1a2b3c4d``."""
    return "vault-" + host.removeprefix("ray-")


def node_vaults(ray_nodes: dict[str, str], taken: set[str]) -> dict[str, tuple[VaultSpec, str]]:
    """A vault for each Ray-node host (name -> its spec and the node id it is pinned to),
    serving that host alone, but where the cluster file already names that vault."""
    out: dict[str, tuple[VaultSpec, str]] = {}
    for host, node_id in sorted(ray_nodes.items()):
        name = node_vault_name(host)
        if name not in taken:
            attrs: dict[str, Any] = {"storage_gb": NODE_VAULT_GB, "serves": host, "ray_node_id": node_id}
            out[name] = (VaultSpec(name=name, serves=(host,), attributes=attrs), node_id)
    return out
