"""A drained host finishes its work and takes no new work: the planner's
``drained`` filter leaves it out (a refusal with its code and the filter's
name), and the host itself refuses a reservation (``host.drained``, by the
host), whichever scheduler asks."""

from __future__ import annotations

import pytest

from legionrm.models import Holder, ReservationRequest, Resources
from legionrm.scheduler.planning.pipeline import DrainedFilter, PlanContext, run_filters
from tests.unit.scheduler.test_lifecycle import req, system


def test_the_filter_leaves_a_drained_host_out_and_says_why() -> None:
    s, clock = system(hosts=2)
    s.host("h0").drain("disk replacement")
    s.heartbeat()
    suite = s.scheduler.make_schedules(req("x", cpus=1))
    assert {p.host for m in suite.masters for p in m.placements} == {"h1"}
    why = s.scheduler.explain(req("x", cpus=1), "h0")
    assert "drained" in why and "host.drained" in why


@pytest.mark.parametrize("drained, kept", [((), ["h0", "h1"]), (("h0",), ["h1"]), (("h0", "h1"), [])],
                         ids=["none", "one", "all"])
def test_the_filter_by_itself(drained, kept) -> None:
    s, _ = system(hosts=2)
    for h in drained:
        s.host(h).drain("maintenance")
    s.heartbeat()
    snap = s.collection.snapshot()
    from legionrm.scheduler.planning.snaptables import base_table

    table = base_table(snap)
    out = run_filters(PlanContext(request=req("x").objects[0], class_spec=None, now=snap.now, snap=snap), table,
                      (DrainedFilter(),))
    assert sorted(str(n) for n in out.hosts.names) == kept
    for h in drained:
        refusal = out.why(h)
        assert refusal is not None and (refusal.code, refusal.by) == ("host.drained", "drained")


def test_the_host_refuses_new_work_but_keeps_what_runs_and_resume_opens_it() -> None:
    s, _ = system(hosts=1)
    running = s.scheduler.scheduleObjects(req("before", cpus=1)).instances[0]
    host = s.host("h0")
    host.drain("maintenance")
    ask = ReservationRequest(request_id="r1", resource="h0", holder=Holder(user="alice"),
                             resources=Resources(cpus=1))
    refused = host.make_reservation(ask)
    assert (refused.code, refused.by) == ("host.drained", "h0") and "maintenance" in refused.reason
    assert [r.instance_id for r in host.list_instances()] == [running.instance_id]
    assert host.heartbeat()["drain_reason"] == "maintenance"
    host.resume()
    assert not hasattr(host.make_reservation(ask), "code")


def test_a_drained_cluster_leaves_the_request_pending() -> None:
    s, _ = system(hosts=1)
    s.host("h0").drain("maintenance")
    s.heartbeat()
    r = s.scheduler.scheduleObjects(req("later", cpus=1))
    assert not r.ok and r.state == "pending"
    s.host("h0").resume()
    s.tick()
    assert s.scheduler.request_info("later").state == "running"
