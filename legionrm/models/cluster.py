"""The cluster description (what `legionrm up` builds actors from)."""

from __future__ import annotations

import fnmatch
from typing import Any, Literal, Mapping

from pydantic import Field

from legionrm.models.base import AccessPolicy, AttrValue, Frozen, ResourceRecord
from legionrm.models.reservations import Resources, custom_kinds

# --- cluster description (what `legionrm up` builds actors from) ------------


class HostSpec(Frozen):
    """A host as the cluster file describes it.  Capacity is read from the
    ``cpus``, ``memory_gb`` and ``gpus`` attributes."""

    name: str
    nodepool: str | None = None
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    access: AccessPolicy = AccessPolicy()
    policy: str | None = None  # "module:Class" of an owner policy
    policy_args: dict = Field(default_factory=dict)

    resources: dict[str, float] = Field(default_factory=dict)
    """Custom resource kinds it offers (``resources = { NAME = n }``), counted as cpus are."""

    def capacity(self) -> Resources:
        a = self.attributes
        return Resources(
            cpus=float(a.get("cpus", 0)), memory_gb=float(a.get("memory_gb", 0)), gpus=int(a.get("gpus", 0)),
            custom=custom_kinds(self.resources),
        )


class VaultSpec(Frozen):
    """A vault: storage capacity (``storage_gb`` attribute) and the hosts it serves
    (shell-style patterns; empty serves every host)."""

    name: str
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    access: AccessPolicy = AccessPolicy()
    serves: tuple[str, ...] = ()
    policy: str | None = None
    policy_args: dict = Field(default_factory=dict)


class ImplementationSpec(Frozen):
    """One implementation of a class: the architecture and OS it runs on
    (``"*"``: any; matched against the hosts' ``arch`` and ``os``
    attributes), its entry point (``"module:Class"``) and an optional MIL
    ``requirements`` expression the host must also satisfy."""

    arch: str = Field("*", pattern=r"^(\*|[A-Za-z0-9_.\-]{1,64})$")
    os: str = Field("*", pattern=r"^(\*|[A-Za-z0-9_.\-]{1,64})$")
    entry: str = Field(..., min_length=1, max_length=300)
    requirements: str = Field("true", max_length=4000)

    def mil(self) -> str:
        """The MIL a host must satisfy for this implementation."""
        parts = [f'${k} == "{v}"' for k, v in (("arch", self.arch), ("os", self.os)) if v != "*"]
        return " and ".join(parts + [f"({self.requirements})"])


class ClassSpec(Frozen):
    """A class object: what it instantiates and its class-level policy.
    With ``implementations``, the class runs only on hosts one of them fits
    (the first that fits is the one a host runs)."""

    name: str
    implementation: str | None = None  # "module:Class" run as the instance (real Ray nodes)
    implementations: tuple[ImplementationSpec, ...] = Field((), max_length=64)
    host_list: tuple[str, ...] = ()  # Legion's class_host_list; empty means any host
    max_instances: int | None = Field(None, ge=0, le=2**63 - 1)
    policy: str | None = None
    policy_args: dict = Field(default_factory=dict)
    qos: str | None = None  # the QoS of a request whose first object is of this class and that chooses none
    scheduler: str | None = Field(None, min_length=1, max_length=64)  # the scheduler its requests go to (None: the default)


class CollectionSettings(Frozen):
    heartbeat_interval_s: float = Field(5.0, gt=0, le=86_400.0, allow_inf_nan=False)
    stale_after: int = Field(3, ge=1, le=1000)


class PoolResourceSpec(Frozen):
    """One resource kind of a resource pool (a ``[pool.cpu]`` sub-table).

    ``kind`` is ``cpu`` (cores), ``memory`` (MB), ``disk`` (MB) or ``gpu``; an
    unknown kind is kept here and refused by the pool validators, with their
    message.  ``type`` STATIC always gets its whole reservation, ELASTIC only
    what its demand claims of it (docs/pools.md).
    """

    kind: str
    reservation: float = Field(0.0, allow_inf_nan=False)  # sign and order: the pool validators' rules
    limit: float = Field(0.0, allow_inf_nan=False)
    share: float = Field(1.0, allow_inf_nan=False)
    type: Literal["ELASTIC", "STATIC"] = "ELASTIC"


