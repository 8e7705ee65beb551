"""Placement as a pipeline: candidates -> feasibility filters -> rankers.

Each filter and ranker is a small class with one method and a ``name`` that
appears in explanations.  They work on a :class:`HostTable` (numpy columns of
the candidate hosts for one object request), never on one host at a time.

A filter returns a boolean "keep" mask and, for the hosts it drops, a reason
code and message; the pipeline records, per host, the first filter that
refused it, so "why not host X" always has an answer with a name.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator, Protocol

import numpy as np

from legionrm import codes
from legionrm.models import ClassSpec, ObjectRequest, Refusal

INF = float("inf")


@dataclass(frozen=True)
class HostTable:
    """Columns of candidate hosts (one row per host), read from one snapshot.

    ``free_*`` are what the host last reported free (its heartbeat), falling
    back to its totals for hosts that have not reported; ``next_event`` is the
    time of the host's next calendar event (inf: none); ``risk`` is a 0..1
    estimate that a reservation there is refused (owner policies, load).
    ``row_names`` are the snapshot's names by row, shared by every table read
    from it (never gathered by :meth:`take`): ``names`` reads the hosts' own.
    """

    row: np.ndarray  # the host's row in the snapshot's table
    row_names: np.ndarray  # the snapshot's names, per snapshot row (row_names[row] names the hosts)
    cpus: np.ndarray
    memory_gb: np.ndarray
    gpus: np.ndarray
    free_cpus: np.ndarray
    free_memory_gb: np.ndarray
    free_gpus: np.ndarray
    load: np.ndarray
    instances: np.ndarray
    next_event: np.ndarray
    risk: np.ndarray
    kinds: tuple[str, ...] = ()  # the custom resource kinds (Ray custom resources) the two columns below hold
    kind_total: np.ndarray | None = None  # (hosts, kinds): each host's capacity of each kind (0: it has none)
    kind_free: np.ndarray | None = None  # (hosts, kinds): what it last reported free

    def __len__(self) -> int:
        return len(self.row)

    @cached_property
    def names(self) -> np.ndarray:
        """The hosts' names (an object array of str), read from ``row_names`` on first use: a plan
        reads the names of the few hosts it uses (:meth:`names_at`), not all of them."""
        return self.row_names[self.row]

    def names_at(self, idx: np.ndarray | int) -> Any:
        """The names of the hosts at positions ``idx`` (an array of them; one name for one position)."""
        return self.row_names[self.row[idx]]

    def take(self, idx: np.ndarray) -> "HostTable":
        return HostTable(**{k: v if k in _SHARED or v is None else v[idx]
                            for k, v in ((k, getattr(self, k)) for k in self.__dataclass_fields__)})

    def kind(self, name: str, free: bool) -> np.ndarray:
        """Each host's amount of the custom kind ``name``: free now, or in total (0 where it has none)."""
        cols = self.kind_free if free else self.kind_total
        if name not in self.kinds or cols is None:
            return np.zeros(len(self))
        return cols[:, self.kinds.index(name)]

    def kinds_fit(self, req: ObjectRequest) -> np.ndarray:
        """Hosts with, in total, one instance's worth of every custom kind ``req`` asks for."""
        keep = np.ones(len(self), bool)
        for name, need in req.custom():
            keep &= _ge(self.kind(name, free=False), need)
        return keep

    def slots(self, req: ObjectRequest) -> np.ndarray:
        """How many instances of ``req`` fit in each host's free capacity now."""
        if req.exclusive:
            whole = (self.instances == 0) & _ge(self.free_cpus, self.cpus) & _ge(self.free_memory_gb, self.memory_gb)
            fits = whole & _ge(self.cpus, req.cpus) & _ge(self.memory_gb, req.memory_gb) & _ge(self.gpus, req.gpus)
            return (fits & self.kinds_fit(req)).astype(np.int64)
        n = np.full(len(self), np.iinfo(np.int64).max, dtype=np.int64)
        custom = tuple((self.kind(name, free=True), need) for name, need in req.custom())
        for free, need in ((self.free_cpus, req.cpus), (self.free_memory_gb, req.memory_gb), (self.free_gpus, req.gpus),
                           *custom):
            if need > 0:
                n = np.minimum(n, np.floor(free / need + 1e-9).astype(np.int64))
        return np.maximum(n, 0)


_SHARED = frozenset({"row_names", "kinds"})
"""HostTable's fields about the snapshot, not per host: :meth:`HostTable.take` keeps them as they are."""


