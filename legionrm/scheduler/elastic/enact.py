"""Carrying the elastic cycle's decisions out on the cluster: stops through
the hosts (:class:`HostStopper`), and growth through the Enactor with the
repair of what a host refused (:class:`JobGrowth`, step 5 of
:mod:`legionrm.scheduler.elastic.cycle`).

Growth of one job in one cycle:

1. every process the core placed on a host that refuses the caller by its
   access policy, or that refused this job recently, is moved first to the
   best-fitting host with room in the core (the refusing host is kept when no
   other has room: an owner may change its mind; a host whose access policy
   refuses the caller is never asked);
2. one enactment holds all the job's new processes; when it fails, the
   processes that were not refused are enacted again without the refused
   ones (a refusal never sinks the others);
3. each refused process gets its own enactment: a master on the best-fitting
   other host with room, delta schedules onto the next ones; success moves
   the share to that host in the core;
4. a process that could not start anywhere is dropped from the core
   (``confirm_exit``): the next cycle places it again.

Pure Python; the core, enactor and snapshot are passed in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from legionrm.collection.view import CollectionSnapshot
from legionrm.errors import LegionError, SchedulingError
from legionrm import codes
from legionrm.models import (
    DeltaSchedule,
    ElasticChange,
    ElasticJobRequest,
    EnactRequest,
    EnactResult,
    Holder,
    InstanceRef,
    MasterSchedule,
    Placement,
    PlacementFailure,
    Refusal,
    Resources,
)
from legionrm.scheduler.fairshare import DuccCore, ShareEvent
from legionrm.scheduler.ports import EnactorPort

log = logging.getLogger(__name__)


class HostStopper:
    """The in-process stopper: stop on the instance's host (a HostObject, or a
    HostGroup carrying it), then tell the class object that created it.

    ``hosts`` maps (or resolves) a host name to its carrier; ``classes`` maps
    a class name to its ClassObject.  A host nobody carries is gone, and its
    instances with it.  A host that raised (``resource.error``) raises here,
    so the stop is retried.
    """

    def __init__(self, hosts: Mapping[str, Any] | Callable[[str], Any], classes: Mapping[str, Any] | None = None) -> None:
        self._hosts = hosts
        self._classes = dict(classes or {})

    def stop(self, instance: InstanceRef, reason: str) -> object:
        port = self._hosts(instance.host) if callable(self._hosts) else self._hosts.get(instance.host)
        answer: object = False
        try:
            if port is not None:
                answer = port.stop_object(instance.instance_id, reason)
                if isinstance(answer, Refusal) and answer.code == codes.RESOURCE_ERROR:
                    raise SchedulingError(f"stopping {instance.instance_id} on {instance.host}: {answer.reason}")
        finally:  # the class follows the caller's books even when the host is gone (its instances with it)
            cls = self._classes.get(instance.class_name)
            if cls is not None:
                cls.instance_stopped(instance.instance_id)
        return answer


class Refusals:
    """(job, host) pairs where the host refused the job, avoided for ``memory_s``."""

    def __init__(self, memory_s: float) -> None:
        self.memory_s = memory_s
        self._until: dict[tuple[str, str], float] = {}

    def add(self, job: str, host: str, now: float) -> None:
        if host:
            self._until[(job, host)] = now + self.memory_s

    def avoided(self, job: str, host: str, now: float) -> bool:
        return self._until.get((job, host), -1.0) > now

    def prune(self, now: float) -> None:
        self._until = {k: t for k, t in self._until.items() if t > now}

    def __len__(self) -> int:
        return len(self._until)


def move_share(core: DuccCore, job: str, sid: int, host: str) -> None:
    """Put a pending (not yet started) share on another machine in the core.

    Uses ``DuccCore.move_share`` when the core has one; otherwise moves the
    share between the machines' share tables itself, checking what the core
    would: the share is pending, the target is schedulable and has room.
    Idempotent; raises SchedulingError when the move is not allowed."""
    mover = getattr(core, "move_share", None)
    if mover is not None:
        mover(sid, host)
        return
    s = core.jobs[job].shares.get(sid)
    if s is None or s.machine == host:
        return
    dst = core.machines.get(host)
    if not s.pending or s.evicted or dst is None or not dst.schedulable or dst.free() < s.order:
        raise SchedulingError(f"cannot move share {sid} of {job} from {s.machine} to {host}")
    core.machines[s.machine].shares.pop(sid, None)
    s.machine = host
    dst.shares[sid] = s


def alternatives(
    core: DuccCore, ducc_class: str, order: int, ok_hosts: set[str], exclude: set[str],
    avoided: Callable[[str], bool], limit: int,
) -> list[str]:
    """Other hosts for one process of ``order``, best fit (least room) first,
    then by name: schedulable, in the class's pool or below it (where
    fair-share work may squat), accepting the caller, with room in the core,
    not ``exclude``d nor ``avoided``.  A cold path (refusals only)."""
    pools = {p.name for p in core.tree.pools[core.classes.classes[ducc_class].nodepool].subtree()}
    cands = [
        (m.free(), m.name)
        for m in core.machines.values()
        if m.schedulable and m.nodepool in pools and m.name in ok_hosts and m.name not in exclude
        and m.free() >= order and not avoided(m.name)
    ]
    return [name for _, name in sorted(cands)[:limit]]


def change(job: str, share: int, inst: InstanceRef, kind: str, reason: str) -> ElasticChange:
    return ElasticChange(job_id=job, user=inst.user, share=share, host=inst.host, change=kind,
                         reason=reason, instance_id=inst.instance_id)


@dataclass
class GrowthContext:
    """What growth needs from its cycle, for one cycle."""

    core: DuccCore
    enactor: EnactorPort
    name: str  # the enactor name in holders
    request_prefix: str  # unique per cycle, so request ids never repeat
    token_timeout_s: float
    max_alternatives: int
    refusals: Refusals
    snap: CollectionSnapshot
    now: float
    track: Callable[[str, int, InstanceRef], None]  # (job, share, instance) started
    grew: list[ElasticChange]
    refused: list[ElasticChange]


class JobGrowth:
    """The growth of one job in one cycle (see the module doc)."""

    def __init__(self, ctx: GrowthContext, request: ElasticJobRequest, ducc_class: str, ok_hosts: set[str]) -> None:
        self.ctx = ctx
        self.req = request
        self.jid = request.job_id
        self.ducc_class = ducc_class
        self.ok_hosts = ok_hosts
        self.rounds = 0

    def run(self, events: list[ShareEvent]) -> None:
        """Start the processes the core allocated to this job this cycle (``events``)."""
        ctx = self.ctx
        plan: dict[str, tuple[int, str, int]] = {}  # key -> (share, host, order)
        for ev in events:
            host = ev.machine
            if host not in self.ok_hosts or ctx.refusals.avoided(self.jid, host, ctx.now):
                alts = self._alternatives(ev.order, {host}, 1)
                if alts:
                    move_share(ctx.core, self.jid, ev.share, alts[0])
                    host = alts[0]
                elif host not in self.ok_hosts:
                    self._drop(ev.share, host, codes.ACCESS_DENIED, f"{host} does not accept user {self.req.user}")
                    continue
            plan[f"{self.jid}#{ev.share}"] = (ev.share, host, ev.order)
        pending = dict(plan)
        failed: dict[str, list[PlacementFailure]] = {}
        while pending:
            res, error = self._enact({k: v[1] for k, v in pending.items()})
            if res is None:  # the enactor itself failed: no repair this cycle
                for sid, host, _ in pending.values():
                    self._drop(sid, host, codes.ENACTMENT_ERROR, error)
                return
            if res.ok:
                self._started(res, pending)
                break
            fails = [f for a in res.attempts for f in a.failures]
            keys = {f.key for f in fails} & pending.keys()
            if not keys:  # refused as a whole (approval declined, ...): every key failed
                keys = set(pending)
            for k in keys:
                failed[k] = [f for f in fails if f.key in (k, "*")]
                del pending[k]
        for k, fails in failed.items():
            self._repair(k, *plan[k], fails)

    def _alternatives(self, order: int, exclude: set[str], limit: int) -> list[str]:
        ctx = self.ctx
        return alternatives(ctx.core, self.ducc_class, order, self.ok_hosts, exclude,
                            lambda h: ctx.refusals.avoided(self.jid, h, ctx.now), limit)

    def _repair(self, key: str, sid: int, host: str, order: int, fails: list[PlacementFailure]) -> None:
        ctx = self.ctx
        for f in fails:
            ctx.refusals.add(self.jid, f.resource or host, ctx.now)
        alts = self._alternatives(order, {host} | {f.resource for f in fails}, ctx.max_alternatives)
        error = ""
        if alts:
            res, error = self._enact({key: alts[0]}, deltas=alts[1:])
            if res is not None and res.ok and res.instances:
                move_share(ctx.core, self.jid, sid, res.instances[0].host)
                self._started(res, {key: (sid, host, order)}, moved_from=host, why=fails[0].code if fails else "")
                return
            if res is not None:
                more = [f for a in res.attempts for f in a.failures]
                for f in more:
                    ctx.refusals.add(self.jid, f.resource, ctx.now)
                fails = fails + more
        first = fails[0] if fails else PlacementFailure(key=key, resource=host, code=codes.ENACTMENT_ERROR, reason=error)
        self._drop(sid, host, first.code, f"{first.resource or host}: {first.reason}")

    def _enact(self, mapping: dict[str, str], deltas: Sequence[str] = ()) -> tuple[EnactResult | None, str]:
        """One enactment of ``mapping`` (key -> host); ``deltas`` are other hosts
        for a single-key mapping.  Returns (result, "") or (None, the error)."""
        ctx, req = self.ctx, self.req
        self.rounds += 1
        key = next(iter(mapping))
        request = EnactRequest(
            request_id=f"{ctx.request_prefix}/{self.jid}/{self.rounds}",
            holder=Holder(user=req.user, class_name=req.class_name, enactor=ctx.name, groups=req.groups),
            masters=(MasterSchedule(
                placements=tuple(self._placement(k, h) for k, h in mapping.items()),
                deltas=tuple(DeltaSchedule(placements=(self._placement(key, h),)) for h in deltas),
            ),),
            timeout_s=ctx.token_timeout_s,
            args={req.class_name: dict(req.args)} if req.args else {},
        )
        try:
            return ctx.enactor.enact_schedule(request), ""
        except LegionError as exc:
            log.warning("cycle %s: enacting %s failed: %s", ctx.name, request.request_id, exc)
            return None, f"{type(exc).__name__}: {exc}"

    def _placement(self, key: str, host: str) -> Placement:
        snap, req = self.ctx.snap, self.req
        group = None
        if snap.table.index(host) is not None:
            g = snap.record(host).attributes.get("host_group")  # routes the batched call
            group = str(g) if g is not None else None
        return Placement(
            key=key, class_name=req.class_name, host=host, group=group,
            resources=Resources(cpus=req.cpus, memory_gb=req.memory_gb, gpus=req.gpus),
        )

    def _started(self, res: EnactResult, keys: dict[str, tuple[int, str, int]], moved_from: str = "", why: str = "") -> None:
        key_of = {t.token_id: k for k, t in res.host_tokens.items()}
        seen = set()
        for inst in res.instances:
            k = key_of.get(inst.token_id)
            if k not in keys:
                continue
            sid = keys[k][0]
            seen.add(k)
            self.ctx.track(self.jid, sid, inst)
            reason = "below its fair share"
            if moved_from and moved_from != inst.host:
                reason += f"; moved from {moved_from} ({why})"
            self.ctx.grew.append(change(self.jid, sid, inst, "grew", reason))
        for k in keys.keys() - seen:  # reported ok without an instance: treat as not started
            sid, host, _ = keys[k]
            self._drop(sid, host, codes.START_FAILED, "no instance reported")

    def _drop(self, sid: int, host: str, code: str, reason: str) -> None:
        """The process did not start: the core forgets it; the next cycle places it again."""
        self.ctx.core.confirm_exit(sid)
        self.ctx.refused.append(ElasticChange(
            job_id=self.jid, user=self.req.user, share=sid, host=host, change="refused", code=code,
            reason=f"{reason}; placed again next cycle",
        ))
