"""DuccCore: the DUCC-style fair-share and nodepool scheduler as one object.

Holds the machines, the jobs and their shares, the needy list and the
configuration; every change arrives through a method, and
:meth:`DuccCore.run_cycle` runs one scheduling pass per top-level nodepool
and returns a :class:`CycleResult`.  Pure Python and numpy, no Ray.

Life of a process: a share allocated by ``run_cycle`` is *pending*; at the
start of the next cycle it is running.  An evicted share stays on its
machine until :meth:`confirm_evictions` (or :meth:`confirm_exit`) says the
process has gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from legionrm.errors import SchedulingError
from legionrm.scheduler.fairshare.classes import (
    ClassTable,
    NodepoolSpec,
    ResourceClassSpec,
    RmSettings,
    SharePolicy,
    UserSpec,
    resolve_classes,
    resolve_nodepools,
)
from legionrm.scheduler.fairshare.nodepool import NodePool, NodepoolTree, PoolTables
from legionrm.scheduler.fairshare.shares import (
    JOB_KINDS,
    Job,
    Machine,
    Share,
    job_order,
    machine_order,
)
from legionrm.scheduler.fairshare.treepass import CycleContext, schedule_tree

# What progress reports may change.  Memory (hence the order) is fixed at submit, as in DUCC.
JOB_FIELDS = ("work_items", "threads", "max_processes", "time_per_item_ms", "init_time_ms")


@dataclass(frozen=True)
class JobResult:
    order: int
    counted: int
    processes: int
    evicting: int
    cap: int
    pure_fair_share: int
    deferred: bool
    reason: str
    machines: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "order": self.order, "counted": self.counted, "processes": self.processes,
            "evicting": self.evicting, "cap": self.cap, "pure_fair_share": self.pure_fair_share,
            "deferred": self.deferred, "reason": self.reason, "machines": dict(self.machines),
        }


@dataclass(frozen=True)
class MachineResult:
    nodepool: str
    order: int
    free: int
    state: str = "up"

    def as_dict(self) -> dict[str, Any]:
        return {"nodepool": self.nodepool, "order": self.order, "free": self.free}


@dataclass(frozen=True)
class ShareEvent:
    job: str
    share: int
    machine: str
    order: int


@dataclass(frozen=True)
class Numbering:
    """Where a core's numbering stands: the next share id, the last job
    sequence number and each top-level tree's largest order (what a restarted
    core must carry on from, so no share id is handed out twice)."""

    next_share: int = 1
    seq: int = 0
    maxorder: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CycleResult:
    """What one cycle decided: per job and per machine, plus the deltas to enact."""

    cycle: int
    jobs: dict[str, JobResult]
    machines: dict[str, MachineResult]
    allocations: tuple[ShareEvent, ...] = ()
    evictions: tuple[ShareEvent, ...] = ()
    needy: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "cycle": self.cycle,
            "jobs": {k: v.as_dict() for k, v in self.jobs.items()},
            "machines": {k: v.as_dict() for k, v in self.machines.items()},
        }


class DuccCore:
    """The scheduling core.  Not thread-safe; one owner (the Scheduler actor) calls it."""

    def __init__(
        self,
        settings: RmSettings | None = None,
        nodepools: Iterable[NodepoolSpec] = (),
        classes: Iterable[ResourceClassSpec] = (),
        users: Iterable[UserSpec] = (),
    ) -> None:
        self.settings = settings or RmSettings()
        pools = resolve_nodepools(list(nodepools))
        self.tree = NodepoolTree(pools, self.settings.quantum_gb)
        self.classes: ClassTable = resolve_classes(
            list(classes), self.settings, set(self.tree.pools), default_pool=self.tree.default.name
        )
        self.users: dict[str, UserSpec] = {u.name: u for u in users}
        self.machines: dict[str, Machine] = {}
        self.jobs: dict[str, Job] = {}
        self.needy: list[str] = []
        self.cycle = 0
        self._next_share = 1
        self._seq = 0
        self._maxorder: dict[str, int] = {t.name: 1 for t in self.tree.tops}

    # --- machines -------------------------------------------------------------------

    def _pool(self, name: str | None) -> NodePool:
        if name is None:
            return self.tree.default
        if name not in self.tree.pools:
            raise SchedulingError(f"unknown nodepool {name!r}")
        return self.tree.pools[name]

    def add_machine(self, name: str, memory_gb: float, nodepool: str | None = None) -> Machine:
        """A node arrives (or re-announces itself): idempotent; a size change is applied."""
        if name in self.machines:
            self.heartbeat(name, memory_gb)
            return self.machines[name]
        pool = self._pool(nodepool)
        order = machine_order(memory_gb, pool.quantum_gb, self.settings.reserved_dram_gb)
        m = Machine(name=name, memory_gb=memory_gb, nodepool=pool.name, order=order)
        self.machines[name] = m
        pool.machines[name] = m
        pool.total_shares += order
        top = pool.top.name
        self._maxorder[top] = max(self._maxorder[top], order)
        return m

    def remove_machine(self, name: str) -> None:
        """Forget a machine; its work is purged as if it died."""
        m = self.machines.get(name)
        if m is None:
            return
        self._purge(m, keep_reservations=False)
        pool = self.tree.pools[m.nodepool]
        pool.machines.pop(name, None)
        del self.machines[name]

    def heartbeat(self, name: str, memory_gb: float | None = None) -> None:
        """Metrics from a node: resets its missed count; a dead node comes back."""
        m = self.machines[name]
        m.missed = 0
        m.dead = False
        if memory_gb is not None and memory_gb != m.memory_gb:
            pool = self.tree.pools[m.nodepool]
            pool.total_shares -= m.order
            m.memory_gb = memory_gb
            m.order = machine_order(memory_gb, pool.quantum_gb, self.settings.reserved_dram_gb)
            pool.total_shares += m.order
            top = pool.top.name
            self._maxorder[top] = max(self._maxorder[top], m.order)

    def tick(self) -> list[str]:
        """One heartbeat period passed: every node misses one; returns nodes now dead."""
        died = []
        for m in self.machines.values():
            if m.dead:
                continue
            m.missed += 1
            if m.missed >= self.settings.node_stability:
                self.node_down(m.name)
                died.append(m.name)
        return died

    def node_down(self, name: str) -> None:
        """The node is dead: all work but unmanaged reservations is purged at once."""
        m = self.machines[name]
        m.dead = True
        self._purge(m, keep_reservations=True)

    def node_up(self, name: str) -> None:
        self.heartbeat(name)

    def vary_off(self, name: str) -> None:
        """Take a node out of scheduling: its fair-share work is purged, the rest stays."""
        m = self.machines[name]
        m.varied_off = True
        for s in list(m.shares.values()):
            j = self.jobs.get(s.job)
            if j is not None and self.classes.classes[j.cls].policy is SharePolicy.FAIR_SHARE:
                self._drop_share(s)

    def vary_on(self, name: str) -> None:
        self.machines[name].varied_off = False

    def _purge(self, m: Machine, keep_reservations: bool) -> None:
        for s in list(m.shares.values()):
            j = self.jobs.get(s.job)
            if keep_reservations and j is not None and j.kind == "reservation":
                continue
            self._drop_share(s)
            if j is not None and j.kind in ("service", "managed"):
                j.completed = True
                j.reason = f"Purged: node {m.name} left"

    def _drop_share(self, s: Share) -> None:
        self.machines[s.machine].shares.pop(s.id, None)
        j = self.jobs.get(s.job)
        if j is not None:
            j.shares.pop(s.id, None)

    # --- jobs -------------------------------------------------------------------------

    def submit(
        self,
        id: str,
        user: str,
        memory_gb: float,
        cls: str | None = None,
        kind: str = "job",
        work_items: int = 0,
        threads: int = 1,
        max_processes: int | None = None,
        time_per_item_ms: float = 0.0,
        init_time_ms: float = 0.0,
        submit: float | None = None,
    ) -> Job:
        """Admit new work.  An unknown class raises; a job its class must refuse is
        kept, refused, with the reason (user not allowed, wrong kind for the policy)."""
        if id in self.jobs:
            raise SchedulingError(f"job {id!r} already exists")
        if kind not in JOB_KINDS:
            raise SchedulingError(f"unknown job kind {kind!r} (known: {', '.join(JOB_KINDS)})")
        if cls is None:
            pol = SharePolicy.RESERVE if kind == "reservation" and SharePolicy.RESERVE in self.classes.defaults else SharePolicy.FAIR_SHARE
            if pol not in self.classes.defaults:
                raise SchedulingError("no class given and no default class")
            cls = self.classes.defaults[pol]
        if cls not in self.classes.classes:
            raise SchedulingError(f"unknown class {cls!r}")
        rc = self.classes.classes[cls]
        pool = self.tree.pools[rc.nodepool]
        self._seq += 1
        j = Job(
            id=id, user=user, cls=cls, memory_gb=memory_gb, order=job_order(memory_gb, pool.quantum_gb),
            work_items=work_items, threads=max(1, threads), max_processes=max_processes,
            time_per_item_ms=time_per_item_ms or 0.0, init_time_ms=init_time_ms or 0.0, kind=kind,
            submit=float(self._seq if submit is None else submit), seq=self._seq,
        )
        if not rc.admits(user):
            j.refused, j.reason = True, f"Refused: user {user} may not use class {cls}"
        elif rc.policy is SharePolicy.FAIR_SHARE and kind != "job":
            j.refused, j.reason = True, f"Refused: a {kind} cannot run in FAIR_SHARE class {cls}"
        self.jobs[id] = j
        top = pool.top.name
        self._maxorder[top] = max(self._maxorder[top], j.order)
        return j

    def update_job(self, id: str, **fields: Any) -> Job:
        """New progress from the job (remaining work, time per item, init time ...).

        Raises SchedulingError for an unknown job field; ``threads`` is at least 1
        and ``None`` means 0 except for ``max_processes`` (None: no limit)."""
        j = self.jobs[id]
        for k in fields:
            if k not in JOB_FIELDS:
                raise SchedulingError(f"job field {k!r} cannot be updated (known: {', '.join(JOB_FIELDS)})")
        for k, v in fields.items():
            if k == "threads":
                v = max(1, int(v or 1))
            setattr(j, k, v if v is not None or k == "max_processes" else 0)
        return j

    def complete_job(self, id: str) -> None:
        """The job has finished: its processes are gone and it is forgotten."""
        j = self.jobs.pop(id, None)
        if j is None:
            return
        for s in list(j.shares.values()):
            self.machines[s.machine].shares.pop(s.id, None)
        if id in self.needy:
            self.needy.remove(id)

    remove_job = complete_job

    def confirm_exit(self, share_id: int) -> None:
        """A process has exited (an eviction done, or blacklisted work gone)."""
        for m in self.machines.values():
            if share_id in m.blacklist:
                del m.blacklist[share_id]
            s = m.shares.get(share_id)
            if s is not None:
                self._drop_share(s)
                return

    def restore_share(self, share_id: int, job: str, machine: str, investment_ms: float = 0.0) -> bool:
        """After a restart: a process of ``job`` that still runs on ``machine``
        goes back there under its old ``share_id`` (running, not pending), so
        its space is taken and the id is never handed out again.  False (and
        nothing changes) when the job or machine is unknown, the machine is not
        schedulable, has no room for the job's order, or the id is in use."""
        j, m = self.jobs.get(job), self.machines.get(machine)
        if j is None or m is None or not m.schedulable or m.free() < j.order:
            return False
        if any(share_id in x.shares or share_id in x.blacklist for x in self.machines.values()):
            return False
        s = Share(id=share_id, job=job, machine=machine, order=j.order, pending=False, initialized=not j.init_wait,
                  init_time_ms=j.init_time_ms, investment_ms=investment_ms)
        m.shares[share_id] = s
        j.shares[share_id] = s
        self._next_share = max(self._next_share, share_id + 1)
        return True

    def numbering(self) -> Numbering:
        """Where this core's numbering stands now."""
        return Numbering(self._next_share, self._seq, dict(self._maxorder))

    def resume(self, numbering: Numbering) -> None:
        """Carry on from ``numbering`` (a stored core's): share ids and job
        sequence numbers never go below it; a top-level tree this core also
        has keeps the larger of the two largest orders."""
        self._next_share = max(self._next_share, numbering.next_share)
        self._seq = max(self._seq, numbering.seq)
        for top, mo in numbering.maxorder.items():
            if top in self._maxorder:
                self._maxorder[top] = max(self._maxorder[top], mo)

    def confirm_evictions(self) -> int:
        """Every published eviction has completed; returns how many shares left."""
        gone = [s for m in self.machines.values() for s in m.shares.values() if s.evicted]
        for s in gone:
            self._drop_share(s)
        return len(gone)

    # --- the cycle ----------------------------------------------------------------------

    def _start_cycle(self) -> None:
        for j in self.jobs.values():
            if not j.refused and not j.completed:
                j.reason = ""
            for s in j.shares.values():
                s.pending = False
                if not s.evicted:
                    s.initialized = not j.init_wait
                    s.init_time_ms = j.init_time_ms

    def _share_id(self) -> int:
        n = self._next_share
        self._next_share += 1
        return n

    def run_cycle(self) -> CycleResult:
        """Schedule every top-level tree once; returns the decisions (mutates state)."""
        self.cycle += 1
        self._start_cycle()
        allocations: list[ShareEvent] = []
        evictions: list[ShareEvent] = []
        for top in self.tree.tops:
            by_class: dict[str, list[Job]] = {}
            for j in self.jobs.values():
                rc = self.classes.classes.get(j.cls)
                if rc is None or j.refused:
                    continue
                if self.tree.pools[rc.nodepool].top is top:
                    by_class.setdefault(j.cls, []).append(j)
            for lst in by_class.values():
                lst.sort(key=lambda j: j.age_key())
            ctx = CycleContext(
                settings=self.settings, classes=self.classes, top=top, pools=self.tree.pools,
                tables=PoolTables(top, self._maxorder[top.name]), jobs=self.jobs, machines=self.machines,
                jobs_by_class=by_class, users=self.users, needy=self.needy, next_share_id=self._share_id,
            )
            schedule_tree(ctx)
            owner = {s.id: s for j in self.jobs.values() for s in j.shares.values()}
            for sid in ctx.allocations:
                s = owner.get(sid)
                if s is not None:
                    allocations.append(ShareEvent(s.job, s.id, s.machine, s.order))
            for jid, sid, mname in ctx.evictions:
                s = self.machines[mname].shares.get(sid)
                evictions.append(ShareEvent(jid, sid, mname, s.order if s else 0))
        return self.result(allocations, evictions)

    def result(self, allocations: Iterable[ShareEvent] = (), evictions: Iterable[ShareEvent] = ()) -> CycleResult:
        """The current state as a CycleResult (jobs in age order, machines by name)."""
        jobs: dict[str, JobResult] = {}
        for j in sorted(self.jobs.values(), key=lambda j: j.age_key()):
            per: dict[str, int] = {}
            for s in sorted(j.shares.values(), key=lambda s: s.machine):
                if not s.evicted:
                    per[s.machine] = per.get(s.machine, 0) + 1
            jobs[j.id] = JobResult(
                order=j.order, counted=j.counted, processes=j.current(), evicting=j.evicting(), cap=j.cap,
                pure_fair_share=j.pure_fair_share, deferred=j.deferred, reason=j.reason, machines=per,
            )
        machines = {
            name: MachineResult(
                nodepool=m.nodepool, order=m.order, free=m.free(),
                state="dead" if m.dead else "off" if m.varied_off else "blacklisted" if m.blacklist else "up",
            )
            for name, m in sorted(self.machines.items())
        }
        return CycleResult(
            cycle=self.cycle, jobs=jobs, machines=machines, allocations=tuple(allocations),
            evictions=tuple(evictions), needy=tuple(self.needy),
        )
