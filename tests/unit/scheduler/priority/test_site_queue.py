"""The site's queue on the in-process system: QoS from the cluster file, limits that keep a request
pending with the limit as its reason, holds, an administrator's update and top, the refusal of a
user's own priority, and the order by fair share that remembers finished work."""

from __future__ import annotations

from typing import Any

import pytest

from legionrm import codes
from legionrm.auth import VerifiedCaller
from legionrm.auth.errors import AuthRefusedError
from legionrm.config import parse_cluster
from legionrm.errors import ConfigError
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.request_file import load_request
from legionrm.scheduler.door import SchedulerDoor
from legionrm.scheduler.priority import QueueControl, QueueError, site_settings
from legionrm.testing import FakeClock

QOS = [
    {"name": "normal", "priority": 10, "default": True},
    {"name": "high", "priority": 100, "users": ["alice"]},
    {"name": "short", "priority": 10, "max_walltime_s": 60},
    {"name": "small", "priority": 10, "max_running_cpus_per_user": 4},
    {"name": "few", "priority": 10, "max_pending_per_user": 1},
]


def cluster(hosts: int = 2, cpus: int = 4, **fairshare: Any) -> Any:
    return parse_cluster({
        "host": [{"name": f"h{i}", "attributes": {"cpus": cpus, "memory_gb": 16}} for i in range(hosts)],
        "class": [{"name": "W"}, {"name": "Urgent", "qos": "high"}], "qos": QOS,
        "fairshare": {"half_life_s": 100.0, **fairshare}})


def system(**kw: Any) -> tuple[LocalSystem, FakeClock]:
    clock = FakeClock()
    return LocalSystem(cluster(**kw), clock=clock), clock


def control(s: LocalSystem) -> QueueControl:
    """The hand on the queue an open door gives (the door decides who may use it)."""
    return SchedulerDoor(s.scheduler).control


def req(rid: str, user: str = "bob", cpus: float = 4, count: int = 1, walltime: float | None = None,
        cls: str = "W", **top: Any) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), **top, objects=(
        ObjectRequest(class_name=cls, count=count, cpus=cpus, memory_gb=1, walltime_s=walltime),))


@pytest.mark.parametrize("doc, where", [
    ({"qos": [{"name": "a"}, {"name": "a"}]}, "qos[1]"),
    ({"qos": [{"name": "a", "priority": -1}]}, "qos[0]"),
    ({"qos": [{"name": "a", "max_walltime_s": 0}]}, "qos[0]"),
    ({"qos": [{"name": "a", "colour": "red"}]}, "qos[0]"),
    ({"qos": [{"name": "a", "default": True}, {"name": "b", "default": True}]}, "qos"),
    ({"class": [{"name": "W", "qos": "gold"}]}, "class[0]"),
    ({"fairshare": {"half_life_s": -1}}, "fairshare"),
    ({"fairshare": {"weights": {"age": -1}}}, "fairshare.weights"),
    ({"fairshare": {"weights": {"colour": 1}}}, "fairshare.weights"),
    ({"fairshare": {"group": [{"name": "g", "users": {"a": 1}}, {"name": "h", "users": {"a": 1}}]}}, "fairshare.group[1]"),
], ids=["twice", "negative-priority", "zero-walltime", "unknown-key", "two-defaults", "unknown-class-qos",
        "negative-half-life", "negative-weight", "unknown-weight", "user-in-two-groups"])
def test_a_bad_site_table_names_its_place(doc: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError, match=where.replace("[", r"\[").replace("]", r"\]")):
        parse_cluster(doc)


def test_defaults_without_any_site_table() -> None:
    s = site_settings(parse_cluster({}))
    assert list(s.qos) == ["normal"] and s.half_life_s == 7 * 86_400 and s.formula.max_age_s == 7 * 86_400


def test_a_class_gives_its_default_qos_and_the_qos_priority_orders_the_queue() -> None:
    s, clock = system()
    assert s.scheduler.scheduleObjects(req("fill", count=2)).ok
    s.scheduler.scheduleObjects(req("plain", user="carol"))
    clock.advance(5)  # older, but of a lower QoS
    s.scheduler.scheduleObjects(req("urgent", user="alice", cls="Urgent"))
    assert [e.id for e in s.scheduler.queue.order()] == ["urgent", "plain"]
    assert {r.id: r.qos for r in s.scheduler.queue.site.prio_report(s.scheduler.book.entries()).rows} == {
        "urgent": "high", "plain": "normal"}


