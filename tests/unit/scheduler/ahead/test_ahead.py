"""Reservations ahead of time (issue 18): a request with a future start is
reserved now on the hosts' calendars and starts when the clock reaches its
start; a competing request for the same hours goes elsewhere or waits,
while a short request now still fits before it.  Time is a clock the tests
move; every step ends with the books balanced."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from pydantic import ValidationError

from legionrm import codes
from legionrm.heartbeat import decode, encode
from legionrm.errors import ConfigError, SchedulingError
from legionrm.hostobj.calendar import Calendar
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    SchedulingRequest,
)
from legionrm.models.schedules import MAX_AHEAD_S, START_SLACK_S
from legionrm.request_file import parse_request
from legionrm.scheduler.audit import audit, views_of
from legionrm.testing import FakeClock

HOUR = 3600.0


def system(hosts: int = 2) -> tuple[LocalSystem, FakeClock]:
    clock = FakeClock()
    spec = ClusterSpec(hosts=tuple(HostSpec(name=f"h{i}", attributes={"cpus": 4, "memory_gb": 16})
                                   for i in range(hosts)), classes=(ClassSpec(name="W"),))
    return LocalSystem(spec, clock=clock), clock


def req(rid: str, start: float | None = None, walltime: float | None = 1800.0, cpus: float = 4, count: int = 1,
        wait: bool = True) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="alice"), start=start, walltime_s=walltime,
                             wait=wait, objects=(ObjectRequest(class_name="W", count=count, cpus=cpus, memory_gb=1),))


def host_objs(s: LocalSystem) -> list:
    return [g.get(n) for g in s.groups.values() for n in g.names()]


def books_balance(s: LocalSystem) -> list[str]:
    return [f"{f.code} {f.subject}: {f.detail}" for f in audit(
        s.scheduler, views_of([*host_objs(s), *s.vaults.values()]),
        {n: [r.instance_id for r in c.list_instances()] for n, c in s.classes.items()})]


def state(s: LocalSystem, rid: str) -> str:
    return s.scheduler.request_info(rid).state


def held_on(s: LocalSystem, rid: str) -> list[str]:
    entry = s.scheduler.book.get(rid)
    assert entry is not None and entry.held is not None
    return sorted(p.host for p in entry.held.placements)


# --- the whole story ----------------------------------------------------------------


def test_a_request_an_hour_away_is_reserved_now_and_starts_then() -> None:
    s, clock = system()
    t0 = clock()
    r = s.scheduler.scheduleObjects(req("later", start=t0 + HOUR))
    assert (r.ok, r.state, r.instances) == (True, "reserved", ())
    [where] = held_on(s, "later")
    other = "h1" if where == "h0" else "h0"
    # the host's calendar shows the hold from the start, for the walltime, and nothing runs yet
    [token] = s.host(where).reservations()
    assert (token.start, token.end) == (t0 + HOUR, t0 + HOUR + 1800)
    assert s.host(where).calendar.usage_at(t0)[0] == 0 and s.host(where).calendar.usage_at(t0 + HOUR)[0] == 4
    info = s.scheduler.request_info("later")
    assert info.start == t0 + HOUR and where in info.reason
    s.heartbeat()  # the Collection sees the calendars
    assert books_balance(s) == []

    # a competing request for the same hour goes to the other host ...
    assert s.scheduler.scheduleObjects(req("rival", start=t0 + HOUR, walltime=600)).state == "reserved"
    assert held_on(s, "rival") == [other]
    s.heartbeat()
    # ... and a third one for that hour finds no host free over its window
    third = s.scheduler.scheduleObjects(req("third", start=t0 + HOUR - 600, wait=False))
    assert (third.ok, third.state) == (False, "failed")
    # a short request now still fits before the reservations; a long one does not
    assert s.scheduler.scheduleObjects(req("short", walltime=600)).state == "running"
    assert s.scheduler.scheduleObjects(req("long", walltime=2 * HOUR, wait=False)).state == "failed"
    assert books_balance(s) == []

    clock.advance(601)
    s.tick()
    assert state(s, "short") == "completed" and state(s, "later") == "reserved"
    clock.advance(HOUR - 601 - 1)
    s.tick()
    assert state(s, "later") == "reserved"  # one second early: still waiting
    clock.advance(1)
    s.tick()
    later, rival = s.scheduler.request_info("later"), s.scheduler.request_info("rival")
    assert (later.state, rival.state) == ("running", "running")
    assert [(i.host, i.started_at) for i in later.instances] == [(where, t0 + HOUR)]
    assert [i.host for i in rival.instances] == [other]
    assert books_balance(s) == []
    clock.advance(1800)
    s.tick()
    assert (state(s, "later"), state(s, "rival")) == ("completed", "completed")
    assert books_balance(s) == [] and all(not h.reservations() for h in host_objs(s))


def test_a_reservation_not_started_by_its_start_plus_the_slack_expires_and_the_request_fails() -> None:
    s, clock = system(hosts=1)
    s.scheduler.scheduleObjects(req("late", start=clock() + HOUR))
    clock.advance(HOUR + START_SLACK_S + 1)  # the scheduler never ticked in time
    s.tick()
    info = s.scheduler.request_info("late")
    assert info.state == "failed" and codes.AHEAD_EXPIRED in info.reason and "expired unused" in info.reason
    s.heartbeat()
    assert not s.host("h0").reservations() and books_balance(s) == []


def test_cancelling_a_reserved_request_releases_its_reservations() -> None:
    s, clock = system(hosts=1)
    s.scheduler.scheduleObjects(req("gone", start=clock() + HOUR))
    assert len(s.host("h0").reservations()) == 1
    assert s.scheduler.cancel("gone").state == "cancelled"
    assert not s.host("h0").reservations() and books_balance(s) == []
    # the hour is free again for another request
    s.heartbeat()
    assert s.scheduler.scheduleObjects(req("next", start=clock() + HOUR)).state == "reserved"
    clock.advance(HOUR)
    s.tick()
    assert state(s, "gone") == "cancelled" and state(s, "next") == "running"


def test_work_that_ends_before_the_window_does_not_block_it() -> None:
    s, clock = system(hosts=1)
    assert s.scheduler.scheduleObjects(req("now", walltime=HOUR / 2)).state == "running"
    s.heartbeat()
    # the host is full now, but free over [start, start + walltime)
    assert s.scheduler.scheduleObjects(req("after", start=clock() + HOUR, wait=False)).state == "reserved"
    s.heartbeat()
    assert s.scheduler.scheduleObjects(req("during", start=clock() + HOUR / 4, wait=False)).state == "failed"


# --- validation -----------------------------------------------------------------------

NOW = 1_000_000.0


@pytest.mark.parametrize("start, ok", [
    pytest.param(NOW + HOUR, True, id="an-hour-ahead"),
    pytest.param(NOW - START_SLACK_S / 2, True, id="just-past-within-slack"),
    pytest.param(NOW - START_SLACK_S - 1, False, id="past-beyond-slack"),
    pytest.param(NOW + MAX_AHEAD_S + 1, False, id="more-than-a-year-ahead"),
])
def test_the_scheduler_checks_the_start_against_its_clock(start: float, ok: bool) -> None:
    s, _ = system(hosts=1)
    if ok:
        assert s.scheduler.scheduleObjects(req("r", start=start)).state in ("reserved", "running")
    else:
        with pytest.raises(SchedulingError, match="start"):
            s.scheduler.scheduleObjects(req("r", start=start))


@pytest.mark.parametrize("kw, match", [
    pytest.param({"start": NOW, "walltime": None}, "needs a walltime", id="start-without-walltime"),
    pytest.param({"start": -5.0}, "greater than 0", id="negative-start"),
    pytest.param({"start": float("inf")}, "finite", id="infinite-start"),
    pytest.param({"walltime": 0.0}, "greater than 0", id="zero-walltime"),
])
def test_bad_request_fields_are_refused_by_the_model(kw: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        req("r", **kw)


def test_the_request_walltime_fills_objects_without_their_own() -> None:
    r = SchedulingRequest(request_id="r", identity=Identity(user="a"), walltime_s=60, objects=(
        ObjectRequest(class_name="W"), ObjectRequest(class_name="W", walltime_s=5)))
    assert [o.walltime_s for o in r.objects] == [60, 5]


BASE = {"identity": {"user": "alice"}, "object": [{"class_name": "W"}], "walltime_s": 600}


@pytest.mark.parametrize("extra, start", [
    pytest.param({"start_in": 3600}, NOW + 3600, id="start-in"),
    pytest.param({"start": NOW + 60}, NOW + 60, id="start-epoch"),
    pytest.param({"start": dt.datetime.fromtimestamp(NOW + 120, dt.timezone.utc)}, NOW + 120, id="start-datetime"),
    pytest.param({}, None, id="no-start"),
])
def test_request_files_take_a_start(extra: dict, start: float | None) -> None:
    r = parse_request({**BASE, **extra}, file="r.toml", now=NOW)
    assert r.start == start and r.objects[0].walltime_s == 600


@pytest.mark.parametrize("doc, key, words", [
    pytest.param({**BASE, "start": NOW, "start_in": 5}, "start_in", "not both", id="both"),
    pytest.param({**BASE, "start_in": -1}, "start_in", "0 to", id="negative-start-in"),
    pytest.param({**BASE, "start_in": MAX_AHEAD_S * 2}, "start_in", "0 to", id="start-in-too-far"),
    pytest.param({**BASE, "start": NOW - 3600}, "start", "in the past", id="start-in-the-past"),
    pytest.param({**BASE, "start": dt.datetime(2030, 1, 1)}, "start", "time zone", id="naive-datetime"),
    pytest.param({**BASE, "start": "tomorrow"}, "start", "must be", id="start-a-string"),
    pytest.param({"identity": {"user": "a"}, "object": [{"class_name": "W"}], "start_in": 60}, "walltime_s",
                 "needs a walltime", id="start-without-walltime"),
])
def test_bad_starts_in_request_files_name_the_key(doc: dict, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_request(doc, file="r.toml", now=NOW)
    assert "r.toml" in str(exc.value) and key in str(exc.value) and words in str(exc.value)


# --- the published calendar -----------------------------------------------------------


@pytest.mark.parametrize("bookings, window, peak", [
    pytest.param([], (0, 10), 0.0, id="empty"),
    pytest.param([(0, 5, 2)], (5, 10), 0.0, id="ends-at-the-window"),
    pytest.param([(0, 5, 2)], (4, 10), 2.0, id="overlaps-the-start"),
    pytest.param([(20, 30, 3), (0, None, 1)], (10, 25), 4.0, id="starts-inside-on-top-of-open-ended"),
    pytest.param([(20, 30, 3)], (30, 40), 0.0, id="after-it"),
])
def test_the_published_steps_give_the_calendars_peak(bookings: list, window: tuple, peak: float) -> None:
    cal = Calendar([4.0, 16.0], dims=("cpus", "memory_gb"))
    for i, (a, b, c) in enumerate(bookings):
        cal.add(f"b{i}", [c, 1.0], a, b)
    attrs = encode(cal.dims, *cal.steps(0.0))
    steps = decode(attrs["calendar"]) if attrs else None
    got = steps.peak(*window)["cpus"] if steps is not None else float(cal.usage_at(0.0)[0])
    assert got == peak == float(cal.peak(*window)[0])


def test_past_the_step_limit_the_calendar_shows_full() -> None:
    cal = Calendar([4.0])
    for i in range(10):
        cal.add(f"b{i}", [1.0], 10.0 * i + 1, 10.0 * i + 2)
    times, usage = cal.steps(0.0, limit=5)
    assert len(times) == 5 and usage[-1].tolist() == [4.0] and np.all(np.diff(times) > 0)


@pytest.mark.parametrize("text", ["", "{", '{"dims":["cpus"],"t":[2,1],"u":[[0],[1]]}', '{"t":[1]}', 7])
def test_a_malformed_calendar_reads_as_none(text) -> None:
    assert decode(text) is None


def test_the_steps_are_reused_until_a_booking_changes_or_time_reaches_the_next_step() -> None:
    cal = Calendar([4.0])
    cal.add("a", [1.0], 10.0, 20.0)
    first = cal.steps(0.0)
    assert cal.steps(5.0)[0] is first[0]  # nothing changed before t=10: the same steps (t[0] <= now)
    assert cal.steps(10.0)[0] is not first[0] and cal.steps(10.0)[0].tolist() == [10.0, 20.0]
    cal.add("b", [1.0], 30.0, 40.0)
    assert cal.steps(10.0)[0].tolist() == [10.0, 20.0, 30.0, 40.0]


def test_a_broken_enactor_at_the_start_leaves_it_reserved_and_the_next_tick_starts_it() -> None:
    s, clock = system(hosts=1)
    s.scheduler.scheduleObjects(req("flaky", start=clock() + 60))
    real = s.scheduler.getEnactor()

    class Broken:
        def start_reserved(self, held):
            raise RuntimeError("enactor down")

    s.scheduler.setEnactor(Broken())
    clock.advance(60)
    s.tick()
    assert state(s, "flaky") == "reserved"
    s.scheduler.setEnactor(real)
    clock.advance(5)
    s.tick()
    assert state(s, "flaky") == "running"


def test_cancelling_a_request_that_started_from_a_reservation_stops_its_instances() -> None:
    s, clock = system(hosts=1)
    s.scheduler.scheduleObjects(req("r", start=clock() + 60))
    clock.advance(60)
    s.tick()
    assert state(s, "r") == "running" and s.scheduler.book.get("r").held is None
    assert s.scheduler.cancel("r").state == "cancelled"
    assert s.host("h0").list_instances() == [] and books_balance(s) == []


def test_a_window_with_no_room_says_so() -> None:
    s, clock = system(hosts=1)
    s.scheduler.scheduleObjects(req("first", start=clock() + HOUR))
    s.heartbeat()
    r = s.scheduler.scheduleObjects(req("second", start=clock() + HOUR, wait=False))
    assert r.state == "failed" and "over its window" in r.failures[0].reason
    assert "over its window" in s.scheduler.explain(req("third", start=clock() + HOUR), "h0")
