"""Bounded history: a finished request whose accounting is written leaves the
live book (for the store's durable history, or, without a store, for a
bounded memory of the recent ones); ``list`` shows the live and recent ones
and pages through every one kept; ``show`` and the event stream of a settled
request still answer."""

from __future__ import annotations

import gc
from collections import deque

import pytest

from legionrm.errors import ConfigError, SchedulingError
from legionrm.config import parse_cluster
from legionrm.inprocess import LocalSystem
from legionrm.scheduler.door import events_since
from legionrm.models import ClusterSpec, Holder, QueueSpec, Resources, SchedulerSettings, SchedulingRequest
from legionrm.scheduler.wiring import pool_gate
from legionrm.scheduler.watch.settle import list_page
from legionrm.state import RequestStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_lifecycle import cluster, hosts, req


def system(tmp_path=None, keep: int = 1000, keep_s: float = 86_400.0) -> tuple[LocalSystem, FakeClock]:
    clock = FakeClock()
    spec = cluster().model_copy(update={"queue": QueueSpec(history_keep=keep, history_keep_s=keep_s)})
    store = RequestStore(tmp_path / "r.db") if tmp_path is not None else None
    return LocalSystem(spec, clock=clock, pools=pool_gate(spec), store=store,
                       settings=SchedulerSettings(cluster=spec)), clock


def run_and_finish(s: LocalSystem, clock: FakeClock, rids: list[str]) -> None:
    """Each request runs, then is cancelled; two ticks account and settle them."""
    for rid in rids:
        assert s.scheduler.scheduleObjects(req(rid)).ok
        clock.advance(1)
        s.scheduler.cancel(rid, "done")
    s.tick()
    s.tick()


def test_settled_requests_leave_the_live_book_and_the_history_keeps_them(tmp_path) -> None:
    s, clock = system(tmp_path, keep=2)
    run_and_finish(s, clock, ["a", "b", "c"])
    s.scheduler.scheduleObjects(req("live"))
    assert [e.id for e in s.scheduler.book.entries()] == ["live"]  # memory: live work only
    assert not s.scheduler.triggers.has_stream("a")
    info = s.scheduler.request_info("a")
    assert (info.state, info.archived) == ("cancelled", True)
    assert [e.status for e in events_since(s.scheduler, "a")][-2:] == ["ended", "cancelled"]
    assert [i.id for i in s.scheduler.list_requests()] == ["b", "c", "live"]  # the last 2 finished, then live
    assert s.scheduler.book.count_states() == {"cancelled": 2, "running": 1}
    every = list_page(s.scheduler, every=True, limit=2)
    assert [i.id for i in every.requests] == ["a", "b"] and every.next
    rest = list_page(s.scheduler, every=True, limit=2, cursor=every.next)
    assert [i.id for i in rest.requests] == ["c", "live"] and rest.next is None
    assert [i.id for i in list_page(s.scheduler, state="cancelled", every=True).requests] == ["a", "b", "c"]
    assert s.scheduler.results.history(user="alice")  # the accounting records stay


def test_the_recent_window_follows_time(tmp_path) -> None:
    s, clock = system(tmp_path, keep_s=60)
    run_and_finish(s, clock, ["old"])
    clock.advance(120)
    s.tick()  # the hosts report again
    run_and_finish(s, clock, ["new"])
    assert [i.id for i in s.scheduler.list_requests()] == ["new"]
    assert [i.id for i in list_page(s.scheduler, every=True).requests] == ["old", "new"]


def test_a_restart_reads_live_work_only(tmp_path) -> None:
    from tests.unit.scheduler.test_restart import restarted

    s, clock = system(tmp_path)
    run_and_finish(s, clock, ["done"])
    s.scheduler.scheduleObjects(req("live"))
    new = restarted(s, RequestStore(tmp_path / "r.db"))
    assert [e.id for e in new.book.entries()] == ["live"]
    assert new.request_info("done").archived
    assert {i.id for i in new.list_requests()} == {"done", "live"}


