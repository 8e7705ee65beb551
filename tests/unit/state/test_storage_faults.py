"""Storage faults at every write site (issue 28): a full disk, an I/O error and
a crash between the write and the apply, injected through the one seam
(:mod:`legionrm.faults`) into the request book, the pool charges, the host
state, the vault state and the accounting records.

After a full disk or an I/O error: nothing in memory changed (the book is
what its store holds, the pools charge what the book runs, the hosts hold
what the book knows), the caller got the true code, the audit is clean, and
once space returns the same objects carry on.  After a crash: a reopen of
the same home knows every request that was acknowledged before it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from legionrm import codes, faults
from legionrm.hostobj.durable import Keeper
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.vault import VaultObject
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    Holder,
    Identity,
    ObjectRequest,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
    SchedulerResponse,
    SchedulingRequest,
)
from legionrm.objstate import DirectoryShelf
from legionrm.scheduler.wiring import pool_gate
from legionrm.state import RequestStore, StoreFault
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_lifecycle import books_balance, cluster, req
from tests.unit.scheduler.test_restart import restarted

CODE = {"full": codes.STATE_DISK_FULL, "io": codes.STATE_IO_ERROR}


# --- the Scheduler's write sites: request book, pool charges, reservations ---------------------------------


def home(tmp_path: Path) -> tuple[LocalSystem, FakeClock]:
    """A system over the state store in ``tmp_path`` with one acknowledged request running ("a", walltime 50)."""
    clock = FakeClock()
    spec = cluster(hosts=2, cpus=4)
    s = LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=RequestStore(tmp_path / "scheduler.db"))
    assert s.scheduler.scheduleObjects(req("a", count=1, walltime=50)).ok
    return s, clock


def ahead(rid: str, at: float) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="bob"), start=at, objects=(
        ObjectRequest(class_name="W", count=1, cpus=2, memory_gb=1, walltime_s=60),))


@dataclass(frozen=True)
class Site:
    """One write site: ``act`` makes the write (its first ``after`` writes pass)."""

    name: str
    act: Callable[[LocalSystem, FakeClock], Any]
    after: int = 0
    new: str | None = None  # the request the act submits (absent unless acknowledged)


SITES = [
    Site("submit", lambda s, c: s.scheduler.scheduleObjects(req("b", count=1, cpus=2)), new="b"),
    Site("transition and pool charge", lambda s, c: s.scheduler.scheduleObjects(req("b", count=1, cpus=2)), 1, "b"),
    Site("placing", lambda s, c: s.scheduler.scheduleObjects(req("b", count=1, cpus=2)), 2, "b"),
    Site("start (instances attached)", lambda s, c: s.scheduler.scheduleObjects(req("b", count=1, cpus=2)), 3, "b"),
    Site("reservation ahead", lambda s, c: s.scheduler.scheduleObjects(ahead("b", c() + 3600)), 3, "b"),
    Site("refused (back to the queue)", lambda s, c: s.scheduler.scheduleObjects(req("b", count=2)), 1, "b"),
    Site("cancel", lambda s, c: s.scheduler.cancel("a")),
    Site("end (walltime)", lambda s, c: (c.advance(51), s.tick())[1]),
    # the instance's end is written, its request's end is not: the host and the class let it go all the same
    Site("end (walltime), the request's end unwritten", lambda s, c: (c.advance(51), s.tick())[1], 1),
]


def memory(s: LocalSystem) -> dict[str, Any]:
    """What the Scheduler's memory says: each request's state and instances, the pool charges, the hosts' instances."""
    return {
        # the live book (a settled request left it, and the store's live table, for the history)
        "book": {e.id: (e.state, tuple((k, x.state) for k, x in e.instances.items())) for e in s.scheduler.book.entries()},
        "pools": sorted(s.scheduler.accounts.pools.held()),
        "running": sorted(r.instance_id for g in s.groups.values() for r in g.list_instances()),
    }


def durable(path: Path) -> dict[str, tuple[str, tuple[tuple[str, str], ...]]]:
    return {r.request.request_id: (r.state, tuple((k, v.state) for k, v in r.instances.items()))
            for r in RequestStore(path).load()}


def consistent(s: LocalSystem, path: Path, audit: bool = True, half_done: bool = False) -> None:
    """The book is its store; the pools charge what the book admitted; the hosts run only what the book runs."""
    mem = memory(s)
    assert mem["book"] == durable(path)
    book = s.scheduler.list_requests()
    assert mem["pools"] == sorted(i.id for i in book if i.state in ("admitted", "placing", "running", "reserved"))
    # nothing runs that the book does not know (an end the host saw itself may wait for the store to be written)
    assert set(mem["running"]) <= {x.id for i in book for x in i.instances if x.state == "running"}
    # while writes fail, an attempt the write stopped may stay admitted/placing with nothing placing
    # it: the auditor names it (request.unplaced) and the first tick that can write settles it
    allowed = (codes.REQUEST_UNPLACED,) if half_done else ()
    assert not audit or [f for f in books_balance(s) if not f.startswith(allowed)] == []


