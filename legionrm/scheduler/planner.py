"""The planner: one scheduling request -> ranked master schedules with deltas.

One pipeline over one Collection snapshot (never re-read half way):

1. candidates: the Collection query ``$kind == "host" and (constraint)`` as the
   caller, so only resources that accept the caller appear;
2. feasibility filters (:mod:`legionrm.scheduler.planning.pipeline`): class host list,
   total capacity, free capacity, calendar;
3. rankers: scarce hosts (GPUs not needed) last, the placement policy, risk
   of a veto, load, then name;
4. what of: instances onto ranked hosts by the placement mode
   (pack / scatter / vscatter / free), object requests one after another so
   the second sees what the first took;
5. masters: master *k* demotes the hosts earlier masters used, so masters are
   real alternatives; each master carries delta schedules, one per host it
   uses, most likely to fail first, moving that host's instances to spares,
   then further alternatives per host while unused spares last (``max_deltas``).

A request that cannot be planned fails per object request, keyed by its
placements (``Worker#1..3``) and naming what refused (a filter, ``query``,
``what_of``, ``planner``); :meth:`Plan.why` then says so for every host.

Vaults are paired with hosts by the vault's ``serves`` patterns.  The planner
only proposes: hosts' calendars are the truth, checked again when the
Enactor reserves, so several planners can run at once without double booking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from legionrm import codes
from legionrm.scheduler.planning.window import ahead_of, window_table
from legionrm.collection.view import CollectionSnapshot
from legionrm.models import (
    ClassSpec,
    Identity,
    MasterSchedule,
    ObjectRequest,
    PlacementFailure,
    Refusal,
    Resources,
    ScheduleSuite,
    SchedulingRequest,
)
from legionrm.scheduler.planning.declared import DeclaredHosts
from legionrm.scheduler.planning.deltas import make_deltas
from legionrm.scheduler.planning.drafts import Columns, LazyMasters, MasterDraft
from legionrm.scheduler.planning.engine_feed import EngineFeed
from legionrm.scheduler.planning.holds import Hold, held_table
from legionrm.scheduler.planning.pipeline import (
    INF,
    DEFAULT_FILTERS,
    DEFAULT_RANKERS,
    FilterOutcome,
    HostFilter,
    HostRanker,
    HostTable,
    PlanContext,
    rank,
    run_filters,
)
from legionrm.scheduler.planning.enginepick import engine_applies, engine_picks
from legionrm.scheduler.planning.whatof import assign  # noqa: F401  (what of, imported from here by callers)
from legionrm.scheduler.planning.whatof import Ordered, Rows, Taken, assign_slots
from legionrm.scheduler.planning.snapmasks import accepts_mask, query_mask, vaults_of
from legionrm.scheduler.planning.snaptables import (
    VaultTable,
    base_table,
)

QUERY_FILTER = "query"
PLANNER = "planner"  # what refuses a request before any host is looked at
WHAT_OF = "what_of"  # what refuses when feasible hosts cannot hold every instance


@dataclass
class ObjectPlan:
    """How one object request went through the pipeline (for explanations)."""

    request: ObjectRequest
    keys: list[str]
    outcome: FilterOutcome  # the query's refusals first, then each filter's
    ranked: HostTable | None = None
    accepting: np.ndarray | None = None  # snapshot rows the query let through (before the filters)
    snap: CollectionSnapshot | None = None  # what it was planned on (the user's rank is read from it)


@dataclass
class Plan:
    """The suite of schedules for one request (what ``make_schedules`` returns)."""

    request_id: str
    masters: Sequence[MasterSchedule]  # (the planner's: masters made models when read, drafts.LazyMasters)
    failures: list[PlacementFailure]
    objects: list[ObjectPlan]

    @property
    def ok(self) -> bool:
        return bool(self.masters)

    def suite(self) -> ScheduleSuite:
        """The wire form of this plan."""
        refused = tuple(
            PlacementFailure(key=span(op.keys, op.request.class_name), resource=str(host), code=r.code,
                             reason=f"{r.by}: {r.reason}", stage="plan")
            for op in self.objects for names, r in op.outcome.refused() for host in names)
        return ScheduleSuite(request_id=self.request_id, masters=tuple(self.masters), failures=tuple(self.failures),
                             refused=refused)

    def why(self, host: str) -> str:
        """Why ``host`` was or was not used, by the name of what decided.

        A host no filter refused is "feasible"; the answer then says what
        became of it: used by master 1, kept as an alternative (a later
        master, a delta), passed over for better-ranked hosts, or, when there
        is no schedule at all, which placements failed and by what."""
        used = [p.key for p in self.masters[0].placements if p.host == host] if self.masters else []
        if used:
            return f"{host}: used by master 1 for {', '.join(used)}"
        if not self.objects:  # refused before the pipeline ran (an unknown class)
            return "\n".join(f"{host}: not considered: {f.key} refused by {f.resource} ({f.code}): {f.reason}"
                             for f in self.failures)
        lines = []
        for op in self.objects:
            label = f"{op.request.class_name} x{op.request.count}"
            ref = op.outcome.why(host)
            if ref is not None:
                lines.append(f"{host}: not used for {label}: refused by {ref.by} ({ref.code}): {ref.reason}")
            elif op.ranked is not None and host in set(op.ranked.names.tolist()):
                pos = op.ranked.names.tolist().index(host) + 1
                lines.append(f"{host}: feasible for {label}, ranked {pos} of {len(op.ranked)}"
                             f"{self._rank(op, pos - 1)}; {self._fate(host)}")
            else:
                lines.append(f"{host}: not a known, available host")
        return "\n".join(lines)

    @staticmethod
    def _rank(op: ObjectPlan, at: int) -> str:
        """`` (rank V)``: the user's rank of the host at position ``at`` of
        ``op``'s ranking ('' when the request gives no rank)."""
        if op.request.rank is None or op.snap is None or op.ranked is None:
            return ""
        value = float(op.snap.score(op.request.rank, op.ranked.row[at:at + 1])[0])
        return f" (rank {value:g} by {op.request.rank!r})"

    def _fate(self, host: str) -> str:
        """What became of a feasible host that master 1 does not use."""
        if not self.masters:
            failed = "; ".join(f"{f.key} refused by {f.resource or '-'} ({f.code})" for f in self.failures)
            return f"but no schedule was made: {failed}"
        alts = []
        for mi, m in enumerate(self.masters):
            keys = [p.key for p in m.placements if p.host == host]
            if mi and keys:
                alts.append(f"used by master {mi + 1} for {', '.join(keys)}")
            for di, d in enumerate(m.deltas):
                keys = [p.key for p in d.placements if p.host == host]
                if keys:
                    alts.append(f"the spare of delta {di + 1} of master {mi + 1} for {', '.join(keys)}")
        if alts:
            return "better-ranked hosts sufficed; an alternative: " + "; ".join(alts)
        return "better-ranked hosts sufficed"


