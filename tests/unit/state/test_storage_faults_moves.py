"""Storage faults at the request book's write sites of the object moves
(issue 28): deactivate, activate and migrate write the book before they
tell the world (the running copy stops only once the book says inert; the
state leaves its vault only once the book says the new copy runs).

A full disk and an I/O error at each write: the caller is refused with the
store's code and file, the book is its store, the audit is clean, the object
is where the book says (running where it ran, or inert with its state in
the vault the book names) and nothing else runs; once space returns the same
move succeeds.  A crash between the write and the apply is followed by a
restart on the same store: the object is found, running or inert with its
state, and a move carries it on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from legionrm import codes, faults
from legionrm.inprocess import LocalSystem
from legionrm.models import ObjectStatus, Refusal
from legionrm.scheduler.wiring import pool_gate
from legionrm.state import RequestStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_lifecycle import books_balance
from tests.unit.scheduler.test_mobility import cluster, start, stored
from tests.unit.scheduler.test_restart import restarted
from tests.unit.state.test_storage_faults import durable

CODE = {"full": codes.STATE_DISK_FULL, "io": codes.STATE_IO_ERROR}
DB = "scheduler.db"
STATE = b"count=3"


def home(tmp_path: Path, inert: bool) -> tuple[LocalSystem, str]:
    """A system over the state store in ``tmp_path`` with one object of "r1"
    on a1 holding :data:`STATE` (``inert``: deactivated into va); its id."""
    spec = cluster()
    s = LocalSystem(spec, clock=FakeClock(), pools=pool_gate(spec), store=RequestStore(tmp_path / DB))
    ref = start(s, "r1", "a1", STATE, constraint='$name == "a1" or $name == "a2"')
    if inert:
        assert isinstance(s.mobility.deactivate(ref.instance_id), ObjectStatus)
    return s, ref.instance_id


@dataclass(frozen=True)
class Site:
    """One write site: ``act`` moves the object (its first ``after`` writes pass); it starts ``inert`` or not."""

    name: str
    act: Callable[[LocalSystem, str], Any]
    inert: bool
    after: int = 0


SITES = [
    Site("deactivate", lambda s, oid: s.mobility.deactivate(oid), False),
    Site("activate", lambda s, oid: s.mobility.activate(oid), True),
    Site("migrate: old copy written inert", lambda s, oid: s.mobility.migrate(oid, '$name == "a2"'), False),
    Site("migrate: new copy written running", lambda s, oid: s.mobility.migrate(oid, '$name == "a2"'), False, 1),
]


def where(s: LocalSystem, oid: str) -> tuple[str, str | None, bytes | None]:
    """Where the object is by the book, and what its place holds: (state, host or vault, the state held there)."""
    got = s.mobility.status(oid)
    assert isinstance(got, ObjectStatus), got
    if got.state == "running":
        assert got.host is not None and got.instance is not None
        return "running", got.host, s.host(got.host).states.get(got.instance.instance_id)
    assert got.vault is not None
    return "inert", got.vault, s.vaults[got.vault].get_state(got.object_id)


def consistent(s: LocalSystem, path: Path) -> None:
    """The book is its store, and the audit finds nothing."""
    book = {e.id: (e.state, tuple((k, x.state) for k, x in e.instances.items())) for e in s.scheduler.book.entries()}
    assert book == durable(path)
    assert books_balance(s) == []


def running(s: LocalSystem) -> set[str]:
    return {r.instance_id for g in s.groups.values() for r in g.list_instances()}


@pytest.mark.parametrize("fault", ["full", "io"])
@pytest.mark.parametrize("site", SITES, ids=[s.name for s in SITES])
def test_a_move_the_book_cannot_write_is_refused_and_leaves_the_object_whole(tmp_path: Path, site: Site,
                                                                            fault: str) -> None:
    s, oid = home(tmp_path, site.inert)
    before = (where(s, oid), stored(s), running(s))
    with faults.inject(fault, DB, after=site.after):  # type: ignore[arg-type]
        got = site.act(s, oid)
    assert isinstance(got, Refusal) and got.code == CODE[fault], got
    assert str(tmp_path / DB) in got.reason and "rollback" not in got.reason
    consistent(s, tmp_path / DB)
    state, _, held = where(s, oid)
    assert held == STATE  # the object is where the book says, its state with it
    assert running(s) == (set() if state == "inert" else {s.mobility.status(oid).instance.instance_id})
    if site.after == 0:
        assert (where(s, oid), stored(s), running(s)) == before  # nothing changed
    # space is back: the same objects carry on, with no restart
    again = s.mobility.activate(oid) if state == "inert" else site.act(s, oid)
    assert isinstance(again, ObjectStatus), again
    consistent(s, tmp_path / DB)
    assert where(s, oid)[2] == STATE


@pytest.mark.parametrize("site", SITES, ids=[s.name for s in SITES])
def test_a_crash_between_a_moves_write_and_its_apply_keeps_the_object(tmp_path: Path, site: Site) -> None:
    s, oid = home(tmp_path, site.inert)
    with faults.inject("crash", DB, times=1, after=site.after), pytest.raises(faults.Crash):
        site.act(s, oid)
    restarted(s, RequestStore(tmp_path / DB))  # the same home, a new process
    s.tick()
    state, _, held = where(s, oid)
    if state == "inert":  # written inert: the copy the crash left running is an orphan, and the sweep stops it
        assert held == STATE
        assert isinstance(s.mobility.activate(oid), ObjectStatus)
    assert where(s, oid)[0] == "running"


@pytest.mark.parametrize("fault", ["full", "io"])
def test_an_ended_requests_inert_object_keeps_its_state_until_it_is_written_stopped(tmp_path: Path,
                                                                                   fault: str) -> None:
    s, oid = home(tmp_path, inert=True)
    with faults.inject(fault, DB, after=1):  # type: ignore[arg-type]  # the cancel is written, the object not
        s.scheduler.cancel("r1")
    consistent(s, tmp_path / DB)
    assert s.scheduler.request_info("r1").state == "cancelled"
    assert stored(s) == {"va": {oid: len(STATE)}}  # written inert: its state stays where the book says
