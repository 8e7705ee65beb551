"""The auditor sees each inconsistency, by name, and ``--repair`` fixes it.

Each case builds one inconsistency in an in-process system (a store under
tmp_path, pools, one class), then: the audit names it (its code and its
subject), :func:`repair` says what it did, and a second audit finds nothing.
"""

from __future__ import annotations

from typing import Callable

import pytest

from legionrm import codes
from legionrm.inprocess import LocalSystem
from legionrm.models import Holder, ReservationRequest, ReservationToken, Resources
from legionrm.scheduler.audit import audit, repair, views_of
from legionrm.scheduler.wiring import pool_gate
from legionrm.state import RequestStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_lifecycle import cluster, hosts, req


def system(tmp_path, pools: bool = True) -> LocalSystem:
    spec = cluster(pools=pools)  # without pools: the open gate, which keeps what it admitted too
    return LocalSystem(spec, clock=FakeClock(), pools=pool_gate(spec), store=RequestStore(tmp_path / "r.db"))


def views(s: LocalSystem) -> list:
    return views_of([*hosts(s), *s.vaults.values()])


def findings(s: LocalSystem) -> list:
    return audit(s.scheduler, views(s), {n: [r.instance_id for r in c.list_instances()] for n, c in s.classes.items()})


def running(s: LocalSystem, rid: str = "r"):
    """Run one request; (its entry, its one instance's ref)."""
    assert s.scheduler.scheduleObjects(req(rid, cpus=2)).ok
    entry = s.scheduler.book.get(rid)
    [ref] = entry.refs.values()
    return entry, ref


def running_ended(s: LocalSystem) -> str:
    """Its instance stops on its host and ends in the book, but the request is never finished."""
    _, ref = running(s)
    s.scheduler.enactment.stop(ref, "gone")
    s.scheduler.book.end_instance(ref.instance_id, "ended", "gone")
    return "r"


def unplaced(s: LocalSystem) -> str:
    """Admitted to its pool, and then nothing places it."""
    entry = s.scheduler.book.add(req("u", cpus=2))
    assert s.scheduler.accounts.admit(entry.request) is None
    s.scheduler.book.move(entry, "admitted", "admitted to pool /batch")
    return "u"


def charged_for_nothing(s: LocalSystem) -> str:
    """The pools charge a request the Scheduler never admitted."""
    assert s.scheduler.accounts.pools.admit(req("ghost", cpus=2)) is None
    return "ghost"


def forgotten_by_the_pools(s: LocalSystem) -> str:
    """A running request the pools no longer charge."""
    running(s)
    s.scheduler.accounts.pools.release("r")
    return "r"


def orphan(s: LocalSystem) -> str:
    """The request ended in the book; its instance still runs on its host."""
    entry, ref = running(s)
    s.scheduler.book.end_instance(ref.instance_id, "ended", "gone")
    s.scheduler.book.finish(entry, "completed", "gone")
    s.scheduler.accounts.book_back(entry)
    return ref.instance_id


def ghost(s: LocalSystem) -> str:
    """The instance stopped on its host; the book still counts it running."""
    _, ref = running(s)
    s.scheduler.enactment.stop(ref, "gone")
    return ref.instance_id


def ghost_counted(s: LocalSystem) -> str:
    """The instance stopped on its host alone: the book still counts it running, and so does its class."""
    _, ref = running(s)
    s.host(ref.host).stop_object(ref.instance_id, "gone")
    return ref.instance_id


def unheld(s: LocalSystem) -> str:
    """A reservation open for long, used by nobody."""
    tok = s.host("h0").make_reservation(ReservationRequest(
        request_id="stray", resource="h0", holder=Holder(user="alice"), resources=Resources(cpus=1, memory_gb=1),
        timeout_s=3600))
    assert isinstance(tok, ReservationToken), tok
    return tok.token_id


def only_in_the_store(s: LocalSystem) -> str:
    """The durable book holds a waiting request the live one lost."""
    assert s.scheduler.book.store is not None
    s.scheduler.book.store.put(request=req("lost", cpus=2), submitted=0.0, state="pending", reason="submitted",
                               history=[], instances={}, refs={}, failures=(), earliest_start=None, attempts=0)
    return "lost"


def only_in_memory(s: LocalSystem) -> str:
    """The durable book lost a running request the live one holds."""
    running(s)
    assert s.scheduler.book.store is not None
    s.scheduler.book.store.settle({"r": 0.0})  # gone from its live table
    return "r"


CASES: dict[str, tuple[Callable[[LocalSystem], str], str]] = {
    "running-with-every-instance-ended": (running_ended, codes.REQUEST_RUNNING_ENDED),
    "admitted-and-placed-by-nobody": (unplaced, codes.REQUEST_UNPLACED),
    "a-pool-charges-nobody": (charged_for_nothing, codes.POOL_ALLOCATION),
    "the-pools-forgot-a-request": (forgotten_by_the_pools, codes.POOL_ALLOCATION),
    "an-orphan-instance": (orphan, codes.INSTANCE_ORPHAN),
    "a-ghost-instance": (ghost, codes.INSTANCE_GHOST),
    "a-ghost-instance-its-class-counts": (ghost_counted, codes.INSTANCE_GHOST),
    "a-reservation-held-for-nobody": (unheld, codes.RESERVATION_UNHELD),
    "a-request-only-the-durable-book-holds": (only_in_the_store, codes.BOOK_DURABLE),
    "a-request-only-the-live-book-holds": (only_in_memory, codes.BOOK_DURABLE),
}


@pytest.mark.parametrize("pools", [True, False], ids=["pools", "no-pools"])
@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_the_audit_names_it_and_repair_fixes_it(tmp_path, name: str, pools: bool) -> None:
    build, code = CASES[name]
    s = system(tmp_path, pools)
    assert findings(s) == []
    subject = build(s)
    found = findings(s)
    assert (code, subject) in {(f.code, f.subject) for f in found}, found
    done = repair(s.scheduler, found, views(s), lambda res, tok: s.host(res).cancel_reservation(tok))
    [mine] = [f for f in done if (f.code, f.subject) == (code, subject)]
    assert mine.repaired, mine
    assert findings(s) == []


def test_repair_says_nothing_was_done_when_it_had_changed_already(tmp_path) -> None:
    s = system(tmp_path)
    running_ended(s)
    found = findings(s)
    repair(s.scheduler, found, views(s))
    again = repair(s.scheduler, found, views(s))  # the same findings, once more
    assert [f.repaired for f in again if f.code == codes.REQUEST_RUNNING_ENDED] == ["nothing: it had changed already"]
