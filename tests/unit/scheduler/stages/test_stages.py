"""``after`` within one request, through the in-process system with real
runners (issue 26, item 6): an object after work that ends starts only once
that work ended well; one after work that failed never starts and its
request fails; one after a service starts once it runs, in the same attempt."""

from __future__ import annotations

import time
from pathlib import Path

from legionrm.config import parse_cluster
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest

WAIT_S = 60.0


def system(tmp_path: Path) -> LocalSystem:
    spec = parse_cluster({
        "host": [{"name": "h1", "attributes": {"cpus": 4, "memory_gb": 8}}],
        "class": [{"name": "Command", "implementation": "legionrm.hostobj.work:Command"}, {"name": "Svc"}],
        "runner": {"run_as": "service", "kill_grace_s": 2.0, "work_dir": str(tmp_path / "work")}})
    return LocalSystem(spec, runs_dir=tmp_path / "runs")


def cmd(name: str, command: str, *after: str) -> ObjectRequest:
    return ObjectRequest(class_name="Command", name=name, after=after, cpus=1, memory_gb=0.5,
                         args={"command": command})


def until(s: LocalSystem, rid: str, states: tuple[str, ...]):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        s.tick()
        info = s.scheduler.request_info(rid)
        if info.state in states:
            return info
        time.sleep(0.1)
    raise AssertionError(f"{rid} did not reach {states}: {s.scheduler.request_info(rid)}")


def names(info) -> list[str | None]:
    return [i.name for i in sorted(info.instances, key=lambda i: i.started_at)]


def test_work_after_work_starts_once_it_ended_well(tmp_path: Path) -> None:
    s = system(tmp_path)
    out = tmp_path / "order"
    r = s.scheduler.scheduleObjects(SchedulingRequest(request_id="pipe", identity=Identity(user="alice"), objects=(
        cmd("second", f"test -f {out} && echo second >> {out}", "first"),
        cmd("first", f"sleep 0.5; echo first > {out}"))))
    assert r.ok and len(r.instances) == 1  # only the first stage
    info = until(s, "pipe", ("completed", "failed"))
    assert info.state == "completed", info
    assert names(info) == ["first", "second"]
    assert out.read_text() == "first\nsecond\n"
    first, second = sorted(info.instances, key=lambda i: i.started_at)
    assert second.started_at >= first.ended_at  # never before what it follows ended
    assert any("started second" in h.reason for h in info.history)


def test_what_follows_failed_work_never_starts_and_the_request_fails(tmp_path: Path) -> None:
    s = system(tmp_path)
    r = s.scheduler.scheduleObjects(SchedulingRequest(request_id="bad", identity=Identity(user="alice"), objects=(
        cmd("first", "exit 4"), cmd("second", "true", "first"))))
    assert r.ok
    info = until(s, "bad", ("completed", "failed"))
    assert info.state == "failed" and names(info) == ["first"]


def test_an_object_after_a_service_starts_with_it(tmp_path: Path) -> None:
    s = system(tmp_path)
    r = s.scheduler.scheduleObjects(SchedulingRequest(request_id="svc", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Svc", name="db", cpus=1, memory_gb=0.5),
        cmd("client", "true", "db"))))
    assert r.ok and len(r.instances) == 2  # a service does not end: its followers start once it runs
    s.scheduler.cancel("svc")


def test_a_restarted_scheduler_finds_the_stage_again(tmp_path: Path) -> None:
    from legionrm.state import RequestStore
    from tests.unit.scheduler.test_restart import restarted

    spec = system(tmp_path).spec
    s = LocalSystem(spec, runs_dir=tmp_path / "runs2", store=RequestStore(tmp_path / "r.db"))
    assert s.scheduler.scheduleObjects(SchedulingRequest(request_id="pipe", identity=Identity(user="alice"), objects=(
        cmd("first", "sleep 1"), cmd("second", "true", "first")))).ok
    restarted(s, RequestStore(tmp_path / "r.db"))
    assert [i.name for i in s.scheduler.request_info("pipe").instances] == ["first"]  # written with its object
    info = until(s, "pipe", ("completed", "failed"))
    assert info.state == "completed" and names(info) == ["first", "second"]
