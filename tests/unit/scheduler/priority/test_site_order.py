"""The site's order as columns (:meth:`SitePolicy.order`) is the order of
:meth:`SitePolicy.rank` (the formula, job by job), pass after pass: the rows
it keeps between passes follow a changed request, a new user and usage that
moved between the users."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.config import parse_cluster
from legionrm.models import AccountRecord, Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.priority import SitePolicy, site_settings
from legionrm.scheduler.requests import Entry

QOS = [{"name": "normal", "priority": 10, "default": True}, {"name": "high", "priority": 100}]
SETTINGS = site_settings(parse_cluster({
    "host": [{"name": "h0", "attributes": {"cpus": 8, "memory_gb": 16}}], "class": [{"name": "W"}],
    "qos": QOS, "fairshare": {"half_life_s": 100.0}}))


class Records:
    """Account records handed out once each, as the accounting store does."""

    def __init__(self) -> None:
        self.rows: list[AccountRecord] = []

    def after(self, row: int = 0, limit: int = 10_000) -> tuple[int, list[AccountRecord]]:
        got = self.rows[row:row + limit]
        return row + len(got), got


def req(rid: str, user: str, cpus: float, qos: str | None, priority: int | None) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), qos=qos, priority=priority,
                             objects=(ObjectRequest(class_name="W", count=1, cpus=cpus, memory_gb=1),))


JOB = st.tuples(st.sampled_from(["u0", "u1", "u2"]), st.sampled_from([1.0, 2.0, 4.0]),
                st.sampled_from([None, "high"]), st.sampled_from([None, None, 5, 50_000]),
                st.sampled_from([0.0, 0.0, 10.0, 20.0]))
CHANGE = st.tuples(st.integers(0, 30), st.sampled_from(["u0", "u3", "u4"]), st.sampled_from([None, 7, 90_000]),
                   st.sampled_from(["pending", "running", "completed"]))


@settings(max_examples=150, deadline=None)
@given(jobs=st.lists(JOB, min_size=1, max_size=30), changes=st.lists(CHANGE, max_size=8),
       used=st.lists(st.tuples(st.sampled_from(["u0", "u1", "u3"]), st.floats(1.0, 500.0)), max_size=4))
def test_the_order_as_columns_is_the_formulas_pass_after_pass(
        jobs: list[tuple[str, float, str | None, int | None, float]],
        changes: list[tuple[int, str, int | None, str]], used: list[tuple[str, float]]) -> None:
    records = Records()
    site = SitePolicy(SETTINGS, records, lambda: 100.0, 16.0)
    entries = [Entry(req(f"r{i:02d}", u, c, q, p), submitted=s) for i, (u, c, q, p, s) in enumerate(jobs)]

    def expected() -> list[str]:
        return [e.id for e, _ in site.rank(entries)]

    assert [e.id for e in site.order(entries)] == expected()
    for k, (i, user, priority, state) in enumerate(changes):  # a request replaced, a new user, a state
        e = entries[i % len(entries)]
        e.request = e.request.model_copy(update={"identity": Identity(user=user), "priority": priority})
        e.state = state  # type: ignore[assignment]
    for k, (user, cpu_s) in enumerate(used):  # usage that moves the fair-share factors
        records.rows.append(AccountRecord(instance_id=f"i{k}", request_id=f"x{k}", user=user, cpus=1.0,
                                          start=0.0, end=cpu_s / 5, state="completed"))
    assert [e.id for e in site.order(entries)] == expected()
    assert [e.id for e in site.order(entries, now=5_000.0)] == [e.id for e, _ in site.rank(entries, 5_000.0)]
