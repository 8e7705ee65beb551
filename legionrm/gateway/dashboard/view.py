"""One poll of the running system -> the JSON-able dict the dashboard draws.

Pure: no Ray, no clock of its own (``now`` comes with the poll), so the page's
content is unit-tested on plain models.  What a part of the poll could not
fetch is ``None`` and named in ``errors``; the rest of the page still shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from legionrm.models import FINAL_STATES, CycleReport, RequestInfo, ResourceRecord, SchedulerStatus
from legionrm.models.api import SchedulerRow

WAITING = ("pending", "admitted", "placing", "reserved")  # reserved: waits for its start time
"""Request states shown as the queue (not running yet, not ended)."""

ENDED = FINAL_STATES

EVENTS = 40
"""How many recent events the page lists."""


@dataclass(frozen=True)
class Poll:
    """What the server fetched in one poll; a part that failed is None and its
    error (one line) is in ``errors``."""

    now: float
    records: list[ResourceRecord] | None = None
    requests: list[RequestInfo] | None = None
    status: SchedulerStatus | None = None  # the default scheduler's
    schedulers: list[SchedulerRow] = field(default_factory=list)  # every scheduler's queue
    report: CycleReport | None = None
    enactor: dict[str, int] | None = None
    errors: list[str] = field(default_factory=list)


def _num(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def host_rows(records: list[ResourceRecord], instances: dict[str, int]) -> list[dict[str, Any]]:
    """Hosts and vaults by name: state (``off`` when unavailable), load, capacity, instances."""
    rows = []
    for r in sorted(records, key=lambda r: (r.kind != "host", r.name)):
        a = r.attributes
        state = str(a.get("state", "unknown")) if r.available else "off"
        rows.append({
            "name": r.name, "kind": r.kind, "nodepool": r.nodepool or "", "available": r.available, "state": state,
            "load": round(min(max(_num(a.get("load")), 0.0), 1.0), 3),
            "cpus": _num(a.get("cpus")), "free_cpus": _num(a.get("free_cpus"), _num(a.get("cpus"))),
            "memory_gb": _num(a.get("memory_gb")), "gpus": _num(a.get("gpus")),
            "instances": int(instances.get(r.name, 0)), "policy": str(a.get("policy", "")),
        })
    return rows


def scheduler_row(row: SchedulerRow) -> dict[str, Any]:
    """A scheduler's queue (as ``legionrm schedulers`` counts it): its requests pending and running, its instances."""
    return {"name": row.name, "default": row.default, "serves": ", ".join(row.nodepools) or "every nodepool",
            "pending": row.requests.get("pending", 0), "running": row.requests.get("running", 0),
            "instances": row.instances, "error": row.error or ""}


def request_row(info: RequestInfo, now: float) -> dict[str, Any]:
    hosts: dict[str, int] = {}
    for inst in info.instances:
        if inst.state == "running":
            hosts[inst.host] = hosts.get(inst.host, 0) + 1
    started = next((e.at for e in info.history if e.state == "running"), None)
    return {
        "id": info.id, "user": info.user, "state": info.state, "reason": info.reason,
        "classes": list(info.classes), "count": info.count, "pool": info.pool,
        "age_s": round(max(now - info.submitted, 0.0), 1) if info.submitted else None,
        "wait_s": round(started - info.submitted, 2) if started is not None and info.submitted else None,
        "earliest_start_in_s": (round(info.earliest_start - now, 1) if info.earliest_start else None),
        "hosts": dict(sorted(hosts.items())),
    }


def share_rows(status: SchedulerStatus | None, report: CycleReport | None) -> list[dict[str, Any]]:
    """Fair share per user and DUCC class: processes running, the count the
    core gave (``target``) and the pure fair share, summed over the user's jobs."""
    jobs = (report.jobs if report is not None and report.jobs else None) or (status.elastic if status else {})
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for j in jobs.values():
        row = out.setdefault((j.user, j.ducc_class), {"user": j.user, "class": j.ducc_class, "jobs": 0,
                                                      "processes": 0, "target": 0, "fair_share": 0, "memory_gb": 0.0})
        row["jobs"] += 1
        row["processes"] += j.processes
        row["target"] += j.target
        row["fair_share"] += j.pure_fair_share
        row["memory_gb"] += j.processes * j.memory_gb
    total = sum(r["processes"] for r in out.values()) or 1
    rows = [dict(r, fraction=round(r["processes"] / total, 4)) for _, r in sorted(out.items())]
    return rows


def pool_rows(pools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pool's entitlement and allocation per resource (cpu in cores,
    memory in MB, gpu in devices) and the allocated fraction of the entitlement."""
    rows = []
    for path, p in sorted(pools.items()):
        ent, alloc = p.get("entitlement", {}) or {}, p.get("allocation", {}) or {}
        res = {}
        for dim in ("cpu", "memory", "gpu", "disk"):
            if dim not in ent and dim not in alloc:
                continue
            e, a = _num(ent.get(dim)), _num(alloc.get(dim))
            res[dim] = {"entitlement": round(e, 3), "allocation": round(a, 3),
                        "fraction": round(a / e, 4) if e > 0 else (1.0 if a > 0 else 0.0)}
        rows.append({"pool": path, "resources": res})
    return rows


def events(requests: list[RequestInfo], report: CycleReport | None, limit: int = EVENTS) -> list[dict[str, Any]]:
    """The latest request transitions and elastic changes, newest first."""
    out = [{"at": e.at, "kind": "request", "id": info.id, "user": info.user, "state": e.state, "reason": e.reason}
           for info in requests for e in info.history]
    if report is not None:
        for c in (*report.grew, *report.shrank, *report.refused):
            out.append({"at": report.at, "kind": "elastic", "id": c.job_id, "user": c.user, "state": c.change,
                        "reason": f"{c.host}: {c.reason}" if c.host else c.reason})
    out.sort(key=lambda e: (-e["at"], e["id"], e["state"]))
    return out[:limit]


def build_view(poll: Poll) -> dict[str, Any]:
    """The page's whole state: hosts, every scheduler's queue, the queue and what runs, fair share,
    pools, recent events, counts and the errors of this poll."""
    status = poll.status
    requests = poll.requests or []
    rows = [request_row(r, poll.now) for r in sorted(requests, key=lambda r: (r.submitted, r.id))]
    hosts = host_rows(poll.records or [], status.hosts if status else {})
    states: dict[str, int] = {}
    for r in requests:
        states[r.state] = states.get(r.state, 0) + 1
    return {
        "now": poll.now,
        "errors": list(poll.errors),
        "summary": {
            "hosts": sum(1 for h in hosts if h["kind"] == "host"),
            "available": sum(1 for h in hosts if h["kind"] == "host" and h["available"]),
            "vaults": sum(1 for h in hosts if h["kind"] == "vault"),
            "instances": (sum(r.instances for r in poll.schedulers) if poll.schedulers
                          else status.instances if status else None),
            "requests": dict(sorted(states.items())),
            "last_cycle": status.last_cycle if status else None,
            "enactor": dict(poll.enactor or {}),
        },
        "hosts": hosts,
        "schedulers": [scheduler_row(r) for r in poll.schedulers],
        "pending": [r for r in rows if r["state"] in WAITING],
        "running": [r for r in rows if r["state"] == "running"],
        "ended": [r for r in rows if r["state"] in ENDED][-20:],
        "shares": share_rows(status, poll.report),
        "pools": pool_rows(status.pools if status else {}),
        "events": events(requests, poll.report),
    }
