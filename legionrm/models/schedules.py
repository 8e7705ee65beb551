"""Scheduling requests, master and delta schedules, failures, responses, and what the Enactor is asked and proposes."""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal, Sequence

from pydantic import Field, WrapSerializer, field_validator, model_validator

from legionrm.models.arrays import MAX_ARRAY_INDEX, parse_array
from legionrm.models.base import AttrValue, Frozen, Identity
from legionrm.models.reservations import (
    BUILTIN_KINDS,
    KIND_NAME,
    Holder,
    InstanceRef,
    ReservationToken,
    Resources,
    custom_kinds,
)

# --- scheduling requests and schedules ---------------------------------------

PlacementMode = Literal["pack", "scatter", "vscatter", "free"]

MAX_INSTANCES = 10_000
"""The most instances one object request (and one whole request) may ask for."""
MAX_OBJECTS = 1_000
"""The most object requests (and objects to activate: 10 times this) in one request."""
MAX_AMOUNT = 1e15
"""The largest amount of one resource an instance may ask for (as ``legionrm.tomlio.MAX_AMOUNT``)."""
MAX_WALLTIME_S = 10 * 366 * 86_400.0
"""The longest walltime: ten years."""
MAX_PRIORITY = 2**31 - 1
"""Priorities are 32-bit, either sign."""
START_SLACK_S = 60.0
"""How far in the past a request's ``start`` may be when it is submitted
(clocks differ a little); also how long after its start an advance
reservation waits to be used before it expires."""
MAX_AHEAD_S = 366 * 86_400.0
"""The furthest ahead a request may ask to start: a year."""
MAX_DEPENDS = 1_000
"""The most requests one dependency list (``after_ok``, ...) may name."""


def start_problem(start: float | None, now: float) -> str | None:
    """Why ``start`` cannot be asked for at ``now`` (None: it can): more
    than :data:`START_SLACK_S` in the past, or more than :data:`MAX_AHEAD_S` ahead."""
    if start is None:
        return None
    if start < now - START_SLACK_S:
        return f"start {start:.0f} is {now - start:.0f}s in the past (at most {START_SLACK_S:g}s is allowed)"
    if start > now + MAX_AHEAD_S:
        return f"start {start:.0f} is more than {MAX_AHEAD_S / 86_400:.0f} days ahead"
    return None


class ObjectRequest(Frozen):
    """Create ``count`` instances of ``class_name``, each needing the given
    capacity, on hosts matching the MIL ``constraint``.  Numbers are finite
    and bounded (``MAX_INSTANCES``, ``MAX_AMOUNT``, ``MAX_WALLTIME_S``,
    ``MAX_PRIORITY``)."""

    class_name: str
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$")
    """What other object requests of the same request call this one in their
    ``after`` (None: its ``class_name``)."""
    after: tuple[str, ...] = Field((), max_length=MAX_OBJECTS)
    """The names of object requests of the same request this one follows: its
    instances start only once theirs run or, for work that ends (a
    ``Command``), once they all ended well (issue 26; a cycle, or a name no
    object request has, is refused at submit: ``request.after``)."""
    count: int = Field(1, ge=1, le=MAX_INSTANCES)
    cpus: float = Field(1.0, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)
    memory_gb: float = Field(1.0, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)
    gpus: int = Field(0, ge=0, le=int(MAX_AMOUNT))
    storage_gb: float = Field(0.0, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)
    resources: dict[str, float] = Field(default_factory=dict, max_length=64)
    """Custom resource kinds each instance needs (``resources = { NAME = n }``):
    a Ray node's custom resources; a host without the kind cannot take it."""
    constraint: str = "true"
    vault_constraint: str = "true"
    rank: str | None = Field(None, max_length=4096)
    """A MIL expression (HTCondor's Rank): among the hosts that fit, a higher
    value goes first, before the planner's own rankers; undefined or not a
    number counts as 0."""
    placement: PlacementMode = "free"
    exclusive: bool = False
    walltime_s: float | None = Field(None, gt=0, le=MAX_WALLTIME_S, allow_inf_nan=False)
    ducc_class: str | None = None
    priority: int | None = Field(None, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    weight: float | None = Field(None, gt=0, le=MAX_AMOUNT, allow_inf_nan=False)
    args: dict[str, AttrValue] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict, max_length=256)
    """Environment variables a ``Command`` instance's process gets (beside the runner's own)."""
    avoid_hosts: tuple[str, ...] = Field((), max_length=MAX_INSTANCES)
    """Hosts the planner must not use for this object request (the
    ``avoid`` filter); the Scheduler fills it when it re-plans after every
    master schedule failed, with the hosts that refused."""


    @field_validator("resources")
    @classmethod
    def _resources(cls, v: dict[str, float]) -> dict[str, float]:
        for name, n in v.items():
            if not re.fullmatch(KIND_NAME, name) or name in BUILTIN_KINDS:
                raise ValueError(f"resources {name!r}: a custom kind is a name of letters, digits and _ "
                                 "(not first), not a built-in (cpus, memory_gb, gpus, storage_gb)")
            if not (isinstance(n, (int, float)) and 0 <= n <= MAX_AMOUNT and math.isfinite(n)):
                raise ValueError(f"resources {name!r}: {n!r} is not an amount from 0 to {MAX_AMOUNT:g}")
        return v

    def custom(self) -> tuple[tuple[str, float], ...]:
        """Its custom kinds as :attr:`Resources.custom` holds them."""
        return custom_kinds(self.resources)

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not ENV_NAME.fullmatch(name) or len(value) > 4096 or "\0" in value:
                raise ValueError(f"env {name!r}: a name of letters, digits and _ (not first), a value up to 4096 "
                                 "characters without NUL")
        return v

    def start_args(self) -> dict[str, AttrValue]:
        """What each instance is started with: ``args``, and ``env`` (as JSON text) when given."""
        return {**self.args, **({"env": json.dumps(self.env, sort_keys=True)} if self.env else {})}


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

