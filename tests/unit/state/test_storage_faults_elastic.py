"""Storage faults at every write site of the elastic cycle's book (issue 28):
the jobs, their processes, their stops owed and their pool charges, written
to the elastic state store before the cycle acts on them.

Each site is met by a full disk and an I/O error (through the one seam,
:mod:`legionrm.faults`): the caller (or the cycle) gets the store's code,
the book in memory is what the store holds, the pools charge what the book
says, the hosts run nothing the book does not know; a caller's call changed
nothing at all; and once space returns the same cycle carries on to the
same steady state.  A crash between the write and the apply is followed by
a restart on the same file, which takes every acknowledged job back and
leaves nothing orphaned or doubled."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from legionrm import codes, faults
from legionrm.scheduler.elastic.charges import pool_id
from legionrm.state import ElasticStore, StoredElasticJob, StoreFault
from tests.unit.scheduler.elastic.test_cycle import job
from tests.unit.scheduler.elastic.test_cycle_restart import (
    Gate,
    World,
    booted,
    crash_one,
    restart,
    running,
)

CODE = {"full": codes.STATE_DISK_FULL, "io": codes.STATE_IO_ERROR}
DB = "elastic.db"


def home(tmp_path: Path) -> tuple[World, Gate]:
    """Two 16 GB hosts; jobs "a" and "b" at their fair share (4 processes each), acknowledged and written."""
    gate = Gate()
    w = booted(tmp_path / DB, gate, hosts=2, memory_gb=16)
    w.cycle.submit(job("a", "ann"))
    w.cycle.submit(job("b", "bob"))
    w.run(2)
    assert len(w.cycle.instance_ids()) == 8
    return w, gate


def tick(w: World) -> Any:
    """One cycle, as the runner runs it: on the timer, after the hosts beat."""
    w.clock.advance(10)
    w.beat()
    return w.cycle.run_once()


@dataclass(frozen=True)
class Site:
    """One write site: ``act`` makes the write (its first ``after`` writes pass); ``call``: a caller's call."""

    name: str
    act: Callable[[World], Any]
    after: int = 0
    call: bool = True


def victim(w: World) -> str:
    return sorted(w.cycle.instance_ids())[0]


def ended(w: World) -> str:
    """One of the cycle's processes ends by itself (its host and class know); its id."""
    gone = crash_one(w)
    w.worker.instance_stopped(gone)
    return gone


def arrival(w: World) -> Any:
    """A third job arrives (one write) and a cycle evicts for it (two writes per stop) and charges the pools."""
    w.cycle.submit(job("c", "cat"))
    return tick(w)


def completion(w: World) -> Any:
    """Job "a" completes (one write) and a cycle stops its processes (two writes each), grows "b" and charges it."""
    w.cycle.complete("a")
    return tick(w)


SITES = [
    Site("submit", lambda w: w.cycle.submit(job("c", "cat"))),
    Site("update", lambda w: w.cycle.update("a", max_processes=2)),
    Site("investment", lambda w: w.cycle.report_investment({victim(w): 5.0})),
    Site("instance gone", lambda w: w.cycle.instance_gone(ended(w), "crashed")),
    Site("complete", lambda w: w.cycle.complete("a")),
    Site("cycle: eviction written owed", arrival, 1, False),
    Site("cycle: eviction done", arrival, 2, False),
    Site("cycle: pool charge after evictions", arrival, 5, False),
    Site("cycle: a completed job's stop", completion, 1, False),
    Site("cycle: growth", completion, 9, False),
    Site("cycle: pool charge after growth", completion, 10, False),
]


def key(row: StoredElasticJob) -> tuple:
    """A job as written, in an order-free form."""
    return (row.request, row.ducc_class, row.submitted, row.active, row.charged,
            frozenset((s.share, s.instance.instance_id, s.investment_ms) for s in row.shares),
            frozenset((o.instance.instance_id, o.share, o.reason) for o in row.owed))


def memory(w: World, gate: Gate) -> dict[str, Any]:
    """The cycle's memory: each job as its book would write it now, the pool charges, the processes it knows."""
    c = w.cycle
    assert c.book is not None
    jobs = set(c.ledger.jobs) | set(c.book._known)
    rows = {j: key(r) for j in jobs if (r := c.book.row(c, j)) is not None and not r.empty}
    return {"book": rows, "pools": dict(gate.charged), "known": c.instance_ids() | set(c.ledger.owed),
            "core": {j: sorted(x.shares) for j, x in w.core.jobs.items()}}


def durable(path: Path) -> dict[str, tuple]:
    store = ElasticStore(path)
    try:
        return {r.job_id: key(r) for r in store.load()}
    finally:
        store.close()


def consistent(w: World, gate: Gate, path: Path) -> None:
    """The book is its store; the pools charge what the book says; the hosts run only what the book knows."""
    mem = memory(w, gate)
    assert mem["book"] == durable(path)
    charges = w.cycle.charges
    assert charges is not None
    assert gate.charged == {pool_id(j): charges.charged(j) for j in w.cycle.ledger.jobs if charges.charged(j)}
    assert running(w) <= mem["known"]


def settled(w: World, gate: Gate, path: Path) -> None:
    """Space is back: a few cycles reach the steady state, everything written and nothing orphaned."""
    for _ in range(3):
        tick(w)
    consistent(w, gate, path)
    assert running(w) == w.cycle.instance_ids() and not w.cycle.ledger.owed
    report = w.cycle.last_report
    assert report is not None and sum(j.processes for j in report.jobs.values()) == 8  # the hosts are full again


@pytest.mark.parametrize("fault", ["full", "io"])
@pytest.mark.parametrize("site", SITES, ids=[s.name for s in SITES])
def test_a_failed_elastic_write_changes_nothing_and_names_its_cause(tmp_path: Path, site: Site, fault: str) -> None:
    w, gate = home(tmp_path)
    path = tmp_path / DB
    before = memory(w, gate)
    with faults.inject(fault, DB, after=site.after):  # type: ignore[arg-type]
        with pytest.raises(StoreFault) as caught:
            site.act(w)
        assert caught.value.code == CODE[fault] and str(path) in str(caught.value)
        assert "rollback" not in str(caught.value)
        consistent(w, gate, path)
        if site.call or site.after == 0:  # nothing was written: nothing changed
            assert memory(w, gate) == before
        try:  # still full: the next cycle changes nothing it cannot write (a steady one writes nothing)
            tick(w)
        except StoreFault:
            pass
        consistent(w, gate, path)
    settled(w, gate, path)


@pytest.mark.parametrize("site", SITES, ids=[s.name for s in SITES])
def test_a_crash_between_an_elastic_write_and_its_apply_loses_nothing(tmp_path: Path, site: Site) -> None:
    w, gate = home(tmp_path)
    path = tmp_path / DB
    acknowledged = set(w.cycle.ledger.jobs)
    with faults.inject("crash", DB, times=1, after=site.after), pytest.raises(faults.Crash):
        site.act(w)
    restart(w, path, gate)  # the same file, a new process
    assert acknowledged - {"a"} <= set(w.cycle.ledger.jobs)  # "a" may have completed: its write was made
    settled(w, gate, path)
