"""Groups that overlap: a group is answered only after a sync that covers its write; while one group's
sync is in the kernel, others check and commit, and one sync answers them; a failed sync answers its
group with the fault and stops the store; groups taken at once from many threads lose nothing."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm import codes, faults
from legionrm.state import StoreFault
from tests.unit.scheduler.intake.test_group import held, stored, system


def take_in_threads(s, groups):  # type: ignore[no-untyped-def]
    """Each group of ``(submits, cancels)`` taken by a thread of its own, all at once; their replies."""
    out: dict[int, object] = {}
    start = threading.Barrier(len(groups))

    def one(k: int) -> None:
        start.wait()
        out[k] = s.scheduler.queue.intake.take(*groups[k])

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(groups))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [out[k] for k in range(len(groups))]


def test_a_group_is_answered_only_after_its_sync(tmp_path) -> None:
    s = system(tmp_path / "r.db")
    group = s.scheduler.book.store._group
    in_kernel, release = threading.Event(), threading.Event()
    real = group._sync
    group._sync = lambda: (in_kernel.set(), release.wait(30), real())
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(s.scheduler.queue.intake.submit([held(f"h{n}") for n in range(3)])))
    t.start()
    in_kernel.wait(30)
    assert got == [] and s.scheduler.book.get("h0") is not None  # committed, in the book, not answered
    release.set()
    t.join()
    assert [r.state for r in got[0]] == ["pending"] * 3 and group.syncs == 1


def test_groups_that_commit_during_a_sync_are_answered_by_one_more(tmp_path) -> None:
    """Three groups at once: the first sync is held in the kernel until the other two committed; one
    more sync answers both, and every request is on disk as answered."""
    s = system(tmp_path / "r.db")
    group = s.scheduler.book.store._group
    others = threading.Event()
    real_sync, real_committed = group._sync, group.committed

    def committed() -> int:
        ticket = real_committed()
        if ticket >= 3:
            others.set()
        return ticket

    group.committed = committed
    group._sync = lambda: (others.wait(30), real_sync())
    got = take_in_threads(s, [([held(f"{k}{n}") for n in range(4)], []) for k in "abc"])
    assert others.is_set() and group.syncs == 2
    assert [r.state for done, _ in got for r in done] == ["pending"] * 12
    assert stored(tmp_path / "r.db") == {f"{k}{n}": "pending" for k in "abc" for n in range(4)}


def test_a_failed_sync_answers_its_group_with_the_fault_and_stops_the_store(tmp_path) -> None:
    s = system(tmp_path / "r.db")
    with faults.inject("sync", "r.db", times=1):
        got = s.scheduler.queue.intake.submit([held(f"h{n}") for n in range(3)])
    assert all(isinstance(r, StoreFault) and r.code == codes.STATE_IO_ERROR for r in got)
    later = s.scheduler.queue.intake.take([held("late")], [("h0", "bye")])
    assert isinstance(later[0][0], StoreFault) and later[0][0].code == codes.STATE_IO_ERROR
    assert s.scheduler.book.store.fault is got[0]  # what status shows: the store stopped


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=5), cancel_every=st.integers(1, 3))
def test_groups_taken_at_once_lose_nothing_and_double_nothing(tmp_path_factory, sizes, cancel_every) -> None:
    """Threads take groups of submits at once, then groups of cancels of some of them: each request is
    answered once, the book and the file agree, and every cancel asked for is made."""
    path = tmp_path_factory.mktemp("o") / "r.db"
    s = system(path)
    groups = [([held(f"g{k}-{n}") for n in range(size)], []) for k, size in enumerate(sizes)]
    got = take_in_threads(s, groups)
    ids = [r.request_id for done, _ in got for r in done]
    assert len(ids) == len(set(ids)) == sum(sizes)
    cancels = [([], [(rid, "bye") for rid in ids[k::len(sizes)] if int(rid.rsplit("-", 1)[1]) % cancel_every == 0])
               for k in range(len(sizes))]
    gone = take_in_threads(s, cancels)
    cancelled = {g.id for _, replies in gone for g in replies if g.state == "cancelled"}
    assert cancelled == {rid for _, c in cancels for rid, _ in c}
    want = {rid: "cancelled" if rid in cancelled else "pending" for rid in ids}
    assert stored(path) == want == {e.id: e.state for e in s.scheduler.book.entries()}