MAX_REPLANS = 10
"""The most fresh plans one attempt may make after every master failed."""


class SchedulingRequest(Frozen):
    """Legion's LegionRequestToScheduler: who asks, from which resource pool,
    which objects to create and which existing objects to activate."""

    request_id: str
    identity: Identity
    pool: str = "/"
    objects: tuple[ObjectRequest, ...] = ()
    activate: tuple[str, ...] = ()
    wait: bool = True
    """A request that cannot run now waits in the Scheduler's queue (it is
    answered ``state="pending"`` and placed when capacity frees); ``False``
    answers at once, refused, as a one-shot request."""
    replans: int = Field(1, ge=0, le=MAX_REPLANS)
    """When the Enactor reports that every master schedule failed, the
    Scheduler plans afresh (the hosts that refused avoided) and enacts once
    more, up to this many times per attempt."""
    start: float | None = Field(None, gt=0, allow_inf_nan=False)
    """When the instances should start (seconds since the epoch); None: now.
    A future start is an advance reservation: the hosts are reserved now for
    ``[start, start + walltime)`` and the instances start then.  The
    Scheduler refuses one in the past or too far ahead (:func:`start_problem`)."""
    walltime_s: float | None = Field(None, gt=0, le=MAX_WALLTIME_S, allow_inf_nan=False)
    """The walltime of every object request that gives none of its own.  A
    request with a ``start`` needs a walltime for every object request."""
    qos: str | None = Field(None, min_length=1, max_length=200)
    """The quality of service it chooses (a ``[[qos]]`` of the cluster file); None: its class's default."""
    priority: int | None = Field(None, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    """An administrator's fixed priority: replaces the multifactor formula's
    (:mod:`legionrm.scheduler.priority.multifactor`).  Anyone else's request that sets it is refused."""
    hold: Literal["user", "admin"] | None = None
    """Held (by its user or by an administrator): it waits, unconsidered, until released."""
    scheduler: str | None = Field(None, min_length=1, max_length=64)
    """The scheduler this request is for (its top-level ``scheduler = "NAME"``);
    None: the one its class object names, else the cluster's default."""
    after_ok: tuple[str, ...] = Field((), max_length=MAX_DEPENDS)
    """Start only once each of these requests completed (ended well); one that
    ended otherwise cancels this request (see docs/requests.md, dependencies)."""
    after_any: tuple[str, ...] = Field((), max_length=MAX_DEPENDS)
    """Start only once each of these requests ended, however it ended."""
    after_not_ok: tuple[str, ...] = Field((), max_length=MAX_DEPENDS)
    """Start only once each of these requests ended other than completed; one
    that completed cancels this request."""
    begin_at: float | None = Field(None, gt=0, allow_inf_nan=False)
    """Do not start before this time (seconds since the epoch); it waits pending until then."""
    array: str | None = Field(None, min_length=1, max_length=1000)
    """A job array (:mod:`legionrm.models.arrays`): ``"0-99%10"`` runs 100
    tasks ``ID_0`` .. ``ID_99``, at most 10 at once."""
    array_index: int | None = Field(None, ge=0, le=MAX_ARRAY_INDEX)
    """This request is task ``array_index`` of an array (set by the Scheduler, never by its user)."""
    requeue: bool = False
    """When its host is lost, it goes back to the queue instead of ending ``node_lost``."""
    vetoed: dict[str, str] = Field(default_factory=dict, max_length=MAX_INSTANCES)
    """The hosts whose owner refused it for good (a lasting refusal), each with the host's
    ``owner_mark`` then: kept out of its plans (``avoid_hosts``) until that mark changes (set by
    the Scheduler, never by its user: :mod:`legionrm.scheduler.replan`)."""

    @field_validator("array")
    @classmethod
    def _array(cls, v: str | None) -> str | None:
        if v is not None:
            parse_array(v)  # a ValueError names the spec and what is wrong with it
        return v

    def depends(self) -> dict[str, tuple[str, ...]]:
        """Its dependencies by kind (only the kinds it has)."""
        return {k: ids for k in ("after_ok", "after_any", "after_not_ok") if (ids := getattr(self, k))}
    on_preempt: Literal["requeue", "cancel"] | None = None
    """What preemption does to it (only work in a preemptable QoS is ever a
    victim): ``requeue`` puts it back in the queue, ``cancel`` ends it
    ``preempted``.  None: ``requeue``, as Slurm's ``PreemptMode=REQUEUE``
    does for a batch job (requeueable by default)."""

    @model_validator(mode="after")
    def _walltimes(self) -> "SchedulingRequest":
        if self.walltime_s is not None and any(o.walltime_s is None for o in self.objects):
            filled = tuple(o if o.walltime_s is not None else o.model_copy(update={"walltime_s": self.walltime_s})
                           for o in self.objects)
            object.__setattr__(self, "objects", filled)
        if self.start is not None and any(o.walltime_s is None for o in self.objects):
            raise ValueError("a request with a start needs a walltime (walltime_s) for every object")
        if self.array_index is not None and self.array is None:
            raise ValueError("array_index: only a task of an array has one")
        if self.after_ok or self.after_any or self.after_not_ok:  # (most requests wait for none)
            for kind, ids in self.depends().items():
                if self.request_id in ids:
                    raise ValueError(f"{kind}: a request cannot wait for itself ({self.request_id!r})")
        return self


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
    lasting: bool = False
    """No amount of waiting changes it: every host was refused for what the
    host is (its attributes, its owner's access list, its total capacity,
    the class's host list), none for what it holds now."""


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
    state: str = ""
    """The request's state after this call: ``running``, ``pending`` (waiting
    in the queue; ``failures`` say why not now), ``failed`` or ``cancelled``."""


# --- enactment (legionrm.enactor) ---------------------------------------------


def _whole(masters: Sequence[MasterSchedule], handler: Any) -> Any:
    """Masters written as the list they stand for (a lazy sequence is made whole here)."""
    return handler(masters if type(masters) is list else list(masters))


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
    masters: Annotated[Sequence[MasterSchedule], WrapSerializer(_whole)]
    """In rank order.  Any sequence of masters: the Scheduler's own Enactor, in its process,
    is handed the plan's (masters made models only when the Enactor reaches them:
    :class:`~legionrm.scheduler.planning.drafts.LazyMasters`); written out, or sent to an
    Enactor actor, they are every master, as a list."""
    timeout_s: float = Field(30.0, gt=0)
    duration_s: dict[str, float] = Field(default_factory=dict)
    args: dict[str, dict[str, AttrValue]] = Field(default_factory=dict)
    create: bool = True
    attestations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The Scheduler's attestations of ``holder``, one per reservation the Enactor
    may ask, keyed ``<request_id>/<key>/<kind>@<resource>``
    (:func:`legionrm.auth.attest.attestation_key`): what a host that checks
    identities needs with each reservation, good for that one only."""
    start: float | None = None
    """Reserve from this time (an advance reservation; None: now).  Each
    token then expires ``timeout_s`` after ``start`` if it is not used."""
    after: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Per placement key, the placement keys whose instances must run before
    it is started (the request's ``after`` graph; none: all start at once)."""


class ReservedStart(Frozen):
    """Start (or, with ``release``, give up) what an advance reservation
    holds: the placements enacted earlier with ``create=False`` and their
    tokens, per placement key.  ``args`` maps a placement key to its
    ``create_instance`` arguments."""

    request_id: str
    holder: Holder
    placements: tuple[Placement, ...]
    host_tokens: dict[str, ReservationToken] = Field(default_factory=dict)
    vault_tokens: dict[str, ReservationToken] = Field(default_factory=dict)
    args: dict[str, dict[str, AttrValue]] = Field(default_factory=dict)
    release: bool = False


class ScheduleProposal(Frozen):
    """What the enactor shows the scheduler for confirmation (Legion's step 6):
    every placement of master ``master`` is reserved; ``stage="start"`` when a
    start-time veto made the enactor revise an approved mapping."""

    request_id: str
    master: int
    placements: tuple[Placement, ...]
    stage: Literal["reserve", "start"] = "reserve"


class ScheduleSuite(Frozen):
    """What ``make_schedules`` returns over the wire: the ranked masters (each
    with its deltas) and, when there are none, why each object failed."""

    request_id: str
    masters: tuple[MasterSchedule, ...] = ()
    failures: tuple[PlacementFailure, ...] = ()
    refused: tuple[PlacementFailure, ...] = ()
    """Every host each object request's pipeline refused: ``key`` names the
    object's placements, ``resource`` the host, ``code`` / ``reason`` why, by
    the filter named at the start of ``reason`` (``explain`` prints them)."""