class Planner:
    """Builds schedules; pure (no Ray), deterministic for a given snapshot."""

    batched_deltas = True
    """The first round of deltas batched where it applies (planning/deltas.py); False: host by host
    (the reference the tests compare it with: the same deltas either way)."""

    def __init__(
        self,
        classes: Mapping[str, ClassSpec] | None = None,
        *,
        filters: tuple[HostFilter, ...] = DEFAULT_FILTERS,
        rankers: tuple[HostRanker, ...] = DEFAULT_RANKERS,
        max_masters: int = 3,
        max_deltas: int = 8,
        clock: Callable[[], float] = time.time,
        declared: DeclaredHosts = DeclaredHosts(),
    ) -> None:
        self.classes = dict(classes or {})
        self.declared = declared
        """The cluster file's hosts: one the Collection does not hold (not joined since a
        restart) may yet take a request every host it holds refuses for what it is."""
        self.filters = filters
        self.rankers = rankers
        self.max_masters = max_masters
        self.max_deltas = max_deltas
        self._clock = clock
        self.engine = EngineFeed()
        """The placement engine fed from snapshots: says never / not now
        (with the earliest start) for what the pipeline cannot place."""

    # --- Legion's interface ----------------------------------------------

    def candidates(self, obj: ObjectRequest, caller: Identity, snap: CollectionSnapshot) -> list[str]:
        """getCandidatePlacements: feasible hosts for one instance, best first
        (none for a class the planner does not know, when it knows its classes)."""
        if self._unknown_class(obj) is not None:
            return []
        op = self._object_plan(obj, caller, snap, base_table(snap), [])
        return [str(n) for n in op.ranked.names] if op.ranked is not None else []

    def make_schedules(self, request: SchedulingRequest, snap: CollectionSnapshot,
                       holds: Sequence[Hold] = ()) -> Plan:
        """The ranked master schedules for ``request`` (not enacted).  Pure.
        ``holds``: the cpus the queue keeps for reserved starts
        (:func:`~legionrm.scheduler.planning.holds.held_table`).

        A planner built with its classes refuses, before any host is looked
        at, every object request whose class is not one of them
        (``class.unknown``, stage ``plan``, by ``planner``).
        """
        unknown = [f for f in map(self._unknown_class, request.objects) if f is not None]
        if unknown:
            return Plan(request.request_id, [], unknown, [])
        base = base_table(snap)
        vaults = vaults_of(snap)  # (kept while the snapshot's table is the same, as its masks)
        keys = keys_of(request)
        ahead = ahead_of(request, float(snap.now))  # a future start: hosts free over its window, not now
        objects = [self._object_plan(o, request.identity, snap, base, k, ahead, holds)
                   for o, k in zip(request.objects, keys)]
        failures: list[PlacementFailure] = []
        for op in objects:
            if op.ranked is None or len(op.ranked) == 0:
                failures.append(_no_hosts(op, request.identity, self.declared))
        if failures:
            return Plan(request.request_id, [], failures, objects)

        masters: list[MasterDraft] = []
        rows = Rows(snap, base)
        demoted = np.zeros(rows.n, dtype=bool)
        seen: set[tuple] = set()
        for _ in range(self.max_masters):
            made = self._master(objects, rows, vaults, demoted, request.identity, snap)
            if isinstance(made, PlacementFailure):
                if not masters:  # the engine's verdict is about now
                    failures.append(self._engine_verdict(made, objects, snap, base) if ahead is None else made)
                break
            master, at = made
            sig = tuple(at.tolist())  # every master lists the same keys in the same order: rows say it all
            if sig in seen:
                break
            seen.add(sig)
            masters.append(master)
            demoted[at] = True
        return Plan(request.request_id, LazyMasters(masters), failures, objects)

    # --- steps --------------------------------------------------------------

    def _engine_verdict(
        self, failure: PlacementFailure, objects: list[ObjectPlan], snap: CollectionSnapshot, base: HostTable
    ) -> PlacementFailure:
        """A what-of failure with the placement engine's verdict on the failing
        object request over the hosts its query accepted: "never" makes the
        failure lasting; "not now" adds the earliest start when the calendar
        has one.  Other failures (a vault, a refused host) pass unchanged."""
        if failure.resource != WHAT_OF:
            return failure
        op = next((o for o in objects if span(o.keys, o.request.class_name) == failure.key), None)
        if op is None or op.accepting is None:
            return failure
        ans = self.engine.place(op.request, snap, op.accepting, base)
        if ans.runs:
            return failure
        when = f"; earliest start {ans.earliest_start:g}" if ans.earliest_start is not None else ""
        return failure.model_copy(update={
            "lasting": ans.status == "never",
            "reason": f"{failure.reason}; the placement engine ({ans.path}): {ans.comment}{when}",
        })

    def _unknown_class(self, obj: ObjectRequest) -> PlacementFailure | None:
        """``class.unknown`` when the planner knows its classes and not this one."""
        if not self.classes or obj.class_name in self.classes:
            return None
        return PlacementFailure(
            key=f"{obj.class_name}#*", resource=PLANNER, code=codes.CLASS_UNKNOWN, stage="plan",
            reason=f"class {obj.class_name!r} is not a configured class (known: {', '.join(sorted(self.classes))})",
        )

    def _object_plan(
        self, obj: ObjectRequest, caller: Identity, snap: CollectionSnapshot, base: HostTable, keys: list[str],
        ahead: float | None = None, holds: Sequence[Hold] = (),
    ) -> ObjectPlan:
        ident = Identity.trusted(user=caller.user, class_name=obj.class_name, groups=caller.groups)  # (valid values)
        text = f'$kind == "host" and ({obj.constraint})'
        matching = query_mask(snap, text)[base.row]
        accepting = matching & accepts_mask(snap, ident)[base.row]  # the query once, then the access lists
        query_drops = [
            (base.row[~matching], Refusal(code=codes.QUERY_NO_MATCH, reason=f"does not satisfy {obj.constraint!r}",
                                            by=QUERY_FILTER)),
            (base.row[matching & ~accepting], Refusal(
                code=codes.ACCESS_DENIED, reason=f"does not accept user {caller.user!r} with class {obj.class_name!r}",
                by=QUERY_FILTER)),
        ]
        ctx = PlanContext(obj, self.classes.get(obj.class_name), float(snap.now) if ahead is None else ahead, snap)
        table = base if ahead is None else window_table(base, snap, ahead, ahead + (obj.walltime_s or INF))
        table = held_table(table, holds, ctx.now + (obj.walltime_s or INF))  # reserved starts are not delayed
        outcome = run_filters(ctx, table.take(np.flatnonzero(accepting)), self.filters)
        outcome.drops[:0] = [d for d in query_drops if len(d[0])]
        # the base table is in name order, and the filters keep the order
        ranked = rank(ctx, outcome.hosts, self.rankers, in_name_order=True)
        return ObjectPlan(obj, keys, outcome, ranked, base.row[accepting], snap)

    def _master(
        self,
        objects: list[ObjectPlan],
        rows: Rows,
        vaults: VaultTable,
        demoted: np.ndarray,
        caller: Identity,
        snap: CollectionSnapshot,
    ) -> tuple[MasterDraft, np.ndarray] | PlacementFailure:
        """One master schedule (its placements as columns, made models when
        read) and the snapshot rows of its placements (in placement order),
        or the failure that stopped it."""
        used = Taken(rows.n)
        taken = np.zeros(rows.n, dtype=bool)
        columns: list[Columns] = []
        placed_rows: list[np.ndarray] = []
        spares_by_obj: list[Ordered] = []
        slots_by_obj: list[np.ndarray | None] = []  # each one's hosts' slots, where the master worked them out
        vault_used: dict[str, float] = {}
        score = 0
        any_demoted = bool(demoted.any())
        for op in objects:
            assert op.ranked is not None  # make_schedules drops plans without hosts
            hosts = used.off(op.ranked)
            # hosts that earlier masters used go last, keeping rank order otherwise
            order = np.argsort(demoted[hosts.row], kind="stable") if any_demoted else None
            if placed_rows and (op.request.exclusive or op.request.placement in ("scatter", "vscatter")):
                free = ~taken[hosts.row]
                order = np.flatnonzero(free) if order is None else order[free[order]]
            hosts = Ordered(hosts, order)  # columns taken in that order only where read
            # the engine's choice where its bucket path applies (hosts earlier masters used avoided,
            # so masters stay alternatives); otherwise, or when it cannot, the pipeline's
            picks = engine_picks(self.engine, op.request, hosts, demoted if any_demoted else None, snap,
                                 rows.base) if engine_applies(op.request) else None
            slots = None
            if picks is None:
                slots = hosts.slots(op.request)
                picks = assign_slots(op.request, slots, op.request.count)
            if picks is None:
                return PlacementFailure(
                    key=span(op.keys, op.request.class_name), resource=WHAT_OF, code=codes.CAPACITY,
                    reason=f"{len(hosts)} feasible hosts cannot hold {op.request.count} instances "
                    f"({op.request.placement})", stage="plan",
                )
            res = _resources_of(op.request)
            picked_rows = hosts.row[picks] if picks else np.zeros(0, dtype=np.int64)
            names = hosts.names_at(picks)
            chosen: list[str | None] = [None] * len(names)
            if vaults.names or op.request.storage_gb:  # no vaults and no storage: every pick is None
                for j, (key, host) in enumerate(zip(op.keys, names)):
                    vault = vaults.pick(host, op.request, vault_used, snap, caller)
                    if isinstance(vault, Refusal):
                        return PlacementFailure(key=key, resource=host, code=vault.code, reason=vault.reason,
                                                stage="plan")
                    chosen[j] = vault
            columns.append(Columns(op.request.class_name, res, op.keys, names, chosen,
                                   rows.groups_at(picked_rows)))
            placed_rows.append(picked_rows)
            if op is not objects[-1]:  # what it took, for the object requests after it
                used.add(picked_rows, op.request)
            taken[picked_rows] = True
            score += int(np.count_nonzero(demoted[picked_rows]))
            spares_by_obj.append(hosts)
            slots_by_obj.append(slots)
        at = np.concatenate(placed_rows) if placed_rows else np.zeros(0, np.int64)
        deltas = make_deltas(self.max_deltas, objects, columns, at, spares_by_obj, vaults, caller, snap, rows,
                             batched=self.batched_deltas, slots=slots_by_obj)
        return MasterDraft(tuple(columns), tuple(deltas), float(score)), at

