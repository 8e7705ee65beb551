"""What the site policy keeps between passes (each running request's stretches, the ledger's
aged sums, the tree's shares for a set of users) gives the fair share worked out afresh, as
work starts and ends and time moves: an end not taken off, or a decay left out, shows."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.config import parse_cluster
from legionrm.models import AccountRecord, Identity, InstanceRef, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority import ShareTree, SitePolicy, site_settings
from legionrm.scheduler.priority.usage import decayed_cpu_seconds
from legionrm.scheduler.requests import RequestBook
from tests.unit.scheduler.priority.books import run
from tests.unit.scheduler.priority.test_site_order import Records

HALF_LIFE = 100.0
SETTINGS = site_settings(parse_cluster({
    "host": [{"name": "h0", "attributes": {"cpus": 8, "memory_gb": 16}}], "class": [{"name": "A"}, {"name": "B"}],
    "fairshare": {"half_life_s": HALF_LIFE, "group": [{"name": "g", "shares": 3, "users": {"u0": 2, "u1": 1}}]}}))
USERS = ["u0", "u1", "u2", "u3"]

START = st.tuples(st.just("start"), st.sampled_from(USERS), st.integers(1, 4), st.sampled_from([0.5, 1.0, 4.0]))
END = st.tuples(st.just("end"), st.integers(0, 50), st.booleans())  # (a running request, all of it or one instance)
WAIT = st.tuples(st.just("wait"), st.sampled_from([0.0, 0.25, 7.0, 60.0, 250.0]))


def fresh(book: RequestBook, records: Records, now: float) -> dict[str, float]:
    """Every user's factor worked out afresh at ``now``: each finished and running stretch decayed one by one."""
    decayed: dict[str, float] = {}
    for r in records.rows:
        decayed[r.user] = decayed.get(r.user, 0.0) + decayed_cpu_seconds(r.cpus, r.start, r.end, now, HALF_LIFE)
    for e in book.entries():
        if e.state != "running":
            continue
        cpus = {o.class_name: o.cpus for o in reversed(e.request.objects)}
        for iid in e.live_instances():
            ref = e.refs[iid]
            decayed[e.user] = decayed.get(e.user, 0.0) + decayed_cpu_seconds(
                cpus[ref.class_name], ref.started_at, math.inf, now, HALF_LIFE)
    return ShareTree(SETTINGS.groups).factors(decayed, {e.user for e in book.entries()})


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.one_of(START, END, WAIT), min_size=1, max_size=25))
def test_the_kept_fair_share_is_the_fresh_one_as_work_starts_and_ends_and_time_moves(steps: list[tuple]) -> None:
    now = [1000.0]
    book, records = RequestBook(lambda: now[0]), Records()
    site = SitePolicy(SETTINGS, records, lambda: now[0], 8.0)
    for k, step in enumerate(steps):
        if step[0] == "start":
            _, user, count, cpus = step
            request = SchedulingRequest(request_id=f"r{k}", identity=Identity(user=user), objects=(
                ObjectRequest(class_name="A", count=count, cpus=cpus), ObjectRequest(class_name="B", count=1, cpus=2.0)))
            run(book, request, [InstanceRef(instance_id=f"r{k}-{i}", class_name="A" if i < count else "B", host="h",
                                            token_id=f"t{k}-{i}", user=user, started_at=now[0] - (i % 2))
                                for i in range(count + 1)])
        elif step[0] == "end":
            running = [e for e in book.entries() if e.live_instances()]
            if running:
                e = running[step[1] % len(running)]
                ids = e.live_instances() if step[2] else e.live_instances()[:1]
                cpus = {o.class_name: o.cpus for o in e.request.objects}
                records.rows += [AccountRecord(instance_id=i, request_id=e.id, user=e.user, cpus=cpus[e.refs[i].class_name],
                                               start=e.refs[i].started_at, end=now[0], state="completed") for i in ids]
                book.end_instances(e, ids, "ended", "done")
                if not e.live_instances():
                    book.move(e, "completed", "done")
        else:
            now[0] += step[1]
        got, want = site.fairshare(book.entries(), now[0]), fresh(book, records, now[0])
        assert got.keys() == want.keys()
        # (the ledger ages its finished sums step by step, not in one: the same to a few ulps, not bit for bit)
        assert all(math.isclose(got[u], want[u], rel_tol=1e-9, abs_tol=1e-12) for u in want), (got, want)


USAGE = st.dictionaries(st.sampled_from(["u0", "u1", "u2", "u5", "u6"]), st.sampled_from([0.0, 1.0, 2.5, 1e-3, 400.0]),
                        max_size=5)


@settings(max_examples=200, deadline=None)
@given(calls=st.lists(st.tuples(USAGE, st.sets(st.sampled_from(["u2", "u3", "u4", "u7"])),
                                st.one_of(st.none(), st.sets(st.sampled_from(["u0", "u2", "u3", "u6", "u9"])))),
                      min_size=1, max_size=8))
def test_the_kept_shares_give_each_users_fresh_factor_bit_for_bit(
        calls: list[tuple[dict[str, float], set[str], set[str] | None]]) -> None:
    tree = ShareTree(SETTINGS.groups)  # (one tree, its shares kept from call to call as the users change)
    for usage, users, only in calls:
        got = tree.factors(usage, users, only)
        want = ShareTree(SETTINGS.groups).factors(usage, users)
        if only is not None:
            want = {u: f for u, f in want.items() if u in only}
        assert {u: struct.pack("<d", f) for u, f in got.items()} == {u: struct.pack("<d", f) for u, f in want.items()}