class PoolSpec(Frozen):
    """A resource pool as a ``[[pool]]`` table describes it (cluster file or
    ``legionrm pools`` file).  ``default`` (cluster file only) marks the leaf
    that takes requests naming the root ``/`` once the root has children."""

    path: str
    resources: tuple[PoolResourceSpec, ...] = ()
    controller_limit_percent: float | None = Field(None, allow_inf_nan=False)
    slack_limit_percent: float | None = Field(None, allow_inf_nan=False)
    default: bool = False


class PoolChange(Frozen):
    """One live change to a running system's pools (``legionrm reload``, ``legionrm pools
    create|update|delete``): ``spec`` is the pool as it should be (for a delete, its path)."""

    op: Literal["create", "update", "delete"]
    spec: PoolSpec


class RunnerSpec(Frozen):
    """The ``[runner]`` table: how ``Command`` work runs on the Ray nodes
    (legionrm.hostobj.runner; docs/runner.md).  ``run_as = "service"`` runs
    every user's work as the service's own account: a single-user or test
    system, where every user is trusted with the service's rights."""

    run_as: Literal["owner", "service"] = "owner"
    python: str | None = Field(None, min_length=1, max_length=4096)
    """The interpreter function work runs in (None: the service's own); every account must be able to run it."""
    work_dir: str | None = Field(None, min_length=1, max_length=4096)
    """Where each instance's work directory is made (None: ``<tmp>/legionrm-work-<uid>``); never under the service's home."""
    kill_grace_s: float = Field(10.0, gt=0, le=3600, allow_inf_nan=False)
    output_cap_mb: float = Field(1.0, gt=0, le=1024, allow_inf_nan=False)


class QueueSpec(Frozen):
    """The ``[queue]`` table: how a scheduling pass walks the waiting
    requests (:mod:`legionrm.scheduler.backfill`; docs/backfill.md).
    ``policy``: ``easy`` (backfill that never delays the reserved starts of
    the first ``backfill_depth`` blocked requests), ``fcfs`` (the first
    blocked request blocks everything behind it) or ``greedy`` (whatever
    fits goes).  ``order``: ``site`` (the queue's priority order) or
    ``submit`` (submission order).  ``default_walltime_s``: the walltime of
    work that gives none (None: it holds its cpus for ever).

    How long finished requests stay in the live book: a finished request
    leaves it (its accounting records stay: ``legionrm history``) once it
    ended more than ``history_keep_s`` ago or more than ``history_keep``
    requests ended after it; ``legionrm list`` shows the live and recent
    ones, ``list --all`` every one kept."""

    policy: Literal["easy", "fcfs", "greedy"] = "easy"
    backfill_depth: int = Field(1, ge=0, le=1000)
    order: Literal["site", "submit"] = "site"
    default_walltime_s: float | None = Field(None, gt=0, le=10 * 366 * 86_400.0, allow_inf_nan=False)
    history_keep_s: float = Field(86_400.0, ge=0, le=366 * 86_400.0, allow_inf_nan=False)
    history_keep: int = Field(1000, ge=0, le=10_000_000)


class EnactorSpec(Frozen):
    """The ``[enactor]`` table.  ``deadline_s``: how long the Enactor waits
    for a host group's, a vault's or a class object's answer to one batched
    call before it counts that resource dead (``resource.dead``) and tries a
    delta schedule (docs/enactor.md): long enough for a loaded host to
    answer, short enough that a stalled one does not hold up the request."""

    deadline_s: float = Field(10.0, gt=0, le=600.0, allow_inf_nan=False)


SCHEDULER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
"""A scheduler's name: it becomes the Ray actor ``scheduler:NAME``."""
DEFAULT_SCHEDULER = "default"
"""The one scheduler of a cluster file without ``[[scheduler]]`` tables."""