def _ge(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    return a + 1e-9 >= b


@dataclass
class PlanContext:
    """What filters and rankers may consult besides the host table; ``now``
    is when the work would start (a future start for an advance reservation,
    whose host table is then what is free over its window)."""

    request: ObjectRequest
    class_spec: ClassSpec | None
    now: float
    snap: Any = None  # the Collection snapshot the hosts were read from (MIL over its rows)


@dataclass
class FilterVerdict:
    """A filter's answer: which hosts stay, and why the others went."""

    keep: np.ndarray
    code: str = ""
    reason: str = ""


class HostFilter(Protocol):
    name: str

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict: ...


class HostRanker(Protocol):
    name: str

    def key(self, ctx: PlanContext, hosts: HostTable) -> np.ndarray:
        """A sort key per host; lower ranks first."""
        ...


# --- filters -----------------------------------------------------------------


class ClassHostListFilter:
    """Legion's class_host_list: a class may name the hosts it runs on."""

    name = "class_host_list"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        patterns = ctx.class_spec.host_list if ctx.class_spec else ()
        if not patterns:
            return FilterVerdict(np.ones(len(hosts), bool))
        keep = np.array([any(fnmatch.fnmatchcase(str(n), p) for p in patterns) for n in hosts.names], bool)
        return FilterVerdict(keep, codes.CLASS_HOST_LIST, f"not on class {ctx.class_spec.name}'s host list {list(patterns)}")


class TotalCapacityFilter:
    """Hosts too small for one instance even when empty can never take it."""

    name = "total_capacity"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        r = ctx.request
        keep = _ge(hosts.cpus, r.cpus) & _ge(hosts.memory_gb, r.memory_gb) & _ge(hosts.gpus, r.gpus)
        custom = "".join(f", {n:g} {k}" for k, n in r.custom())
        return FilterVerdict(
            keep & hosts.kinds_fit(r), codes.CAPACITY_TOTAL,
            f"too small for one instance ({r.cpus:g} cpus, {r.memory_gb:g} GB, {r.gpus} gpus{custom}) even when empty",
        )


class FreeCapacityFilter:
    """Hosts without room for one instance now (or, exclusive, not wholly free)."""

    name = "free_capacity"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        keep = hosts.slots(ctx.request) > 0
        what = "wholly free" if ctx.request.exclusive else "free for one instance"
        ahead = ctx.snap is not None and ctx.now > float(ctx.snap.now)  # a future start: the table is its window's
        return FilterVerdict(keep, codes.CAPACITY, f"not {what} {'over its window' if ahead else 'now'}")


class CalendarFilter:
    """Hosts whose calendar has a reservation starting before this work would
    end: an instance placed there now would collide with it."""

    name = "calendar"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        wall = ctx.request.walltime_s
        end = INF if wall is None else ctx.now + wall
        keep = hosts.next_event >= end
        return FilterVerdict(keep, codes.CALENDAR_BUSY, "has a reservation starting before this work would end")


class AvoidFilter:
    """Hosts the request asks to avoid (``ObjectRequest.avoid_hosts``): on a
    re-plan after every master failed, the hosts that refused it."""

    name = "avoid"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        avoid = ctx.request.avoid_hosts
        if not avoid:
            return FilterVerdict(np.ones(len(hosts), bool))
        keep = ~np.isin(hosts.names.astype(str), np.array(avoid, dtype=str))
        return FilterVerdict(keep, codes.REPLAN_AVOIDED, "refused this request in an earlier schedule; avoided on re-plan")


class DrainedFilter:
    """Hosts an administrator drained (``legionrm drain HOST --reason``): they
    finish their work and take no new work (the host itself refuses too)."""

    name = "drained"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        if ctx.snap is None:
            return FilterVerdict(np.ones(len(hosts), bool))
        keep = ctx.snap.numeric("drained", hosts.row, 0.0) == 0
        return FilterVerdict(keep, codes.HOST_DRAINED, "drained by an administrator: it takes no new work")


IMPL_ATTR = "_impl"
"""The instance argument that carries the chosen implementation's entry point
to the class object (the Scheduler sets it per placement)."""


def implementation_masks(spec: ClassSpec, snap: Any, rows: np.ndarray) -> list[np.ndarray]:
    """Per implementation of ``spec``, which of the snapshot ``rows`` it fits."""
    return [snap.mask(f'$kind == "host" and ({impl.mil()})')[rows] for impl in spec.implementations]


class ImplementationFilter:
    """A class that lists implementations runs only on hosts one of them fits
    (architecture, OS, requirements); a class with none runs anywhere."""

    name = "implementation"

    def apply(self, ctx: PlanContext, hosts: HostTable) -> FilterVerdict:
        spec = ctx.class_spec
        if spec is None or not spec.implementations or ctx.snap is None:
            return FilterVerdict(np.ones(len(hosts), bool))
        keep = np.logical_or.reduce(implementation_masks(spec, ctx.snap, hosts.row))
        kinds = ", ".join(f"{i.arch}/{i.os}" for i in spec.implementations)
        return FilterVerdict(keep, codes.CLASS_NO_IMPLEMENTATION, f"class {spec.name} has no implementation for it ({kinds})")


# --- rankers -------------------------------------------------------------------


class PlacementRanker:
    """pack: the host with the least free cpus that fits first (best fit, so
    big hosts stay whole); otherwise the most free first, so work spreads."""

    name = "placement"

    def key(self, ctx: PlanContext, hosts: HostTable) -> np.ndarray:
        return hosts.free_cpus if ctx.request.placement == "pack" else -hosts.free_cpus


class UserRanker:
    """The request's own ``rank`` (HTCondor's Rank): a MIL expression over
    each host's attributes, higher first; undefined counts as 0.  Without a
    rank every host ties and the planner's rankers decide."""

    name = "rank"

    def key(self, ctx: PlanContext, hosts: HostTable) -> np.ndarray:
        if ctx.request.rank is None or ctx.snap is None:
            return np.zeros(len(hosts))
        return -ctx.snap.score(ctx.request.rank, hosts.row)


class ScarceRanker:
    """Hosts with GPUs last for work that needs none, so the accelerators stay
    free for the work that does (a CPU job on a GPU host can block a GPU job
    for its whole walltime)."""

    name = "scarce"

    def key(self, ctx: PlanContext, hosts: HostTable) -> np.ndarray:
        if ctx.request.gpus > 0:
            return np.zeros(len(hosts))
        return (hosts.gpus > 0).astype(float)


class RiskRanker:
    """Hosts likely to veto (owner policies, high load) last."""

    name = "risk"

    def key(self, ctx: PlanContext, hosts: HostTable) -> np.ndarray:
        return hosts.risk


class LoadRanker:
    name = "load"

    def key(self, ctx: PlanContext, hosts: HostTable) -> np.ndarray:
        return hosts.load


# Filters run cheapest and most decisive first: the host list, the class's
# implementations and total capacity never change, so a host they refuse is refused for good and the
# explanation says so before "busy now" reasons; the calendar last, as it
# only matters for hosts that have room now; ``avoid`` after them all, so a
# host refused for what it is or holds says so, not "avoided" (it acts only
# on a re-plan after every master failed).  A drained host is out first: nothing else about it matters now.
DEFAULT_FILTERS: tuple[HostFilter, ...] = (
    DrainedFilter(), ClassHostListFilter(), ImplementationFilter(), TotalCapacityFilter(), FreeCapacityFilter(), CalendarFilter(),
    AvoidFilter(),
)
# Rankers in priority order: the user's own rank first (what the user prefers
# among hosts that fit comes before the planner's preferences, as in HTCondor),
# then scarce hosts (GPUs the work does not need) last,
# then the placement policy (it is what the user asked for), then the risk of a veto (a veto costs a negotiation round, and
# the planner's delta schedules cover the riskiest mappings first), then load;
# the host name breaks ties.
DEFAULT_RANKERS: tuple[HostRanker, ...] = (
    UserRanker(), ScarceRanker(), PlacementRanker(), RiskRanker(), LoadRanker(),
)


@dataclass
class FilterOutcome:
    """The hosts that passed, and per filter the hosts it dropped, as their
    snapshot rows (their names are read only when someone asks why)."""

    hosts: HostTable
    drops: list[tuple[np.ndarray, Refusal]] = field(default_factory=list)  # (snapshot rows, the refusal)

    def refused(self) -> Iterator[tuple[np.ndarray, Refusal]]:
        """Per filter that dropped hosts, in order: their names and its refusal."""
        for rows, refusal in self.drops:
            yield self.hosts.row_names[rows], refusal

    def why(self, name: str) -> Refusal | None:
        """The first filter's refusal of ``name`` (None: it passed or was never a candidate)."""
        for names, refusal in self.refused():
            if name in names:
                return refusal
        return None


def run_filters(ctx: PlanContext, hosts: HostTable, filters: tuple[HostFilter, ...]) -> FilterOutcome:
    """Apply ``filters`` in order; each host is charged to the first that refused it."""
    out = FilterOutcome(hosts)
    for f in filters:
        v = f.apply(ctx, out.hosts)
        if not v.keep.all():
            out.drops.append((out.hosts.row[~v.keep], Refusal(code=v.code, reason=v.reason, by=f.name)))
            out.hosts = out.hosts.take(np.flatnonzero(v.keep))
    return out


def rank(
    ctx: PlanContext, hosts: HostTable, rankers: tuple[HostRanker, ...], *, in_name_order: bool = False
) -> HostTable:
    """Hosts in rank order: rankers in priority order, name last for stability
    (``in_name_order``: the caller vouches ``hosts`` are in name order, so
    their positions break ties without comparing names)."""
    if len(hosts) == 0:
        return hosts
    # (a stable sort: a key the same for every host changes no order, nor does the position last)
    keys = [] if in_name_order else [hosts.names.astype(str)]
    keys += [k for k in (r.key(ctx, hosts) for r in reversed(rankers)) if not (k == k[0]).all()]
    return hosts.take(np.lexsort(keys)) if keys else hosts
