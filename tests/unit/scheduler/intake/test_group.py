"""Submits and cancels in groups: one reply per request, in order; one durable write for a group;
a group write that fails answers every member with the fault and changes nothing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm import faults
from legionrm.errors import SchedulingError
from legionrm.inprocess import LocalSystem
from legionrm.models import RequestInfo, SchedulerResponse, SchedulerSettings
from legionrm.scheduler.wiring import pool_gate
from legionrm.state import RequestStore, StoreFault
from legionrm.testing import FakeClock
from tests.unit.scheduler.test_lifecycle import cluster, req


def system(path) -> LocalSystem:  # type: ignore[no-untyped-def]
    spec = cluster()
    return LocalSystem(spec, clock=FakeClock(), pools=pool_gate(spec), store=RequestStore(path),
                       settings=SchedulerSettings(cluster=spec))


def held(rid: str, **kw):  # type: ignore[no-untyped-def]
    return req(rid, **kw).model_copy(update={"hold": "user"})


def stored(path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each request the store's file holds (read afresh, as a restart would), and its state."""
    store = RequestStore(path)
    try:
        return {item.request.request_id: item.state for item in store.load()}
    finally:
        store.close()


# one group: some held (they wait), some plain (tried now: the first fits, the rest wait behind it),
# a repeated id, and one that must be answered at once (wait = false)
KINDS = st.sampled_from(["held", "plain", "repeat", "nowait", "bad"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(KINDS, min_size=1, max_size=12))
def test_a_groups_replies_match_its_requests_one_to_one(tmp_path_factory, kinds) -> None:
    path = tmp_path_factory.mktemp("g") / "r.db"
    s = system(path)
    requests = []
    for n, kind in enumerate(kinds):
        rid = f"r{n}"
        if kind == "held":
            requests.append(held(rid))
        elif kind == "plain":
            requests.append(req(rid, cpus=1))
        elif kind == "repeat" and requests:
            requests.append(requests[0])
        elif kind == "nowait":
            requests.append(req(rid, cpus=1, wait=False))
        else:  # a request no host can ever take
            requests.append(req(rid, cpus=1000))
    replies = s.scheduler.queue.intake.submit(requests)
    assert len(replies) == len(requests)
    first: dict[str, int] = {}
    for n, (request, reply) in enumerate(zip(requests, replies)):
        rid = request.request_id
        if rid in first:  # a repeated id is refused, and only the first one is in the book
            assert isinstance(reply, SchedulingError) and "already scheduled" in str(reply)
            continue
        first[rid] = n
        assert isinstance(reply, SchedulerResponse) and reply.request_id == rid, reply
    on_disk = stored(path)
    for rid in first:
        entry = s.scheduler.book.find(rid)
        assert entry is not None and on_disk.get(rid, entry.state) == entry.state
        if entry.state == "pending":  # acknowledged waiting: on disk as it is in memory
            assert on_disk[rid] == "pending"
    assert set(on_disk) <= set(first)
    # and cancelled as a group: one reply per item, the waiting ones cancelled in one write
    ids = list(first) + ["nobody"]
    got = s.scheduler.queue.intake.cancel([(rid, "bye") for rid in ids])
    assert len(got) == len(ids) and isinstance(got[-1], SchedulingError)
    for rid, info in zip(ids, got[:-1]):
        assert isinstance(info, RequestInfo) and info.id == rid and info.state in ("cancelled", "failed")
    assert all(state in ("cancelled", "failed") for state in stored(path).values())


@pytest.mark.parametrize("fault", ["full", "io"])
def test_a_failed_group_write_answers_every_member_and_changes_nothing(tmp_path, fault) -> None:
    path = tmp_path / "r.db"
    s = system(path)
    requests = [held(f"h{n}") for n in range(5)]
    with faults.inject(fault, match="r.db"):
        replies = s.scheduler.queue.intake.submit(requests)
    assert len(replies) == 5 and all(isinstance(r, StoreFault) for r in replies)
    assert {r.code for r in replies} == {"state.disk_full" if fault == "full" else "state.io_error"}
    assert s.scheduler.book.entries() == [] and stored(path) == {}
    assert s.scheduler.queue.order() == []
    # the ids stay free: the same group goes in once the disk takes it
    assert [r.state for r in s.scheduler.queue.intake.submit(requests)] == ["pending"] * 5
    with faults.inject(fault, match="r.db"):
        gone = s.scheduler.queue.intake.cancel([(r.request_id, "bye") for r in requests])
    assert all(isinstance(g, StoreFault) for g in gone)
    assert {e.state for e in s.scheduler.book.entries()} == {"pending"} and set(stored(path).values()) == {"pending"}


def test_a_group_is_one_durable_write(tmp_path, monkeypatch) -> None:
    """Admitting a group of held requests writes the book once (each with the reason it waits for),
    synced to the disk, whatever the size of the group; cancelling them, once too.  Requests tried
    now and found not to fit wait behind: the group, then their reasons, in a second write."""
    s = system(tmp_path / "r.db")
    writes: list[tuple[int, bool]] = []
    store = s.scheduler.book.store
    real = store.put_many
    monkeypatch.setattr(store, "put_many", lambda items, durable=True, **kw: writes.append((len(items), durable))
                        or real(items, durable, **kw))
    got = s.scheduler.queue.intake.submit([held(f"h{n}") for n in range(40)])
    assert writes == [(40, True)] and {r.failures[0].code for r in got} == {"queue.held"}
    assert [e.reason for e in s.scheduler.book.find("h0").history] == ["submitted", got[0].failures[0].code
                                                                        + ": " + got[0].failures[0].reason]
    writes.clear()
    s.scheduler.queue.intake.cancel([(f"h{n}", "bye") for n in range(40)])
    assert writes == [(40, True)]
    writes.clear()
    got = s.scheduler.queue.intake.submit([req(f"p{n}", cpus=4) for n in range(4)])  # two hosts of 4 cpus
    assert [r.state for r in got] == ["running", "running", "pending", "pending"]
    assert writes[0] == (4, True) and [w for w in writes[1:] if w[1]] == [(1, True)]  # the one behind the other


def test_submits_and_cancels_together_are_one_durable_write(tmp_path, monkeypatch) -> None:
    """:meth:`GroupIntake.take`: the new requests and the cancelled ones in one write, synced; each
    list of replies matches its list."""
    s = system(tmp_path / "r.db")
    s.scheduler.queue.intake.submit([held(f"h{n}") for n in range(10)])
    writes: list[tuple[int, bool]] = []
    store = s.scheduler.book.store
    real = store.put_many
    monkeypatch.setattr(store, "put_many", lambda items, durable=True, **kw: writes.append((len(items), durable))
                        or real(items, durable, **kw))
    done, gone = s.scheduler.queue.intake.take([held(f"n{n}") for n in range(5)],
                                              [(f"h{n}", "bye") for n in range(10)] + [("nobody", "bye")])
    assert writes == [(15, True)]
    assert [r.state for r in done] == ["pending"] * 5
    assert [g.state for g in gone[:10]] == ["cancelled"] * 10 and isinstance(gone[10], SchedulingError)
    assert set(stored(tmp_path / "r.db").values()) == {"pending", "cancelled"}


def test_a_cancelled_group_looks_at_the_pools_charges_only_when_one_was_tried(tmp_path, monkeypatch) -> None:
    """A request never tried (held since its submit) holds no pool charge: cancelling a group of them
    asks the pool owner nothing; a group with one that was tried asks once, and gives back its charge."""
    s = system(tmp_path / "r.db")
    pools = s.scheduler.accounts.pools
    looks: list[int] = []
    real = pools.held
    monkeypatch.setattr(pools, "held", lambda *a: looks.append(1) or real(*a))
    s.scheduler.queue.intake.submit([held(f"h{n}") for n in range(5)])
    assert [g.state for g in s.scheduler.queue.intake.cancel([(f"h{n}", "bye") for n in range(5)])] == ["cancelled"] * 5
    assert looks == []
    got = s.scheduler.queue.intake.submit([req("big", cpus=4), req("tried", cpus=4, count=2)])  # the 2nd waits
    assert [r.state for r in got] == ["running", "pending"] and s.scheduler.book.get("tried").attempts >= 1
    assert [g.state for g in s.scheduler.queue.intake.cancel([("tried", "bye")])] == ["cancelled"]
    assert looks == [1] and "tried" not in real()