class SchedulerSpec(Frozen):
    """One ``[[scheduler]]`` table: a scheduler and the hosts it serves, by
    ``nodepools`` (none: every nodepool) and a MIL ``constraint`` (both must
    hold).  Schedulers may share hosts; the hosts arbitrate between them."""

    name: str = Field(DEFAULT_SCHEDULER, pattern=SCHEDULER_NAME)
    nodepools: tuple[str, ...] = ()
    constraint: str = Field("true", max_length=4000)

    def serves(self) -> str:
        """The MIL that picks the resources this scheduler plans over: every
        vault, and the hosts of its nodepools that meet its constraint."""
        pools = " or ".join(f'$nodepool == "{p}"' for p in self.nodepools) or "true"
        return f'$kind != "host" or (({pools}) and ({self.constraint}))'


class NodeBinding(Frozen):
    """How a system bound its Ray nodes as hosts at boot (``up``: every live node), so that
    the default scheduler binds a node that joins later alike
    (:class:`~legionrm.scheduler.several.actor.NodeJoins`): the hosts bound then (name -> Ray node id),
    their heartbeat, whether they outlive the driver, where they keep their state (None:
    in memory) and how often Ray restarts them."""

    known: dict[str, str] = Field(default_factory=dict)
    heartbeat_s: float = Field(5.0, gt=0, allow_inf_nan=False)
    detached: bool = False
    state_dir: str | None = None
    restarts: int = Field(0, ge=0)


class RayNodeRule(Frozen):
    """One ``[[ray_node]]`` table: what the Ray-node hosts it matches are (a
    nodepool, attributes, an access list, and an owner's policy or host
    object subclass with its ``policy_args``).  A node matches when every
    given key does: ``ip`` and ``hostname`` are shell patterns for the node's
    address and hostname, ``labels`` maps a Ray label to a pattern for its value."""

    ip: str | None = None
    hostname: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    nodepool: str | None = None
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    access: AccessPolicy = AccessPolicy()
    policy: str | None = None
    policy_args: dict = Field(default_factory=dict)

    def matches(self, node: Mapping[str, Any]) -> bool:
        """Does the ``ray.nodes()`` entry ``node`` match every key this rule gives?"""
        labels = node.get("Labels") or {}
        return ((self.ip is None or fnmatch.fnmatchcase(str(node.get("NodeManagerAddress", "")), self.ip))
                and (self.hostname is None
                     or fnmatch.fnmatchcase(str(node.get("NodeManagerHostname", "")), self.hostname))
                and all(k in labels and fnmatch.fnmatchcase(str(labels[k]), v) for k, v in self.labels.items()))

    def host(self, name: str) -> HostSpec:
        """The spec of the Ray-node host ``name`` this rule matched."""
        return HostSpec(name=name, nodepool=self.nodepool, attributes=self.attributes, access=self.access,
                        policy=self.policy, policy_args=self.policy_args)


class AutoscalerSpec(Frozen):
    """The ``[autoscaler]`` table: on a Ray cluster with an autoscaler,
    ``enabled`` lets pending work that no node can take wait (not fail) and
    ask the autoscaler for nodes (at most ``max_bundles`` instances' worth at once)."""

    enabled: bool = False
    max_bundles: int = Field(1000, ge=1, le=100_000)