@pytest.mark.parametrize("request_, code", [
    (req("x", qos="gold"), codes.QOS_UNKNOWN),
    (req("x", user="bob", qos="high"), codes.QOS_DENIED),
], ids=["unknown", "not-on-its-user-list"])
def test_a_qos_that_cannot_be_had_is_refused_at_submit(request_: SchedulingRequest, code: str) -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(request_)
    assert (r.ok, r.state, r.failures[0].code) == (False, "refused", code)
    assert "x" not in s.scheduler.book


@pytest.mark.parametrize("first, second, code", [
    (None, req("x", qos="short", walltime=61), codes.QOS_MAX_WALLTIME_S),
    (req("a", qos="small"), req("x", qos="small"), codes.QOS_MAX_RUNNING_CPUS_PER_USER),
], ids=["walltime", "running-cpus"])
def test_over_a_qos_limit_the_request_stays_pending_with_the_limit_as_reason(first, second, code) -> None:
    s, _ = system(hosts=4)
    if first is not None:
        s.scheduler.scheduleObjects(first)
    r = s.scheduler.scheduleObjects(second)
    assert (r.ok, r.state) == (False, "pending")
    info = s.scheduler.request_info("x")
    assert info.reason.startswith(code)
    s.scheduler.replan()  # still over: still pending, the same reason (room is free on the other hosts)
    assert s.scheduler.request_info("x").reason.startswith(code)
    # another user is not held by bob's limits
    assert s.scheduler.scheduleObjects(req("y", user="carol", qos=second.qos, walltime=second.objects[0].walltime_s
                                           if code != codes.QOS_MAX_WALLTIME_S else 10)).ok


def test_past_the_pending_limit_a_request_waits_unconsidered_until_the_older_one_leaves() -> None:
    s, _ = system(hosts=4)
    assert s.scheduler.scheduleObjects(req("fill", user="carol", count=4)).ok
    assert s.scheduler.scheduleObjects(req("a", qos="few")).failures[0].code != codes.QOS_MAX_PENDING_PER_USER
    r = s.scheduler.scheduleObjects(req("x", qos="few"))
    assert (r.state, r.failures[0].code) == ("pending", codes.QOS_MAX_PENDING_PER_USER)
    assert [p.blocked.split(":")[0] for p in s.scheduler.queue.site.prio_report(s.scheduler.book.entries()).rows] == [
        "", codes.QOS_MAX_PENDING_PER_USER]
    s.scheduler.cancel("fill")
    assert s.scheduler.request_info("a").state == "running"
    s.scheduler.replan()  # a left the queue: x is bob's only waiting request in `few` now
    assert s.scheduler.request_info("x").state == "running"


def test_the_running_cpus_limit_counts_what_starts_in_the_same_pass() -> None:
    s, _ = system(hosts=4)
    assert s.scheduler.scheduleObjects(req("fill", user="carol", count=4)).ok  # the cluster is full
    for rid in ("a", "b"):
        assert s.scheduler.scheduleObjects(req(rid, qos="small")).state == "pending"
    s.scheduler.cancel("fill")  # one pass: a starts, b would pass bob's 4 cpus
    assert s.scheduler.request_info("a").state == "running"
    assert s.scheduler.request_info("b").reason.startswith(codes.QOS_MAX_RUNNING_CPUS_PER_USER)


def test_an_administrator_moves_a_request_over_a_limit_to_another_qos() -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(req("x", qos="short", walltime=600))
    info = control(s).update("x", qos="normal")
    assert info.state == "running" and info.qos == "normal"
    with pytest.raises(QueueError, match="only a pending request"):
        control(s).update("x", priority=5)
    with pytest.raises(QueueError) as e:
        control(s).hold("x", admin=True)
    assert e.value.code == codes.QUEUE_NOT_PENDING


def test_hold_keeps_a_request_out_of_the_queue_until_released() -> None:
    s, _ = system()
    assert s.scheduler.scheduleObjects(req("fill", user="carol", count=2)).ok
    s.scheduler.scheduleObjects(req("x"))
    info = control(s).hold("x", admin=False)
    assert (info.state, info.hold) == ("pending", "user") and info.reason.startswith(codes.QUEUE_HELD)
    assert s.scheduler.queue.order() == []
    s.scheduler.cancel("fill")  # room frees: a held request does not start
    assert s.scheduler.request_info("x").state == "pending"
    info = control(s).release("x", admin=False)
    assert (info.state, info.hold) == ("running", None)


def test_submitted_held_waits_and_an_admin_hold_is_the_admins_to_release() -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(req("x", hold="user"))
    assert (r.state, r.failures[0].code) == ("pending", codes.QUEUE_HELD)
    control(s).hold("x", admin=True)
    with pytest.raises(AuthRefusedError):
        control(s).release("x", admin=False)
    assert control(s).release("x", admin=True).state == "running"