def _resources_of(req: ObjectRequest) -> Resources:
    return Resources.model_construct(cpus=float(req.cpus), memory_gb=float(req.memory_gb), gpus=int(req.gpus),
                                     storage_gb=float(req.storage_gb), exclusive=bool(req.exclusive),
                                     custom=req.custom())


def keys_of(request: SchedulingRequest) -> list[list[str]]:
    """Placement keys ``Class#n``, numbered per class across the request."""
    counters: dict[str, int] = {}
    out = []
    for o in request.objects:
        start = counters.get(o.class_name, 0)
        out.append([f"{o.class_name}#{start + i}" for i in range(o.count)])
        counters[o.class_name] = start + o.count
    return out


def span(keys: list[str], class_name: str) -> str:
    """The placement keys of one object request in a failure: ``Worker#1``,
    or ``Worker#1..3`` for several (``Worker#*`` when there are none)."""
    if not keys:
        return f"{class_name}#*"
    return keys[0] if len(keys) == 1 else f"{keys[0]}..{keys[-1].rsplit('#', 1)[-1]}"


LASTING = frozenset({codes.QUERY_NO_MATCH, codes.ACCESS_DENIED, codes.CLASS_HOST_LIST, codes.CAPACITY_TOTAL,
                     codes.CLASS_NO_IMPLEMENTATION})