class ClusterSpec(Frozen):
    """A whole cluster file, validated."""

    source: str = "<memory>"
    collection: CollectionSettings = CollectionSettings()
    hosts: tuple[HostSpec, ...] = ()
    vaults: tuple[VaultSpec, ...] = ()
    classes: tuple[ClassSpec, ...] = ()
    fairshare: dict[str, Any] = Field(default_factory=dict)  # the [fairshare] table, checked (scheduler.wiring.core_for_cluster)
    pools: tuple[PoolSpec, ...] = ()  # the [[pool]] tables (scheduler.wiring.pool_gate); none: no admission control
    runner: RunnerSpec = RunnerSpec()  # the [runner] table
    qos: tuple[dict[str, Any], ...] = ()  # the [[qos]] tables, checked (scheduler.priority.site_settings)
    queue: QueueSpec = QueueSpec()  # the [queue] table (and the live book's history)
    enactor: EnactorSpec = EnactorSpec()  # the [enactor] table
    schedulers: tuple[SchedulerSpec, ...] = ()  # the [[scheduler]] tables; none: one scheduler, "default"
    ray_nodes: tuple[RayNodeRule, ...] = ()  # the [[ray_node]] tables: what Ray-node hosts are, by node
    autoscaler: AutoscalerSpec = AutoscalerSpec()  # the [autoscaler] table: grow the Ray cluster for pending work

    def scheduler_specs(self) -> tuple[SchedulerSpec, ...]:
        """The schedulers this cluster runs, the default first (never empty)."""
        return self.schedulers or (SchedulerSpec(),)

    def node_host(self, name: str, node: Mapping[str, Any]) -> HostSpec:
        """The spec of the Ray-node host ``name`` bound to ``node`` (its ``ray.nodes()`` entry):
        a ``[[host]]`` of that name, else the first ``[[ray_node]]`` rule it matches, else a bare one."""
        named = next((h for h in self.hosts if h.name == name), None)
        rule = next((r for r in self.ray_nodes if r.matches(node)), None)
        return named or (rule.host(name) if rule is not None else HostSpec(name=name))

    def default_pool(self) -> str | None:
        """The path of the pool marked ``default``, if any."""
        return next((p.path for p in self.pools if p.default), None)

    def capacity(self) -> Resources:
        """The whole cluster: hosts' cpus, memory and gpus summed, and the
        vaults' ``storage_gb`` (what pools are entitled from)."""
        hosts = [h.capacity() for h in self.hosts]
        return Resources(
            cpus=sum(r.cpus for r in hosts), memory_gb=sum(r.memory_gb for r in hosts), gpus=sum(r.gpus for r in hosts),
            storage_gb=sum(float(v.attributes.get("storage_gb", 0)) for v in self.vaults),
        )

    def records(self) -> list[ResourceRecord]:
        """Collection records for every host and vault, as they join."""
        out = [
            ResourceRecord(name=h.name, kind="host", nodepool=h.nodepool, attributes=h.attributes, access=h.access)
            for h in self.hosts
        ]
        out += [ResourceRecord(name=v.name, kind="vault", attributes=v.attributes, access=v.access) for v in self.vaults]
        return out




class SchedulerSettings(Frozen):
    """What one Scheduler is built from (:func:`legionrm.scheduler.wiring.wire`):
    the validated cluster file (its classes, its ``[fairshare]`` table) and
    the Scheduler's own numbers, each with its default."""

    cluster: ClusterSpec = ClusterSpec()
    name: str = Field("scheduler", min_length=1, max_length=200)
    token_timeout_s: float = Field(30.0, gt=0, allow_inf_nan=False)  # how long a reservation's token waits for its start
    max_attempts: int = Field(1000, ge=1)  # a waiting request gives up after this many
    orphan_grace_s: float = Field(60.0, ge=0, allow_inf_nan=False)  # an unknown instance younger than this is no orphan yet
    max_masters: int = Field(3, ge=1)  # the planner's ranked master schedules per request
    max_deltas: int = Field(8, ge=0)  # and delta schedules per master

    @property
    def history_keep_s(self) -> float:
        """How long a finished request stays in the live book (the ``[queue]`` table's)."""
        return self.cluster.queue.history_keep_s

    @property
    def history_keep(self) -> int:
        """How many finished requests the live book keeps at most (the ``[queue]`` table's)."""
        return self.cluster.queue.history_keep

    @property
    def cycle_interval_s(self) -> float:
        """How often the elastic cycle runs: the ``[fairshare]`` table's ``interval_s`` (10 s by default)."""
        return float(self.cluster.fairshare.get("interval_s", 10.0))
