"""Several schedulers on one cluster: each plans over the hosts it serves,
and sweeps and audits only what it issued, so one never stops another's work."""

from __future__ import annotations

import pytest

from legionrm.config import parse_cluster
from legionrm.errors import ConfigError
from legionrm.inprocess import LocalSystem
from legionrm.models import ClusterSpec, Identity, ObjectRequest, SchedulerSettings, SchedulingRequest
from legionrm.scheduler.audit import audit, views_of
from legionrm.scheduler.several import Roster, issued_by
from legionrm.scheduler.wiring import wire
from legionrm.testing import FakeClock

DOC = {
    "host": [{"name": "a", "count": 2, "nodepool": "p1", "attributes": {"cpus": 4, "memory_gb": 8}},
             {"name": "b", "count": 2, "nodepool": "p2", "attributes": {"cpus": 8, "memory_gb": 8}}],
    "class": [{"name": "W"}, {"name": "G", "scheduler": "two"}],
    "scheduler": [{"name": "one", "nodepools": ["p1"]}, {"name": "two", "nodepools": ["p2"]},
                  {"name": "big", "constraint": "$cpus >= 8"}],
}


def req(rid: str, cls: str = "W", scheduler: str | None = None) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="alice"), scheduler=scheduler,
                             objects=(ObjectRequest(class_name=cls, count=1, cpus=2, memory_gb=1),))


def two_schedulers() -> tuple[LocalSystem, dict, FakeClock]:
    clock = FakeClock()
    spec = parse_cluster(DOC)
    s = LocalSystem(spec, clock=clock, settings=SchedulerSettings(cluster=spec, name="one"))
    others = {n: wire(SchedulerSettings(cluster=spec, name=n), s.scheduler_ports()).scheduler for n in ("two", "big")}
    return s, {"one": s.scheduler, **others}, clock


def hosts_of(s: LocalSystem) -> list:
    return [g.get(n) for g in s.groups.values() for n in g.names()]


def test_each_scheduler_places_on_the_hosts_it_serves() -> None:
    s, sched, _ = two_schedulers()
    placed = {n: sched[n].scheduleObjects(req(f"r-{n}")).instances[0].host for n in ("one", "two", "big")}
    assert placed["one"].startswith("a") and placed["two"].startswith("b") and placed["big"].startswith("b")


def test_one_schedulers_sweep_and_audit_leave_the_others_instances_alone() -> None:
    s, sched, clock = two_schedulers()
    mine = sched["one"].scheduleObjects(req("mine")).instances[0]
    theirs = sched["two"].scheduleObjects(req("theirs")).instances[0]
    assert theirs.scheduler == "two" and mine.scheduler == "one"  # the instance names who issued it
    clock.advance(sched["one"].orphan_grace_s + 1)
    assert sched["one"]._sweep_orphans() == []
    assert [r.instance_id for r in s.host(theirs.host).list_instances()] == [theirs.instance_id]
    findings = audit(sched["one"], views_of(hosts_of(s)))
    assert not [f for f in findings if f.subject == theirs.instance_id or f.code == "reservation.unheld"]
    sched["two"].book.end_instance(theirs.instance_id, "ended", "forgotten by a bug")  # now two's own orphan
    assert sched["two"]._sweep_orphans() == [theirs.instance_id]


@pytest.mark.parametrize("issuer, name, mine", [
    ("one", "one", True), ("one-cycle", "one", True), ("two", "one", False),
    ("", "one", True), ("", "two", False), ("gone", "one", True), ("gone", "two", False),
    ("x", "standalone", True), ("one", "standalone", False),
], ids=lambda v: repr(v))
def test_who_issued_an_instance(issuer: str, name: str, mine: bool) -> None:
    """Strays (no issuer, or a scheduler no longer configured) are the default's (the first)."""
    assert issued_by(name, parse_cluster(DOC))(issuer) is mine


@pytest.mark.parametrize("named, cls, want", [
    (None, "W", "one"), ("big", "W", "big"), (None, "G", "two"), ("one", "G", "one"), ("ghost", "W", "request.no_scheduler"),
], ids=["default-is-first", "named", "class-names-one", "request-wins", "unknown"])
def test_which_scheduler_a_request_goes_to(named, cls, want) -> None:
    roster = Roster.from_json(Roster.of(parse_cluster(DOC)).as_json())  # as the gateway reads it from up.json
    got = roster.route(req("r", cls=cls, scheduler=named))
    assert (got if isinstance(got, str) else got.code) == want


def test_a_cluster_without_scheduler_tables_has_one_default() -> None:
    assert [s.name for s in ClusterSpec().scheduler_specs()] == ["default"]


@pytest.mark.parametrize("tables, where", [
    ([{"name": "x"}, {"name": "x"}], "scheduler[1]"),
    ([{"name": "x", "nodepools": ["nope"]}], "scheduler[0]"),
    ([{"name": "x", "constraint": "$cpus >"}], "scheduler[0]"),
    ([{"name": "x", "colour": "red"}], "scheduler[0]"),
    ([{"name": "bad name"}], "scheduler[0]"),
], ids=["twice", "unknown-nodepool", "bad-mil", "unknown-key", "bad-name"])
def test_bad_scheduler_tables_are_refused_naming_the_table(tables, where) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cluster({**DOC, "scheduler": tables, "class": [{"name": "W"}]})
    assert where in str(err.value)


def test_a_class_naming_no_scheduler_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"class\[0\].*no scheduler 'ghost'"):
        parse_cluster({**DOC, "class": [{"name": "W", "scheduler": "ghost"}]})


@pytest.mark.parametrize("alive,bound,want", [
    (["aaaaaaaa11", "bbbbbbbb22"], ["aaaaaaaa11"], {"ray-bbbbbbbb": "bbbbbbbb22"}),
    (["aaaaaaaa11"], ["aaaaaaaa11"], {}),
    ([], ["aaaaaaaa11"], {}),
], ids=["one-joined", "none-new", "one-left"])
def test_a_live_node_no_host_is_bound_to_has_joined(alive: list[str], bound: list[str], want: dict) -> None:
    from legionrm.scheduler.several.actor import joined

    assert joined(alive, bound) == want
