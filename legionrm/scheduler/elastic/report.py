"""The report of one elastic cycle: :func:`cycle_report` (per job and per
user: processes held, target, cap, hosts, instances; what grew, shrank and
was refused; the hosts' states).  Pure."""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

from legionrm.models import (
    CycleReport,
    ElasticChange,
    ElasticJobStatus,
    ElasticUserTotals,
    InstanceRef,
)
from legionrm.scheduler.fairshare import CycleResult, DuccCore


def cycle_report(
    result: CycleResult, now: float, triggers: list[str], grew: list[ElasticChange], shrank: list[ElasticChange],
    refused: list[ElasticChange], t0: float, jobs_now: Mapping[str, Any], tracked: Iterable[tuple[str, InstanceRef]],
    core: DuccCore,
) -> CycleReport:
    """The report of the cycle that gave ``result``: ``jobs_now`` maps each
    admitted job id to its record (``.request``, ``.ducc_class``); ``tracked``
    lists (job, instance) for every process the cycle runs; ``t0`` is when the
    cycle began (``time.perf_counter``)."""
    mine: dict[str, list[InstanceRef]] = {}
    for owner, inst in tracked:
        mine.setdefault(owner, []).append(inst)
    jobs: dict[str, ElasticJobStatus] = {}
    users: dict[str, dict[str, float]] = {}
    for jid, job in sorted(jobs_now.items()):
        req = job.request
        insts = tuple(sorted(mine.get(jid, ()), key=lambda i: (i.host, i.instance_id)))
        hosts: dict[str, int] = {}
        for i in insts:
            hosts[i.host] = hosts.get(i.host, 0) + 1
        jr = result.jobs.get(jid)
        cj = core.jobs.get(jid)
        jobs[jid] = ElasticJobStatus(
            job_id=jid, user=req.user, class_name=req.class_name, ducc_class=job.ducc_class,
            processes=len(insts), target=jr.counted if jr else 0, evicting=cj.evicting() if cj else 0,
            cap=jr.cap if jr else 0, pure_fair_share=jr.pure_fair_share if jr else 0,
            reason=jr.reason if jr else "", memory_gb=req.memory_gb, cpus=req.cpus,
            hosts=hosts, instances=insts,
        )
        u = users.setdefault(req.user, {"jobs": 0, "processes": 0, "target": 0, "memory_gb": 0.0, "cpus": 0.0})
        u["jobs"] += 1
        u["processes"] += len(insts)
        u["target"] += jobs[jid].target
        u["memory_gb"] += len(insts) * req.memory_gb
        u["cpus"] += len(insts) * req.cpus
    return CycleReport(
        cycle=result.cycle, at=now, triggers=tuple(triggers) or ("timer",), jobs=jobs,
        users={
            n: ElasticUserTotals(user=n, jobs=int(u["jobs"]), processes=int(u["processes"]), target=int(u["target"]),
                                 memory_gb=u["memory_gb"], cpus=u["cpus"])
            for n, u in sorted(users.items())
        },
        grew=tuple(grew), shrank=tuple(shrank), refused=tuple(refused),
        hosts={n: m.state for n, m in result.machines.items()}, needy=result.needy,
        elapsed_ms=(time.perf_counter() - t0) * 1e3,
    )