def code_of(answer: Any) -> str | None:
    if isinstance(answer, StoreFault):
        return answer.code
    if isinstance(answer, SchedulerResponse) and not answer.ok and answer.failures:
        return answer.failures[0].code
    return None


@pytest.mark.parametrize("fault", ["full", "io"])
@pytest.mark.parametrize("site", SITES, ids=[s.name for s in SITES])
def test_a_failed_write_changes_nothing_and_names_its_cause(tmp_path: Path, site: Site, fault: str) -> None:
    s, clock = home(tmp_path)
    db = tmp_path / "scheduler.db"
    before = memory(s)
    with faults.inject(fault, "scheduler.db", after=site.after):  # type: ignore[arg-type]
        try:
            answer = site.act(s, clock)
        except StoreFault as exc:
            answer = exc
        if site.name.startswith("end (walltime)"):
            assert answer == site.after  # the tick went on; the end waits for the store (the instance's, or its request's)
        else:
            assert code_of(answer) == CODE[fault], answer
            assert str(db) in str(answer if isinstance(answer, StoreFault) else answer.failures[0].reason)
            assert "rollback" not in str(answer) and "Traceback" not in str(answer)
        lagging = site.name.startswith("end (walltime)")  # the host ended it itself: the book says so once it can write
        consistent(s, db, audit=not lagging, half_done=True)
        if site.after == 0:  # not a trace (the id stays free); the host's own end aside
            assert {k: v for k, v in memory(s).items() if not lagging or k != "running"} == \
                   {k: v for k, v in before.items() if not lagging or k != "running"}
        s.tick()  # still full: the tick serves on, and settles nothing it cannot write
        consistent(s, db, audit=not lagging, half_done=True)
    # space is back: the same objects carry on, with no restart
    s.tick()
    consistent(s, db)
    if site.new is not None:
        if site.after == 0:
            s.scheduler.scheduleObjects(ahead(site.new, clock() + 3600) if "ahead" in site.name else req(site.new, cpus=2))
        clock.advance(51)  # "a" ends: room for what waits
        s.tick()
        s.tick()
        assert s.scheduler.request_info(site.new).state in ("running", "reserved")
    consistent(s, db)


def test_status_says_the_store_is_full_and_where_and_how_big(tmp_path: Path) -> None:
    from legionrm.scheduler.door import status_for

    s, _ = home(tmp_path)
    with faults.inject("full", "scheduler.db"):
        with pytest.raises(StoreFault):
            s.scheduler.scheduleObjects(req("b", cpus=2))
        store = status_for(s.scheduler, None, None).store  # a read: it works on a full disk
    assert store["path"] == str(tmp_path / "scheduler.db") and store["bytes"] > 0
    assert store["fault"].startswith(f"{codes.STATE_DISK_FULL}: cannot write the state store {tmp_path}")
    s.scheduler.scheduleObjects(req("b", cpus=2))
    assert "fault" not in status_for(s.scheduler, None, None).store  # a write succeeded: it says so no more


@pytest.mark.parametrize("site", SITES, ids=[s.name for s in SITES])
def test_a_crash_between_write_and_apply_loses_nothing_acknowledged(tmp_path: Path, site: Site) -> None:
    s, clock = home(tmp_path)
    acknowledged = {i.id: i.state for i in s.scheduler.list_requests()}
    with faults.inject("crash", "scheduler.db", times=1, after=site.after), pytest.raises(faults.Crash):
        site.act(s, clock)
    new = restarted(s, RequestStore(tmp_path / "scheduler.db"))  # the same home, a new process
    after = {i.id: i.state for i in new.list_requests()}
    assert set(acknowledged) <= set(after)
    assert set(after) - set(acknowledged) <= {site.new}
    for rid in acknowledged:  # each as acknowledged, or moved on by the write that crashed
        assert after[rid] == acknowledged[rid] or site.new is None


# --- host state: a grant is handed out only once written; the heartbeat goes on ----------------------------


ANN = Holder(user="ann", class_name="W")


def ask(rid: str) -> ReservationRequest:
    return ReservationRequest(request_id=rid, resource="h1", holder=ANN, resources=Resources(cpus=1), duration_s=600)


def open_host(path: Path, clock: FakeClock) -> tuple[HostObject, Keeper]:
    h = HostObject("h1", Resources(cpus=4, memory_gb=8), clock=clock)
    keeper = Keeper.open(str(path), [h])
    assert keeper is not None
    return h, keeper


def booked(h: HostObject) -> list[str]:
    return sorted(t.token_id for t in h.reservations())


