"""The dashboard's view-model on plain models: hosts with state and load, the
queue with reasons, what runs and where, fair share per user and class,
pools, recent events newest first, and a poll with failed parts."""

from __future__ import annotations

import json

from legionrm.gateway.dashboard.view import Poll, build_view, events, pool_rows, share_rows
from legionrm.models import (
    CycleReport,
    ElasticChange,
    ElasticJobStatus,
    InstanceInfo,
    RequestEvent,
    RequestInfo,
    ResourceRecord,
    SchedulerStatus,
)

NOW = 1_000.0


def rec(name: str, kind: str = "host", available: bool = True, **attrs: object) -> ResourceRecord:
    return ResourceRecord(name=name, kind=kind, nodepool="batch" if kind == "host" else None, available=available,
                          attributes={"cpus": 16, "memory_gb": 64, "gpus": 0, "state": "free", "load": 0.0, **attrs})


def req(rid: str, state: str, user: str = "alice", submitted: float = 900.0, **kw: object) -> RequestInfo:
    history = [RequestEvent(at=submitted, state="pending", reason="submitted")]
    if state == "running":
        history.append(RequestEvent(at=submitted + 2.5, state="running", reason="master 1 of 1"))
    return RequestInfo(id=rid, user=user, state=state, classes=("Worker",), count=2, submitted=submitted,
                       history=tuple(history), **kw)


def job(jid: str, user: str, processes: int, target: int, ducc: str = "normal") -> ElasticJobStatus:
    return ElasticJobStatus(job_id=jid, user=user, class_name="Worker", ducc_class=ducc, processes=processes,
                            target=target, pure_fair_share=target, memory_gb=2.0)


def test_hosts_show_state_load_capacity_and_instances() -> None:
    poll = Poll(now=NOW, records=[rec("b2", state="busy", load=0.75, free_cpus=4.0), rec("b1"),
                                  rec("v1", kind="vault", cpus=0), rec("gone", available=False, state="free")],
                status=SchedulerStatus(instances=1, hosts={"b2": 1}))
    v = build_view(poll)
    assert [h["name"] for h in v["hosts"]] == ["b1", "b2", "gone", "v1"]  # hosts first, by name
    b2 = v["hosts"][1]
    assert (b2["state"], b2["load"], b2["free_cpus"], b2["cpus"], b2["instances"]) == ("busy", 0.75, 4.0, 16.0, 1)
    assert v["hosts"][2]["state"] == "off" and not v["hosts"][2]["available"]
    assert v["summary"]["hosts"] == 3 and v["summary"]["available"] == 2 and v["summary"]["vaults"] == 1
    json.dumps(v)  # the page gets it as JSON


def test_queue_and_running_with_reasons_wait_and_hosts() -> None:
    running = req("r1", "running", instances=(InstanceInfo(id="i1", host="b1"), InstanceInfo(id="i2", host="b1"),
                                              InstanceInfo(id="i3", host="b2", state="ended")))
    pending = req("p1", "pending", user="bob", submitted=990.0, reason="pool /shared is at its limit",
                  earliest_start=1_030.0)
    v = build_view(Poll(now=NOW, requests=[pending, running, req("c1", "cancelled")]))
    assert [r["id"] for r in v["pending"]] == ["p1"]
    p = v["pending"][0]
    assert (p["user"], p["reason"], p["age_s"], p["earliest_start_in_s"]) == ("bob", "pool /shared is at its limit",
                                                                               10.0, 30.0)
    r = v["running"][0]
    assert r["hosts"] == {"b1": 2} and r["wait_s"] == 2.5 and r["age_s"] == 100.0
    assert [e["id"] for e in v["ended"]] == ["c1"]
    assert v["summary"]["requests"] == {"cancelled": 1, "pending": 1, "running": 1}


def test_fair_share_per_user_and_class_sums_jobs() -> None:
    report = CycleReport(cycle=3, at=NOW, jobs={"a1": job("a1", "alice", 5, 6), "a2": job("a2", "alice", 3, 4),
                                                "b1": job("b1", "bob", 8, 10), "b2": job("b2", "bob", 2, 2, "fixed")})
    rows = share_rows(None, report)
    assert [(r["user"], r["class"], r["jobs"], r["processes"], r["target"]) for r in rows] == [
        ("alice", "normal", 2, 8, 10), ("bob", "fixed", 1, 2, 2), ("bob", "normal", 1, 8, 10)]
    assert abs(sum(r["fraction"] for r in rows) - 1.0) < 1e-3
    # without a report, the status's elastic jobs are used
    assert share_rows(SchedulerStatus(elastic={"a1": job("a1", "alice", 1, 1)}), None)[0]["processes"] == 1


def test_pools_show_entitlement_allocation_and_fraction() -> None:
    rows = pool_rows({"/shared": {"entitlement": {"cpu": 80.0, "memory": 1024.0}, "allocation": {"cpu": 20.0}},
                      "/": {"entitlement": {"cpu": 0.0}, "allocation": {"cpu": 0.0}}})
    assert [r["pool"] for r in rows] == ["/", "/shared"]
    assert rows[1]["resources"]["cpu"] == {"entitlement": 80.0, "allocation": 20.0, "fraction": 0.25}
    assert rows[1]["resources"]["memory"]["fraction"] == 0.0 and rows[0]["resources"]["cpu"]["fraction"] == 0.0


def test_events_newest_first_with_elastic_changes_and_a_limit() -> None:
    report = CycleReport(cycle=1, at=950.0, grew=(ElasticChange(job_id="j", user="carol", share=1, host="b1",
                                                               change="grew", reason="fair share"),))
    ev = events([req("r1", "running"), req("r2", "pending", submitted=960.0)], report)
    assert [(e["id"], e["state"]) for e in ev] == [("r2", "pending"), ("j", "grew"), ("r1", "running"), ("r1", "pending")]
    assert ev[1]["reason"] == "b1: fair share"
    assert len(events([req(f"r{i}", "pending", submitted=float(i)) for i in range(100)], None, limit=7)) == 7


def test_a_poll_with_failed_parts_still_draws_the_rest() -> None:
    v = build_view(Poll(now=NOW, records=[rec("b1")], errors=["scheduler.status: no answer within 5 s"]))
    assert v["errors"] == ["scheduler.status: no answer within 5 s"]
    assert [h["name"] for h in v["hosts"]] == ["b1"] and v["pools"] == [] and v["shares"] == []
    assert v["summary"]["instances"] is None and v["pending"] == []