"""Refusals for what a host is, not for what it holds now: waiting changes none."""


def _no_hosts(op: ObjectPlan, caller: Identity, declared: DeclaredHosts = DeclaredHosts()) -> PlacementFailure:
    """A plan-stage failure naming the most common refusal among the hosts
    (among the refusals waiting can change, when there are any).  When every
    host refused for what it is, but a host that may take it is not reporting
    now (``unseen``), the failure is ``host.unreported`` and not lasting: the
    request waits for that host rather than failing while it restarts."""
    counts: dict[tuple[str, str, str], int] = {}
    for rows, r in op.outcome.drops:
        counts[(r.by, r.code, r.reason)] = counts.get((r.by, r.code, r.reason), 0) + len(rows)
    key = span(op.keys, op.request.class_name)
    if not counts:
        return PlacementFailure(key=key, resource=PLANNER, code=codes.PLACEMENT_NO_HOSTS, reason="no available hosts", stage="plan")
    lasting = all(k in LASTING for (_, k, _) in counts)
    # the failure is named for what it waits on: the most common refusal for what a host holds now,
    # when there is one (the hosts refused for what they are would refuse it whenever it ran)
    passing = {k: n for k, n in counts.items() if lasting or k[1] not in LASTING}
    (by, code, reason), n = max(passing.items(), key=lambda kv: (kv[1], kv[0]))
    summary = "; ".join(f"{c} refused by {b} ({k})" for (b, k, _), c in sorted(counts.items(), key=lambda kv: -kv[1]))
    if lasting and (waits := unseen(op, caller, declared)):
        shown = ", ".join(waits[:5]) + (f" and {len(waits) - 5} more" if len(waits) > 5 else "")
        return PlacementFailure(key=key, resource=PLANNER, code=codes.HOST_UNREPORTED, stage="plan",
                                reason=f"no reporting host can take it ({summary}); it waits for "
                                       f"{len(waits)} host(s) not reporting now that may: {shown}")
    return PlacementFailure(key=key, resource=by, code=code, lasting=lasting,
                            reason=f"no host can take it: {summary}; e.g. {reason}", stage="plan")


def unseen(op: ObjectPlan, caller: Identity, declared: DeclaredHosts = DeclaredHosts()) -> list[str]:
    """The hosts ``op`` could not judge that may yet take it, each matching its
    constraint and accepting ``caller``: those the Collection holds but are
    unavailable now (stale or varied off), by their last record, then those
    it does not hold at all (not joined since a restart), by what the cluster
    file declares of them.  Read only on a failure, never on the planning path."""
    snap = op.snap
    if snap is None:
        return []
    ident = Identity(user=caller.user, class_name=op.request.class_name, groups=caller.groups)
    text = f'$kind == "host" and ({op.request.constraint})'
    return snap.unavailable(text, ident) + declared.absent(snap, text, ident)