@pytest.mark.parametrize("fault", ["full", "io"])
def test_a_host_refuses_what_it_cannot_write_and_keeps_beating(tmp_path: Path, fault: str) -> None:
    clock = FakeClock()
    h, keeper = open_host(tmp_path / "hostgroup-g.db", clock)
    first = keeper.kept(h.make_reservation(ask("r1")))
    assert isinstance(first, ReservationToken)
    before = booked(h)
    with faults.inject(fault, "hostgroup-g.db"):  # type: ignore[arg-type]
        got = keeper.kept([h.make_reservation(ask("r2"))])
        assert isinstance(got[0], Refusal) and got[0].code == CODE[fault] and "hostgroup-g.db" in got[0].reason
        assert booked(h) == before  # the grant was taken back
        attrs = h.heartbeat()  # degraded, not lost: it beats and says why
        assert attrs["degraded"].startswith(CODE[fault])
        assert keeper.kept(h.expire()) == []  # a beat's save that fails raises nothing
    assert keeper.kept(None) is None and "degraded" not in h.heartbeat()  # space back: no restart needed
    assert isinstance(keeper.kept(h.make_reservation(ask("r3"))), ReservationToken)


@pytest.mark.parametrize("fault", ["full", "io"])
def test_a_host_stops_an_instance_it_cannot_write_and_keeps_beating(tmp_path: Path, fault: str) -> None:
    h, keeper = open_host(tmp_path / "hostgroup-g.db", FakeClock())
    token = keeper.kept(h.make_reservation(ask("r1")))
    with faults.inject(fault, "hostgroup-g.db"):  # type: ignore[arg-type]
        got = keeper.kept(h.start_object(token, "W", ANN))
        assert isinstance(got, Refusal) and got.code == CODE[fault] and "hostgroup-g.db" in got.reason
        assert h.list_instances() == []  # nothing runs that a restart would forget
        assert h.heartbeat()["degraded"].startswith(CODE[fault])
    started = keeper.kept(h.start_object(keeper.kept(h.make_reservation(ask("r2"))), "W", ANN))
    assert not isinstance(started, Refusal) and [i.instance_id for i in h.list_instances()] == [started.instance_id]


def test_a_grant_written_before_stands_when_asked_again_on_a_full_disk(tmp_path: Path) -> None:
    h, keeper = open_host(tmp_path / "h.db", FakeClock())
    first, second = keeper.kept([h.make_reservation(ask("r1")), h.make_reservation(ask("r2"))])
    with faults.inject("full", "h.db"):
        assert keeper.kept(h.cancel_reservation(second.token_id)) is True  # a release stays done, written later
        assert keeper.kept([h.make_reservation(ask("r1"))]) == [first]  # the Enactor asks again: the same grant
    assert booked(h) == [first.token_id]


def test_a_host_crash_after_its_write_keeps_every_acknowledged_grant(tmp_path: Path) -> None:
    clock = FakeClock()
    h, keeper = open_host(tmp_path / "h.db", clock)
    acknowledged = booked(h) + [keeper.kept(h.make_reservation(ask("r1"))).token_id]
    with faults.inject("crash", "h.db", times=1), pytest.raises(faults.Crash):
        keeper.kept(h.make_reservation(ask("r2")))
    again, _ = open_host(tmp_path / "h.db", clock)  # the actor restarted on the same file
    assert set(acknowledged) <= set(booked(again))


# --- vault state: a state that cannot be written leaves the old one, booked -------------------------------


def vault(root: Path, clock: FakeClock) -> VaultObject:
    return VaultObject("v1", Resources(storage_gb=1), clock=clock, shelf=DirectoryShelf(root))


@pytest.mark.parametrize("fault", ["full", "io"])
def test_a_vault_keeps_the_old_state_when_the_new_one_cannot_be_written(tmp_path: Path, fault: str) -> None:
    v = vault(tmp_path / "shelf", FakeClock())
    assert v.put_state("o1", b"old", "ann") == 3
    with faults.inject(fault, "shelf"):  # type: ignore[arg-type]
        got = v.put_state("o1", b"newer", "ann")
    assert isinstance(got, Refusal) and got.code == CODE[fault] and "shelf" in got.reason
    assert v.stored() == {"o1": 3} and v.get_state("o1") == b"old"
    assert list((tmp_path / "shelf").iterdir()) == [tmp_path / "shelf" / "o1.state"]  # no temporary left
    assert v.put_state("o1", b"newer", "ann") == 5


def test_a_vault_crash_leaves_the_old_state_or_the_new_one(tmp_path: Path) -> None:
    v = vault(tmp_path / "shelf", FakeClock())
    v.put_state("o1", b"old", "ann")
    with faults.inject("crash", "shelf", times=1), pytest.raises(faults.Crash):
        v.put_state("o1", b"newer", "ann")
    assert DirectoryShelf(tmp_path / "shelf").get("o1") in (b"old", b"newer")


# --- accounting records: written by a later sweep ----------------------------------------------------------


def test_accounting_records_wait_for_the_store(tmp_path: Path) -> None:
    from legionrm.state import AccountingStore

    s, clock = home(tmp_path)
    s.scheduler.results.store = AccountingStore(tmp_path / "scheduler.db")
    clock.advance(51)
    with faults.inject("full", "scheduler.db", after=2):  # the end and the completion pass; the records do not
        for _ in range(3):
            s.tick()
        assert s.scheduler.request_info("a").state == "completed"
        assert s.scheduler.results.store.fault is not None and s.scheduler.results.store.ids() == set()
    for _ in range(2):
        s.tick()
    assert s.scheduler.results.store.ids() != set() and s.scheduler.results.store.fault is None
