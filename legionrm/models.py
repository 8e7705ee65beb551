"""Pydantic types that cross an actor boundary.

Everything a Ray call carries in or out is defined here, in one installed
module, so that Ray pickles it by reference (cheap) and every part of the
system agrees on one shape.  Models are frozen where they are values
(tokens, refusals, records) so that nobody edits a copy they do not own.
"""

from __future__ import annotations

import time
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

AttrValue = Union[bool, int, float, str]
"""A value a resource may export as an attribute (bool before int: order matters)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- outcomes ----------------------------------------------------------------


class Refusal(Frozen):
    """A typed "no": who refused, with a machine-readable code and a reason.

    ``code`` is a dotted reason code (``capacity``, ``policy.user``,
    ``token.expired`` ...); ``by`` names what refused (a resource, a policy,
    a filter) so a user can ask "why not host X".
    """

    code: str
    reason: str
    by: str = ""

    def __bool__(self) -> bool:  # a refusal is never truthy, so `if result:` reads right
        return False


# --- identity and access -----------------------------------------------------


class Identity(Frozen):
    """Who is asking: a user, optionally the class whose instance is placed,
    and the groups the user belongs to (owner policies may admit by group)."""

    user: str
    class_name: str | None = None
    groups: tuple[str, ...] = ()


class AccessPolicy(Frozen):
    """Who a resource accepts, as its owner declared it.

    Empty allow lists mean "anyone"; a deny entry always wins over an allow.
    The Collection applies this when a query names a caller, as Legion's
    collection answers only with resources that would accept that caller.
    """

    allow_users: tuple[str, ...] = ()
    deny_users: tuple[str, ...] = ()
    allow_classes: tuple[str, ...] = ()
    deny_classes: tuple[str, ...] = ()
    allow_groups: tuple[str, ...] = ()

    def accepts(self, caller: Identity | None) -> bool:
        """True when ``caller`` may use the resource (None: no caller, accept)."""
        if caller is None:
            return True
        if caller.user in self.deny_users:
            return False
        if caller.class_name is not None and caller.class_name in self.deny_classes:
            return False
        if self.allow_users or self.allow_groups:
            ok_user = caller.user in self.allow_users
            ok_group = any(g in self.allow_groups for g in caller.groups)
            if not (ok_user or ok_group):
                return False
        if self.allow_classes and caller.class_name not in self.allow_classes:
            return False
        return True


# --- the collection ----------------------------------------------------------

ResourceKind = Literal["host", "vault"]


class ResourceRecord(Frozen):
    """What the Collection knows of one resource."""

    name: str
    kind: ResourceKind = "host"
    nodepool: str | None = None
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    access: AccessPolicy = AccessPolicy()
    available: bool = True
    last_heartbeat: float = Field(default_factory=time.time)


class QueryResult(Frozen):
    """The answer to a Collection query: the matching records, in name order."""

    query: str
    records: tuple[ResourceRecord, ...]
    considered: int
    elapsed_ms: float

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.records]


# --- reservations (resource side) --------------------------------------------


class Resources(Frozen):
    """An amount of a host's (or vault's) capacity."""

    cpus: float = Field(0.0, ge=0)
    memory_gb: float = Field(0.0, ge=0)
    gpus: int = Field(0, ge=0)
    storage_gb: float = Field(0.0, ge=0)
    exclusive: bool = False


class Holder(Frozen):
    """Who holds a reservation: the user, the class, and the enactor acting."""

    user: str
    class_name: str | None = None
    enactor: str = "enactor"
    groups: tuple[str, ...] = ()

    def identity(self) -> Identity:
        return Identity(user=self.user, class_name=self.class_name, groups=self.groups)


class ReservationRequest(Frozen):
    """Ask a host or vault for a block of capacity over time.

    ``request_id`` is chosen by the caller and makes ``make_reservation``
    idempotent: asking twice with the same id returns the same token.
    ``start=None`` means an instant reservation (now); a future time is an
    advance reservation.  ``timeout_s`` is how long the holder has to use the
    token before it expires at the resource.
    """

    request_id: str
    resource: str
    holder: Holder
    resources: Resources
    vault: str | None = None
    start: float | None = None
    duration_s: float | None = Field(None, gt=0)
    timeout_s: float = Field(30.0, gt=0)
    reusable: bool = False


class ReservationToken(Frozen):
    """Proof of a reservation, signed (HMAC-SHA256) by the issuing resource."""

    token_id: str
    issuer: str
    holder: Holder
    resources: Resources
    vault: str | None = None
    start: float
    end: float | None
    expires_at: float
    reusable: bool = False
    signature: str = ""


class InstanceRef(Frozen):
    """A running instance started on a host with a token."""

    instance_id: str
    class_name: str
    host: str
    vault: str | None = None
    token_id: str
    user: str
    started_at: float
    node_id: str | None = None


# --- scheduling requests and schedules ---------------------------------------

PlacementMode = Literal["pack", "scatter", "vscatter", "free"]


class ObjectRequest(Frozen):
    """Create ``count`` instances of ``class_name``, each needing the given
    capacity, on hosts matching the MIL ``constraint``."""

    class_name: str
    count: int = Field(1, ge=1)
    cpus: float = Field(1.0, ge=0)
    memory_gb: float = Field(1.0, ge=0)
    gpus: int = Field(0, ge=0)
    storage_gb: float = Field(0.0, ge=0)
    constraint: str = "true"
    vault_constraint: str = "true"
    placement: PlacementMode = "free"
    exclusive: bool = False
    walltime_s: float | None = Field(None, gt=0)
    ducc_class: str | None = None
    priority: int | None = None
    weight: float | None = Field(None, gt=0)
    args: dict[str, AttrValue] = Field(default_factory=dict)


class SchedulingRequest(Frozen):
    """Legion's LegionRequestToScheduler: who asks, from which resource pool,
    which objects to create and which existing objects to activate."""

    request_id: str
    identity: Identity
    pool: str = "/"
    objects: tuple[ObjectRequest, ...] = ()
    activate: tuple[str, ...] = ()


class Placement(Frozen):
    """One instance mapped onto a host (and a vault).

    ``key`` names the mapping (``"<class>#<index>"`` within a request) so a
    delta schedule can say which mappings it replaces.
    """

    key: str
    class_name: str
    host: str
    vault: str | None = None
    resources: Resources = Resources()
    group: str | None = None  # the host group actor that carries ``host``, if any


class DeltaSchedule(Frozen):
    """Alternative placements for some mappings of a master schedule: Legion's
    difference set from the master.  Keys not named keep the master's mapping."""

    placements: tuple[Placement, ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(p.key for p in self.placements)


class MasterSchedule(Frozen):
    """A complete placement of every instance of a request, ranked, with its
    delta schedules in the order they should be tried."""

    placements: tuple[Placement, ...]
    deltas: tuple[DeltaSchedule, ...] = ()
    score: float = 0.0


class PlacementFailure(Frozen):
    """Why a mapping could not be reserved or started: which resource, which code."""

    key: str
    resource: str
    code: str
    reason: str
    stage: Literal["reserve", "start", "plan"] = "reserve"


class ScheduleAttempt(Frozen):
    """What happened to one master schedule (and its deltas) during enactment."""

    master: int
    deltas_tried: int
    failures: tuple[PlacementFailure, ...]
    succeeded: bool


class EnactResult(Frozen):
    """The outcome of ``enact_schedule``.

    On success ``master`` is the index of the master that succeeded,
    ``placements`` the final mapping (after deltas) and ``tokens`` the host
    and vault tokens per placement key.  On failure ``attempts`` says, for
    every master, which placements failed and why.  ``thrash`` counts
    re-reservations of a resource for the same mapping after releasing it.
    """

    ok: bool
    master: int | None = None
    placements: tuple[Placement, ...] = ()
    host_tokens: dict[str, ReservationToken] = Field(default_factory=dict)
    vault_tokens: dict[str, ReservationToken] = Field(default_factory=dict)
    attempts: tuple[ScheduleAttempt, ...] = ()
    reservations_made: int = 0
    reservations_released: int = 0
    thrash: int = 0
    instances: tuple[InstanceRef, ...] = ()


class SchedulerResponse(Frozen):
    """Legion's LegionSchedulerResponse: did it work, what runs where, and why not."""

    request_id: str
    ok: bool
    instances: tuple[InstanceRef, ...] = ()
    failures: tuple[PlacementFailure, ...] = ()
    masters: int = 0
    enact: EnactResult | None = None
    message: str = ""


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

    def capacity(self) -> Resources:
        a = self.attributes
        return Resources(
            cpus=float(a.get("cpus", 0)), memory_gb=float(a.get("memory_gb", 0)), gpus=int(a.get("gpus", 0))
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


class ClassSpec(Frozen):
    """A class object: what it instantiates and its class-level policy."""

    name: str
    implementation: str | None = None  # "module:Class" run as the instance (real Ray nodes)
    host_list: tuple[str, ...] = ()  # Legion's class_host_list; empty means any host
    max_instances: int | None = Field(None, ge=0)
    policy: str | None = None
    policy_args: dict = Field(default_factory=dict)


class CollectionSettings(Frozen):
    heartbeat_interval_s: float = Field(5.0, gt=0)
    stale_after: int = Field(3, ge=1)


class PoolResourceSpec(Frozen):
    """One resource kind of a resource pool (a ``[pool.cpu]`` sub-table).

    ``kind`` is ``cpu`` (cores), ``memory`` (MB), ``disk`` (MB) or ``gpu``; an
    unknown kind is kept here and refused by the pool validators, with their
    message.  ``type`` STATIC always gets its whole reservation, ELASTIC only
    what its demand claims of it (docs/pools.md).
    """

    kind: str
    reservation: float = 0.0
    limit: float = 0.0
    share: float = 1.0
    type: Literal["ELASTIC", "STATIC"] = "ELASTIC"


class PoolSpec(Frozen):
    """A resource pool as a ``[[pool]]`` table describes it (cluster file or
    ``legionrm pools`` file).  ``default`` (cluster file only) marks the leaf
    that takes requests naming the root ``/`` once the root has children."""

    path: str
    resources: tuple[PoolResourceSpec, ...] = ()
    controller_limit_percent: float | None = None
    slack_limit_percent: float | None = None
    default: bool = False


class ClusterSpec(Frozen):
    """A whole cluster file, validated."""

    source: str = "<memory>"
    collection: CollectionSettings = CollectionSettings()
    hosts: tuple[HostSpec, ...] = ()
    vaults: tuple[VaultSpec, ...] = ()
    classes: tuple[ClassSpec, ...] = ()
    fairshare: dict[str, Any] = Field(default_factory=dict)  # the [fairshare] table, checked (scheduler.build.core_for_cluster)
    pools: tuple[PoolSpec, ...] = ()  # the [[pool]] tables (scheduler.build.pool_gate); none: no admission control

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


# --- enactment (legionrm.enactor) ---------------------------------------------


class EnactRequest(Frozen):
    """Legion's LegionScheduleRequestArray: the ranked master schedules (each
    with its delta schedules) for one request, and who holds what is reserved.

    ``request_id`` seeds every reservation's request id, so re-sending the same
    request is safe.  ``timeout_s`` is each reservation's token timeout;
    ``duration_s`` maps a class name to its walltime (absent: open-ended);
    ``args`` maps a class name to its ``create_instance`` arguments.  With
    ``create=False`` the enactor only reserves (and asks approval) and returns
    the tokens, leaving instance creation to the caller.
    """

    request_id: str
    holder: Holder
    masters: tuple[MasterSchedule, ...]
    timeout_s: float = Field(30.0, gt=0)
    duration_s: dict[str, float] = Field(default_factory=dict)
    args: dict[str, dict[str, AttrValue]] = Field(default_factory=dict)
    create: bool = True


class ScheduleProposal(Frozen):
    """What the enactor shows the scheduler for confirmation (Legion's step 6):
    every placement of master ``master`` is reserved; ``stage="start"`` when a
    start-time veto made the enactor revise an approved mapping."""

    request_id: str
    master: int
    placements: tuple[Placement, ...]
    stage: Literal["reserve", "start"] = "reserve"


# --- host objects: batched starts (hostobj) -----------------------------------


class StartRequest(Frozen):
    """One ``start_object`` in a host group's batched ``start_objects``.

    The host is the token's issuer; ``holder`` is who presents the token (it
    must be the token's holder); ``impl`` is the import path ("module:Class")
    of the code a real host runs (simulated hosts ignore it).
    """

    token: ReservationToken
    class_name: str
    holder: Holder
    vault: str | None = None
    args: dict[str, AttrValue] = Field(default_factory=dict)
    impl: str | None = None


class ScheduleSuite(Frozen):
    """What ``make_schedules`` returns over the wire: the ranked masters (each
    with its deltas) and, when there are none, why each object failed."""

    request_id: str
    masters: tuple[MasterSchedule, ...] = ()
    failures: tuple[PlacementFailure, ...] = ()


# --- the elastic scheduling cycle (legionrm.scheduler.elastic.cycle) ---------------------


class ElasticJobRequest(Frozen):
    """Long-running elastic work for the scheduling cycle: as many processes
    (instances of ``class_name``) as the fair-share core grants, re-balanced
    every cycle.  ``ducc_class`` is the FAIR_SHARE class that sets its
    priority and weight (None: the default FAIR_SHARE class).  ``memory_gb``
    per process is what the core counts (in quanta); ``cpus`` and ``gpus`` are
    carried to every reservation.  ``work_items`` is the work left (None:
    unbounded); ``time_per_item_ms`` 0 means no item has finished yet (the
    job is still initializing and its growth is capped, as in DUCC)."""

    job_id: str = Field(min_length=1)
    user: str = Field(min_length=1)
    class_name: str = Field(min_length=1)
    ducc_class: str | None = None
    memory_gb: float = Field(gt=0)
    cpus: float = Field(1.0, ge=0)
    gpus: int = Field(0, ge=0)
    work_items: int | None = Field(None, ge=0)
    threads: int = Field(1, ge=1)
    max_processes: int | None = Field(None, ge=0)
    time_per_item_ms: float = Field(0.0, ge=0)
    init_time_ms: float = Field(0.0, ge=0)
    groups: tuple[str, ...] = ()
    args: dict[str, AttrValue] = Field(default_factory=dict)


class ElasticChange(Frozen):
    """One process that started (``grew``), stopped (``shrank``) or could not
    start (``refused``) in a cycle, and why (``code`` is the refusal code)."""

    job_id: str
    user: str
    share: int
    host: str
    change: Literal["grew", "shrank", "refused"]
    reason: str
    code: str = ""
    instance_id: str | None = None


class ElasticJobStatus(Frozen):
    """One elastic job after a cycle: ``processes`` running (``instances``,
    ``hosts`` host -> count), ``target`` the count the core gave it this cycle,
    ``evicting`` processes told to stop whose exit is not confirmed yet."""

    job_id: str
    user: str
    class_name: str
    ducc_class: str
    processes: int
    target: int
    evicting: int = 0
    cap: int = 0
    pure_fair_share: int = 0
    reason: str = ""
    memory_gb: float = 0.0
    cpus: float = 0.0
    hosts: dict[str, int] = Field(default_factory=dict)
    instances: tuple[InstanceRef, ...] = ()


class ElasticUserTotals(Frozen):
    user: str
    jobs: int
    processes: int
    target: int
    memory_gb: float
    cpus: float


class CycleReport(Frozen):
    """What one elastic scheduling cycle did: why it ran (``triggers``), every
    job and user after it, what grew, shrank or was refused, the hosts' states
    (``up``, ``dead``, ``off``) and the jobs left needy by defragmentation."""

    cycle: int
    at: float
    triggers: tuple[str, ...] = ()
    jobs: dict[str, ElasticJobStatus] = Field(default_factory=dict)
    users: dict[str, ElasticUserTotals] = Field(default_factory=dict)
    grew: tuple[ElasticChange, ...] = ()
    shrank: tuple[ElasticChange, ...] = ()
    refused: tuple[ElasticChange, ...] = ()
    hosts: dict[str, str] = Field(default_factory=dict)
    needy: tuple[str, ...] = ()
    elapsed_ms: float = 0.0


class SchedulerStatus(Frozen):
    """What ``legionrm status`` shows of a Scheduler: the instances it started
    (``hosts``: host -> count), the elastic jobs after its last cycle, and its
    resource pools' entitlement and allocation (Peloton units: memory and disk in MB)."""

    instances: int = 0
    hosts: dict[str, int] = Field(default_factory=dict)
    last_cycle: int = 0
    elastic: dict[str, ElasticJobStatus] = Field(default_factory=dict)
    pools: dict[str, dict[str, Any]] = Field(default_factory=dict)
