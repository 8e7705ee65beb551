"""A request's own ``rank`` (HTCondor's Rank): among the hosts that fit, a
higher MIL value goes first, before the planner's own rankers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.collection.collection import Collection
from legionrm.errors import ConfigError, MILError
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.request_file import parse_request
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host

ALICE = Identity(user="alice")


def cluster() -> Collection:
    """Five 8-cpu hosts; ``speed`` and ``disk`` vary, ``arm`` is the one aarch64."""
    c = Collection(clock=FakeClock())
    for name, speed, disk, arch in (("a1", 2.0, 100, "x86_64"), ("a2", 3.5, 50, "x86_64"),
                                    ("a3", 1.0, 400, "x86_64"), ("a4", 3.5, 10, "x86_64"),
                                    ("arm", 9.0, 200, "aarch64")):
        c.join(host(name, cpus=8, memory_gb=32.0, arch=arch, speed=speed, disk=disk))
    c.join(host("plain", cpus=8, memory_gb=32.0, arch="x86_64"))  # no speed, no disk: undefined ranks 0
    return c


def first_hosts(obj: ObjectRequest, c: Collection | None = None) -> list[str]:
    plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)),
                                    (c or cluster()).snapshot())
    assert plan.ok, plan.failures
    return [p.host for p in plan.masters[0].placements]


@pytest.mark.parametrize(
    "rank, count, expected",
    [
        ("$speed", 3, ["arm", "a2", "a4"]),  # ties (a2, a4 at 3.5) keep the planner's order: the name
        ("-$disk", 2, ["plain", "a4"]),  # plain has no disk: undefined counts 0, above -10
        ("$disk", 2, ["a3", "arm"]),
        ('$arch == "x86_64"', 1, ["a1"]),  # a boolean ranks as 1 or 0
        # a1 -80, a2 -15, a3 -390, a4 25, arm -110, plain undefined: 0
        ("$speed * 10 - $disk", 3, ["a4", "plain", "a2"]),
        ("$nothing_exports_this", 2, ["a1", "a2"]),  # every host ties: the planner's rankers decide
    ],
    ids=["higher-first", "undefined-is-zero", "other-attribute", "boolean", "arithmetic", "all-tie"],
)
def test_rank_orders_the_hosts_that_fit(rank: str, count: int, expected: list[str]) -> None:
    obj = ObjectRequest(class_name="A", count=count, cpus=8, placement="scatter", rank=rank)
    assert first_hosts(obj) == expected


def test_rank_never_admits_a_host_the_constraint_refused() -> None:
    obj = ObjectRequest(class_name="A", count=2, cpus=8, placement="scatter", rank="$speed",
                        constraint='$arch == "x86_64"')
    assert first_hosts(obj) == ["a2", "a4"]


def test_rank_binds_exclusive_work_too() -> None:
    """Exclusive work would go to the placement engine's buckets, which know no
    rank; with a rank the pipeline places it, in rank order."""
    obj = ObjectRequest(class_name="A", count=2, cpus=8, exclusive=True, rank="$disk")
    assert first_hosts(obj) == ["a3", "arm"]


def test_explain_shows_the_hosts_rank() -> None:
    obj = ObjectRequest(class_name="A", count=1, cpus=8, rank="$speed")
    plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)),
                                    cluster().snapshot())
    assert "ranked 4 of 6 (rank 2 by '$speed')" in plan.why("a1")
    assert "(rank 0 by '$speed')" in plan.why("plain")
    plain = ObjectRequest(class_name="A", count=1, cpus=8)
    unranked = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(plain,)),
                                        cluster().snapshot())
    assert "(rank" not in unranked.why("a1")


@pytest.mark.parametrize("bad", ["$speed >", "match(", '"text" +'], ids=["dangling-op", "open-call", "string-sum"])
def test_a_bad_rank_is_refused_in_the_request_file_naming_the_key(bad: str) -> None:
    doc = {"object": [{"class": "A", "rank": bad}]}
    with pytest.raises(ConfigError) as err:
        parse_request(doc, file="job.toml", user="alice")
    assert "rank" in str(err.value) and "job.toml" in str(err.value)


def test_a_bad_rank_given_in_python_is_a_mil_error_at_planning() -> None:
    obj = ObjectRequest(class_name="A", count=1, rank="$speed >")
    with pytest.raises(MILError):
        Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)),
                                 cluster().snapshot())


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({"v": 3}, 3.0),
        ({"v": 2.5}, 2.5),
        ({"v": True}, 1.0),
        ({"v": "fast"}, 0.0),
        ({}, 0.0),
    ],
    ids=["int", "float", "bool", "string-is-default", "missing-is-default"],
)
def test_score_reads_numbers_and_defaults_the_rest(attrs: dict, expected: float) -> None:
    c = Collection(clock=FakeClock())
    c.join(host("h", cpus=1, **attrs))
    c.join(host("other", cpus=1, v=7))  # a second host, so the column is mixed where kinds differ
    snap = c.snapshot()
    row = snap.rows('$name == "h"', include_unavailable=True)
    assert snap.score("$v", row).tolist() == [expected]


@settings(max_examples=60, deadline=None)
@given(speeds=st.lists(st.integers(-50, 50), min_size=2, max_size=12), count=st.integers(1, 4))
def test_master_one_takes_the_highest_ranked_hosts(speeds: list[int], count: int) -> None:
    """For any speeds, a scatter request's master 1 holds exactly the
    ``count`` hosts of highest rank, ties broken by the planner's order."""
    count = min(count, len(speeds))
    c = Collection(clock=FakeClock())
    names = [f"h{i:02d}" for i in range(len(speeds))]
    for name, speed in zip(names, speeds):
        c.join(host(name, cpus=4, memory_gb=8.0, speed=speed))
    got = first_hosts(ObjectRequest(class_name="A", count=count, cpus=4, placement="scatter", rank="$speed"), c)
    best = sorted(zip(speeds, names), key=lambda sn: (-sn[0], sn[1]))[:count]
    assert sorted(got) == sorted(n for _, n in best)
    assert [dict(zip(names, speeds))[h] for h in got] == sorted((s for s, _ in best), reverse=True)


def test_an_infinite_or_nan_rank_does_not_break_the_order() -> None:
    c = cluster()
    snap = c.snapshot()
    values = snap.score("$speed / ($disk - $disk)")  # 0/0 and x/0: not numbers to sort by
    assert all(math.isfinite(v) for v in values.tolist())