def test_update_priority_and_top_put_a_request_first() -> None:
    s, clock = system()
    assert s.scheduler.scheduleObjects(req("fill", user="carol", count=2)).ok
    for rid in ("a", "b", "c"):
        s.scheduler.scheduleObjects(req(rid))
        clock.advance(1)
    assert [e.id for e in s.scheduler.queue.order()] == ["a", "b", "c"]
    control(s).top("c")
    assert [e.id for e in s.scheduler.queue.order()] == ["c", "a", "b"]
    control(s).update("a", priority=-1)
    assert [e.id for e in s.scheduler.queue.order()] == ["c", "b", "a"]
    control(s).update("c", clear_priority=True)
    assert [e.id for e in s.scheduler.queue.order()] == ["b", "c", "a"]
    with pytest.raises(QueueError):
        control(s).update("b", qos="gold")


class _Guard:
    """A guard that proves every call to come from ``who``."""

    def __init__(self, who: VerifiedCaller) -> None:
        self.who = who

    def check(self, proof: Any, call: str, args: Any) -> VerifiedCaller:
        return self.who

    require = check


def caller(name: str, admin: bool = False) -> VerifiedCaller:
    return VerifiedCaller(name=name, kind="user", roles=frozenset({"user", "admin"} if admin else {"user"}),
                          groups=())


@pytest.mark.parametrize("request_, field", [
    (req("x", priority=5), "priority"),
    (SchedulingRequest(request_id="x", identity=Identity(user="bob"), objects=(
        ObjectRequest(class_name="W"), ObjectRequest(class_name="W", weight=2.0))), "object[1].weight"),
    (SchedulingRequest(request_id="x", identity=Identity(user="bob"), objects=(
        ObjectRequest(class_name="W", priority=-3),)), "object[0].priority"),
], ids=["request-priority", "object-weight", "object-priority"])
def test_a_users_own_priority_or_weight_is_refused_naming_the_field(request_: SchedulingRequest, field: str) -> None:
    s, _ = system()
    door = SchedulerDoor(s.scheduler, _Guard(caller("bob")))  # type: ignore[arg-type]
    r = door.scheduleObjects(request_)
    assert (r.ok, r.state) == (False, "refused")
    [f] = r.failures
    assert f.code == codes.REQUEST_PRIORITY and f.reason.startswith(field + ":") and "\n" not in f.reason
    assert "x" not in s.scheduler.book
    admin = SchedulerDoor(s.scheduler, _Guard(caller("root", admin=True)))  # type: ignore[arg-type]
    assert admin.scheduleObjects(request_).ok


def test_only_an_administrator_updates_or_tops_and_an_owner_holds_their_own() -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(req("fill", user="carol", count=2))
    s.scheduler.scheduleObjects(req("x", user="bob"))
    bob, carol = (SchedulerDoor(s.scheduler, _Guard(caller(n))) for n in ("bob", "carol"))  # type: ignore[arg-type]
    for call in (lambda: bob.top("x"), lambda: bob.update("x", priority=1), lambda: carol.hold("x")):
        with pytest.raises(AuthRefusedError):
            call()
    assert bob.hold("x").hold == "user"
    assert [r.id for r in bob.prio().rows] == ["x"] and all(r.user in (None, "bob") for r in bob.share().rows)


def test_finished_work_is_remembered_and_decays() -> None:
    s, clock = system(hosts=1)
    assert s.scheduler.scheduleObjects(req("old", user="bob", walltime=50)).ok
    clock.advance(51)
    s.tick()
    s.scheduler.results.sweep()
    rows = {r.user: r for r in s.scheduler.queue.site.share_report(s.scheduler.book.entries()).rows if r.user}
    assert rows["bob"].raw_usage == pytest.approx(4 * 50, rel=0.05)
    first = rows["bob"].decayed_usage
    clock.advance(100)  # one half-life
    s.tick()  # the hosts beat again
    rows = {r.user: r for r in s.scheduler.queue.site.share_report(s.scheduler.book.entries()).rows if r.user}
    assert rows["bob"].decayed_usage == pytest.approx(first / 2)
    assert rows["bob"].raw_usage == pytest.approx(4 * 50, rel=0.05)
    # bob ran yesterday, carol never: carol goes first though she came later
    assert s.scheduler.scheduleObjects(req("fill", user="dave")).ok
    s.scheduler.scheduleObjects(req("b", user="bob"))
    clock.advance(1)
    s.scheduler.scheduleObjects(req("c", user="carol"))
    assert [e.id for e in s.scheduler.queue.order()] == ["c", "b"]


def test_a_request_file_chooses_its_qos_and_may_come_held() -> None:
    r = load_request("examples/requests/debug.toml", user="ann")
    assert (r.qos, r.hold, r.priority) == ("debug", "user", None)