def test_without_a_store_the_recent_ones_stay_in_memory_bounded() -> None:
    s, clock = system(keep=2)
    run_and_finish(s, clock, ["a", "b", "c"])
    assert s.scheduler.book.entries() == []
    assert [i.id for i in s.scheduler.list_requests()] == ["b", "c"]
    assert not s.scheduler.request_info("c").archived
    with pytest.raises(SchedulingError, match="no request 'a'"):
        s.scheduler.request_info("a")


def test_the_accounted_instances_are_forgotten_with_their_request(tmp_path) -> None:
    s, clock = system(tmp_path)
    run_and_finish(s, clock, [f"r{i}" for i in range(5)])
    assert s.scheduler.results.settled() == []
    assert not s.scheduler.results._accounted  # noqa: SLF001 - the bound itself is what is tested


def _kept_models() -> dict[str, int]:
    """How many requests, amounts and holders the process holds (after a collection)."""
    gc.collect()
    kinds = (SchedulingRequest, Resources, Holder)
    counts = dict.fromkeys((k.__name__ for k in kinds), 0)
    for obj in gc.get_objects():
        if type(obj) in kinds:
            counts[type(obj).__name__] += 1
    return counts


def test_finished_requests_leave_the_heap(tmp_path) -> None:
    """The models of a finished request go with it: after 400 finished requests the process holds
    no more requests, amounts or holders than after 100 (a table kept by identity for speed, or a
    queue's numbering of the requests it met, would keep one a request)."""
    s, clock = system(tmp_path)
    for host in hosts(s):
        host.retain_s = 0.0  # (a host keeps a closed reservation until its token's expiry: not the Scheduler's)
        host.stopped = deque(maxlen=2)

    def finish(first: int, last: int) -> None:
        for k in range(first, last, 10):
            run_and_finish(s, clock, [f"r{i:04d}" for i in range(k, min(k + 10, last))])
            clock.advance(60)  # (past the tokens' expiry: the hosts forget them)
            s.tick()

    finish(0, 100)
    after_100 = _kept_models()
    finish(100, 400)
    after_400 = _kept_models()
    grew = {k: after_400[k] - after_100[k] for k in after_100}
    assert all(n <= 20 for n in grew.values()), f"300 more finished requests kept {grew} more models"


@pytest.mark.parametrize("cursor", ["x", "1.0", "nan/a", "/a"], ids=["no-slash", "no-id", "nan", "no-time"])
def test_a_bad_cursor_is_named(cursor: str) -> None:
    s, _ = system()
    with pytest.raises(SchedulingError, match="cursor"):
        list_page(s.scheduler, cursor=cursor)


@pytest.mark.parametrize("table,ok", [
    ({"history_keep_s": 3600, "history_keep": 10}, True),
    ({"history_keep": -1}, False),
    ({"history_keep_s": "a day"}, False),
    ({"keep": 3}, False),
], ids=["good", "negative", "text", "unknown-key"])
def test_the_queue_table_keeps_the_history_bounds(table: dict, ok: bool) -> None:
    doc = {"host": [{"name": "h", "attributes": {"cpus": 1}}], "queue": table}
    if ok:
        spec = parse_cluster(doc)
        assert SchedulerSettings(cluster=spec).history_keep == 10
    else:
        with pytest.raises(ConfigError, match="queue"):
            parse_cluster(doc)
    assert SchedulerSettings(cluster=ClusterSpec()).history_keep_s == 86_400.0


def test_a_scheduler_table_with_the_history_bounds_says_they_moved_to_queue() -> None:
    doc = {"host": [{"name": "h", "attributes": {"cpus": 1}}], "scheduler": {"history_keep": 10}}
    with pytest.raises(ConfigError, match=r"history_keep.*\[queue\]"):
        parse_cluster(doc)
