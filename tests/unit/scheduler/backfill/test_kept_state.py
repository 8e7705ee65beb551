"""What a queue keeps between passes decides nothing: pass after pass, with
work starting and ending, requests submitted, changed, held, released and
cancelled in between, the site's order and the pass that kept their state
(the order's rows by slot, the walk's shape numbers by the same slots)
give what a fresh order and a fresh pass give on the same queue; and the
top reservation kept through a start is the one found afresh."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.models import ClusterSpec
from legionrm.scheduler.backfill import Backfill
from legionrm.scheduler.backfill.profile import Profile, Usage
from legionrm.scheduler.backfill.reference import ReferenceBackfill
from legionrm.scheduler.backfill.synthetic import CpuQueue, request
from legionrm.scheduler.backfill.top import Top
from legionrm.scheduler.priority import SitePolicy, site_settings
from legionrm.scheduler.priority.slots import Slots
from legionrm.scheduler.requests import Entry
from tests.unit.scheduler.backfill.test_fast_pass import SHAPE, WALL, queues

SETTINGS = site_settings(ClusterSpec())

CHANGE = st.tuples(st.sampled_from(["submit", "reshape", "hold", "release", "cancel"]), st.integers(0, 999),
                   SHAPE, WALL)
BETWEEN = st.tuples(st.sampled_from([0.0, 0.3, 0.6, 1.0]), st.lists(CHANGE, max_size=6))


def change(entries: list[Entry], what: str, pick: int, shape: tuple[tuple[int, float], ...],
           wall: float | None) -> None:
    """One change of the queue between passes (a changed request is a new object, as the book makes it)."""
    if what == "submit":
        n = len(entries)
        entries.append(Entry(request(f"s{n:03d}", f"u{pick % 4}", shape, wall), submitted=float(n)))
        return
    waiting = [e for e in entries if e.state == "pending"]
    if not waiting:
        return
    e = waiting[pick % len(waiting)]
    if what == "reshape":
        e.request = request(e.id, e.user, shape, wall).model_copy(update={"hold": e.request.hold})
    elif what in ("hold", "release"):
        e.request = e.request.model_copy(update={"hold": "user" if what == "hold" else None})
    else:
        e.state = "cancelled"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(q=queues(), rules=st.sampled_from([("easy", 1), ("easy", 2), ("greedy", 0), ("fcfs", 0)]),
       steps=st.lists(BETWEEN, min_size=1, max_size=4), slack=st.sampled_from([0, 2, Slots.SLACK, 1000]))
def test_a_queue_that_kept_its_state_decides_as_a_fresh_one(q: CpuQueue, rules: tuple[str, int],
                                                            steps: list[tuple[float, list]], slack: int) -> None:
    entries = list(q.order)
    with patch.object(Slots, "SLACK", slack):  # 0, 2: numbered afresh every few passes; the default; 1000: never here
        site = SitePolicy(SETTINGS, None, lambda: 0.0, float(q.total.sum()))
        kept = q.rules(Backfill, *rules)  # type: ignore[arg-type]
        for k, (ended, changes) in enumerate([(0.0, [])] + steps):
            for c in changes:
                change(entries, *c)
            q.order = site.order(entries, now=0.0)
            cached = q.run(kept)
            fresh_order = SitePolicy(SETTINGS, None, lambda: 0.0, float(q.total.sum())).order(entries, now=0.0)
            assert [e.id for e in q.order] == [e.id for e in fresh_order]
            q.order = list(fresh_order)  # (a plain list: the fresh pass numbers the requests itself)
            fresh, slow = q.run(Backfill, *rules), q.run(ReferenceBackfill, *rules)  # type: ignore[arg-type]
            assert (cached.started, cached.reserved) == (fresh.started, fresh.reserved)
            assert (cached.started, cached.reserved) == (slow.started, slow.reserved)
            q.settle(cached, ended, seed=k)


SMALL = st.sampled_from([0.5, 1.0, 2.0, 4.0])


@settings(max_examples=500, deadline=None)
@given(free=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0]), min_size=2, max_size=6),
       ends=st.lists(st.tuples(st.integers(0, 5), SMALL, st.sampled_from([3.0, 7.0, 7.0, 12.0, 40.0])), max_size=10),
       demand=st.lists(st.tuples(st.integers(1, 3), SMALL), min_size=1, max_size=2).map(tuple),
       wall=st.sampled_from([5.0, 10.0, 60.0]), start=st.tuples(st.integers(0, 5), SMALL, st.sampled_from([0.5, 1.0, 2.0])))
def test_a_kept_reservation_is_the_one_found_afresh(free: list[float], ends: list[tuple[int, float, float]],
                                                   demand: tuple[tuple[int, float], ...], wall: float,
                                                   start: tuple[int, float, float]) -> None:
    """Work started within the hold of a reservation on a profile, ending
    before, at or after the reserved start: when :meth:`Top.keeps` says the
    reservation stays, the profile now gives that start, those cpus and that
    hold afresh."""
    n = len(free)
    base = Profile(0.0, [f"h{i}" for i in range(n)], np.full(n, 8.0), np.array(free),
                   [Usage((h % n,), (c,), end) for h, c, end in ends])
    p = base.copy()
    found = p.shadow(demand, wall)
    if found is None or found.start <= 0:
        return
    hold = p.holding("top", found.start, found.take, found.start + wall)
    top = Top.of(found, hold, demand)
    assert top is not None
    cpus, end = start[1], found.start * start[2]
    room = np.flatnonzero(base.limit([hold], end) >= cpus)  # (the pass never starts work that breaks the hold)
    if not len(room):
        return
    work = Usage((int(room[start[0] % len(room)]),), (cpus,), end)
    base.add(work)
    if not top.keeps(work, base):
        return
    again = base.copy()
    afresh = again.shadow(demand, wall)
    assert afresh is not None and afresh.start == top.found.start
    assert np.array_equal(afresh.take, top.found.take)
    assert dict(again.holding("top", afresh.start, afresh.take, afresh.start + wall).spare) == dict(top.hold.spare)
