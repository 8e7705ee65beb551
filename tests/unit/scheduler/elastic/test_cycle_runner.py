"""The cycle's clock: the runner thread runs a cycle on an arrival, waits while
idle, and survives a failing cycle."""

from __future__ import annotations

import pytest

from legionrm.scheduler.elastic.runner import CycleRunner
from tests.unit.scheduler.elastic.test_cycle import job, world


@pytest.fixture
def runner():
    w = world(hosts=2)
    r = CycleRunner(w.cycle, poll_s=0.01)
    yield w, r
    r.stop()


def test_an_arrival_runs_a_cycle_on_the_thread(runner) -> None:
    w, r = runner
    r.start()
    assert r.wait_reports(0, 0.05) == []  # idle: no jobs, no cycle
    w.cycle.submit(job("j1", "ann"))
    r.kick()
    report = r.wait_reports(0, 10)[0]
    assert report.triggers[0] == "arrival j1"
    assert report.jobs["j1"].processes == 16  # two 32 GB hosts of 4 GB processes


def test_run_now_publishes_to_waiters(runner) -> None:
    w, r = runner
    w.cycle.submit(job("j1", "ann"))
    first = r.run_now()
    w.cycle.complete("j1")
    second = r.run_now()
    assert r.wait_reports(0, 0) == [first, second]
    assert r.wait_reports(first.cycle, 0) == [second] and r.wait_reports(second.cycle, 0.01) == []
    assert len(second.shrank) == first.jobs["j1"].processes


def test_a_failing_cycle_is_counted_and_retried(runner, monkeypatch) -> None:
    w, r = runner
    calls = {"n": 0}
    real = w.collection.snapshot

    def flaky():
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("collection timed out")
        return real()

    monkeypatch.setattr(w.collection, "snapshot", flaky)
    w.cycle.submit(job("j1", "ann"))
    r.start()
    report = r.wait_reports(0, 10)[0]
    assert r.errors == 1 and report.jobs["j1"].processes == 16


def test_stop_is_idempotent(runner) -> None:
    _, r = runner
    r.start()
    r.stop()
    r.stop()
    assert r._thread is None
