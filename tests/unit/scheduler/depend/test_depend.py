"""Issue 26 item 5 on the in-process system: dependencies between requests
(after_ok, after_any, after_not_ok), begin_at, and holds by their owner.
Each rule as a table; a dependency that can never be met cancels the
request; dependencies read finished requests from the durable history and
survive a restart."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from legionrm import codes
from legionrm.auth.errors import AuthRefusedError
from legionrm.errors import ConfigError
from legionrm.models import SchedulerSettings
from legionrm.models.cluster import QueueSpec
from legionrm.request_file import parse_request
from legionrm.scheduler.depend import array_state, met
from legionrm.scheduler.door import SchedulerDoor
from legionrm.scheduler.wiring import pool_gate
from legionrm.inprocess import LocalSystem
from legionrm.state import RequestStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.priority.test_site_queue import _Guard, caller
from tests.unit.scheduler.test_lifecycle import cluster, req
from tests.unit.scheduler.test_restart import restarted


def system(tmp_path: Any = None) -> tuple[LocalSystem, FakeClock]:
    clock = FakeClock()
    spec = cluster().model_copy(update={"queue": QueueSpec(history_keep=1000)})
    store = RequestStore(tmp_path / "r.db") if tmp_path is not None else None
    return LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=store,
                       settings=SchedulerSettings(cluster=spec)), clock


def dep(rid: str, kind: str, on: str | list[str], **kw: Any):
    return req(rid, cpus=1, **kw).model_copy(update={kind: tuple([on] if isinstance(on, str) else on)})


def state(s: LocalSystem, rid: str) -> str:
    return s.scheduler.request_info(rid).state


@pytest.mark.parametrize("kind, end, want", [
    ("after_ok", "completed", True), ("after_ok", "failed", False), ("after_ok", "cancelled", False),
    ("after_ok", "node_lost", False), ("after_ok", "running", None),
    ("after_ok", "pending", None), ("after_any", "completed", True), ("after_any", "cancelled", True),
    ("after_any", "node_lost", True), ("after_any", "running", None), ("after_not_ok", "completed", False),
    ("after_not_ok", "failed", True), ("after_not_ok", "cancelled", True), ("after_not_ok", "node_lost", True),
    ("after_not_ok", "reserved", None), ("after_ok", None, False), ("after_any", None, False),
], ids=lambda v: str(v))
def test_when_a_dependency_is_met(kind: str, end: str | None, want: bool | None) -> None:
    """True: met; False: never (the request is cancelled); None: not yet.  Only ``completed`` ends well."""
    assert met(kind, end) is want


@pytest.mark.parametrize("states, want", [
    (["completed", "completed"], "completed"), (["completed", "failed"], "failed"),
    (["completed", "cancelled"], "cancelled"), (["completed", "node_lost"], "failed"),
    (["pending", "completed"], "pending"), (["pending", "running"], "running"), (["running"], "running"),
], ids=lambda v: "-".join(v) if isinstance(v, list) else v)
def test_an_arrays_one_state(states: list[str], want: str) -> None:
    assert array_state(states) == want


# --- the rules on the system ---------------------------------------------------------------------

@pytest.mark.parametrize("kind, how_a_ends, b_ends_up", [
    ("after_ok", "completes", "running"),
    ("after_ok", "is cancelled", "cancelled"),
    ("after_any", "completes", "running"),
    ("after_any", "is cancelled", "running"),
    ("after_not_ok", "completes", "cancelled"),
    ("after_not_ok", "is cancelled", "running"),
], ids=lambda v: v.replace(" ", "-"))
def test_each_dependency_kind_between_requests(kind: str, how_a_ends: str, b_ends_up: str) -> None:
    s, clock = system()
    assert s.scheduler.scheduleObjects(req("a", cpus=1, walltime=10)).ok
    b = s.scheduler.scheduleObjects(dep("b", kind, "a"))
    assert (b.ok, b.state) == (False, "pending")
    info = s.scheduler.request_info("b")
    assert info.reason == f"{codes.DEPEND_WAITING}: waits for {kind} a to end"
    s.tick()
    assert state(s, "b") == "pending"  # room enough, but a has not ended
    if how_a_ends == "completes":
        clock.advance(11)
    else:
        s.scheduler.cancel("a")
    s.tick()
    assert state(s, "b") == b_ends_up
    if b_ends_up == "cancelled":
        reason = s.scheduler.request_info("b").reason
        assert reason.startswith(f"{codes.DEPEND_NEVER}: {kind}: a ended ") and "\n" not in reason


def test_an_unknown_dependency_cancels_the_request_at_submit() -> None:
    s, _ = system()
    r = s.scheduler.scheduleObjects(dep("b", "after_ok", "nobody"))
    assert r.state == "cancelled" and [f.code for f in r.failures] == [codes.DEPEND_NEVER]
    assert s.scheduler.request_info("b").reason == f"{codes.DEPEND_NEVER}: after_ok: nobody is not known, so this " \
                                                    "request can never start"


def test_a_chain_cancels_down_the_line_when_its_head_fails() -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(req("a", cpus=1, walltime=10))
    s.scheduler.scheduleObjects(dep("b", "after_ok", "a"))
    s.scheduler.scheduleObjects(dep("c", "after_ok", "b"))
    s.scheduler.cancel("a")
    s.tick()
    s.tick()
    assert (state(s, "b"), state(s, "c")) == ("cancelled", "cancelled")


def test_several_dependencies_wait_for_every_one() -> None:
    s, clock = system()
    s.scheduler.scheduleObjects(req("a", cpus=1, walltime=10))
    s.scheduler.scheduleObjects(req("b", cpus=1, walltime=20))
    s.scheduler.scheduleObjects(dep("c", "after_ok", ["a", "b"]))
    clock.advance(11)
    s.tick()
    assert state(s, "c") == "pending" and "after_ok b" in s.scheduler.request_info("c").reason
    clock.advance(10)
    s.tick()
    assert state(s, "c") == "running"


def test_a_dependency_on_a_request_that_left_for_the_history(tmp_path) -> None:
    """The finished request settled into the durable history; the dependent reads it there."""
    s, clock = system(tmp_path)
    s.scheduler.scheduleObjects(req("a", cpus=1, walltime=5))
    clock.advance(6)
    for _ in range(3):
        s.tick()
    assert "a" not in s.scheduler.book and s.scheduler.request_info("a").archived
    assert s.scheduler.scheduleObjects(dep("b", "after_ok", "a")).ok
    r = s.scheduler.scheduleObjects(dep("c", "after_not_ok", "a"))
    assert r.state == "cancelled"


def test_dependencies_survive_a_restart(tmp_path) -> None:
    s, clock = system(tmp_path)
    s.scheduler.scheduleObjects(req("a", cpus=1, walltime=10))
    s.scheduler.scheduleObjects(dep("b", "after_ok", "a"))
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    info = new.request_info("b")
    assert (info.state, info.after_ok) == ("pending", ("a",))
    s.tick()  # the system's tick: the hosts', then the new Scheduler's
    assert new.request_info("b").state == "pending"
    clock.advance(11)
    s.tick()
    assert new.request_info("b").state == "running"


@pytest.mark.parametrize("form", ["epoch", "iso8601"])
def test_begin_at_waits_until_its_time_saying_until_when(form: str) -> None:
    s, clock = system()
    at = clock() + 100
    doc = {"request_id": "b", "identity": {"user": "alice"}, "object": [{"class_name": "W", "cpus": 1}],
           "begin_at": dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat() if form == "iso8601" else at}
    r = s.scheduler.scheduleObjects(parse_request(doc, now=clock()))
    assert r.state == "pending"
    reason = s.scheduler.request_info("b").reason
    assert reason.startswith(f"{codes.DEPEND_BEGIN_AT}: begin_at: waits until ") and reason.endswith("Z")
    clock.advance(99)
    s.tick()
    assert state(s, "b") == "pending"
    clock.advance(2)
    s.tick()
    assert state(s, "b") == "running"


@pytest.mark.parametrize("doc, key", [
    ({"array": "0-"}, "array"), ({"array": "5-2"}, "array"), ({"array": "%0"}, "array"),
    ({"array": "0-9%0"}, "array"), ({"array": "a-b"}, "array"), ({"begin_at": "tomorrow"}, "begin_at"),
    ({"begin_at": "2026-11-24T09:00:00"}, "begin_at"), ({"after_ok": [1]}, "after_ok"),
    ({"after_any": "  "}, None), ({"requeue": "yes"}, "requeue"),
], ids=["array-open-range", "array-backwards", "array-no-indices", "array-limit-0", "array-letters",
        "begin_at-words", "begin_at-no-zone", "after_ok-number", "after_any-blank", "requeue-text"])
def test_bad_fields_are_refused_at_submit_in_one_line_naming_the_field(doc: dict[str, Any], key: str | None) -> None:
    base = {"identity": {"user": "alice"}, "object": [{"class_name": "W"}]}
    if key is None:  # a blank id is still an id: it is refused later as unknown, never silently dropped
        assert parse_request({**base, **doc}).after_any == ("  ",)
        return
    with pytest.raises(ConfigError) as err:
        parse_request({**base, **doc})
    assert f"{key}:" in str(err.value) and "\n" not in str(err.value)


def test_a_user_holds_and_releases_their_own_and_not_anothers() -> None:
    s, _ = system()
    s.scheduler.scheduleObjects(req("fill", user="carol", count=2))
    s.scheduler.scheduleObjects(req("x", user="bob"))
    bob, carol = (SchedulerDoor(s.scheduler, _Guard(caller(n))) for n in ("bob", "carol"))  # type: ignore[arg-type]
    with pytest.raises(AuthRefusedError) as err:
        carol.hold("x")
    assert err.value.code == codes.AUTH_NOT_OWNER
    assert bob.hold("x").hold == "user"
    with pytest.raises(AuthRefusedError) as err:
        carol.release("x")
    assert err.value.code == codes.AUTH_NOT_OWNER
    assert bob.release("x").hold is None
