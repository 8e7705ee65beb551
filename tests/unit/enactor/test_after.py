"""The ``after`` graph within one request (issue 26, item 6): the check at
submit, and the Enactor creating instances only once those they follow run."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from legionrm import codes
from legionrm.config import parse_cluster
from legionrm.enactor.after import after_problem, key_after, waves
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakePort
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    DeltaSchedule,
    EnactRequest,
    Holder,
    Identity,
    MasterSchedule,
    ObjectRequest,
    Placement,
    Resources,
    SchedulingRequest,
)
from legionrm.testing import FakeClock


def O(cls: str, *after: str, name: str | None = None) -> ObjectRequest:  # noqa: N802
    return ObjectRequest(class_name=cls, name=name, after=after)


@pytest.mark.parametrize("objects, problem", [
    ([O("A"), O("B", "A")], None),
    ([O("A"), O("B")], None),
    ([O("A", "X")], "object A is after X: no object of the request has that name"),
    ([O("A", "A")], "object A is after itself"),
    ([O("A", "B"), O("B", "A")], "objects A -> B -> A follow each other in a cycle"),
    ([O("A", "C"), O("B", "A"), O("C", "B")], "objects A -> C -> B -> A follow each other in a cycle"),
    ([O("W"), O("W", "W")], "objects W share a name: give each a distinct name for after"),
    ([O("W", name="db"), O("W", "db", name="app")], None),
], ids=["chain", "no-after", "unknown-name", "itself", "two-cycle", "three-cycle", "shared-name", "named"])
def test_the_graph_is_checked_at_submit(objects: list[ObjectRequest], problem: str | None) -> None:
    assert after_problem(objects) == problem


def test_a_cycle_is_refused_at_submit_with_its_code() -> None:
    spec = parse_cluster({"host": [{"name": "h0", "attributes": {"cpus": 4, "memory_gb": 16}}],
                          "class": [{"name": "A"}, {"name": "B"}]})
    s = LocalSystem(spec, clock=FakeClock())
    r = s.scheduler.scheduleObjects(SchedulingRequest(request_id="r", identity=Identity(user="alice"), objects=(
        O("A", "B"), O("B", "A"))))
    assert (r.ok, r.state, r.failures[0].code) == (False, "refused", codes.REQUEST_AFTER)
    assert "A -> B -> A" in r.message and "r" not in s.scheduler.book


def test_keys_follow_every_key_of_the_objects_named() -> None:
    objs = [O("db", name="db"), O("W", "db")]
    assert key_after(objs, [["db#0"], ["W#0", "W#1"]]) == {"W#0": ("db#0",), "W#1": ("db#0",)}
    assert waves(["W#0", "db#0", "W#1"], {"W#0": ("db#0",), "W#1": ("db#0",)}) == [["db#0"], ["W#0", "W#1"]]


HOLDER = Holder(user="alice", class_name="Foo")


def P(key: str, host: str) -> Placement:  # noqa: N802
    return Placement(key=key, class_name="Foo", host=host, resources=Resources(cpus=1))


def creates(g: FakePort) -> list[list[str]]:
    return [[i.split("/")[1] for i in ids] for m, ids in g.calls if m == "create"]


@pytest.mark.parametrize("after, batches", [
    ({}, [["a", "b", "c"]]),
    ({"b": ("a",)}, [["a", "c"], ["b"]]),
    ({"b": ("a",), "c": ("b",)}, [["a"], ["b"], ["c"]]),
    ({"a": ("b", "c")}, [["b", "c"], ["a"]]),
], ids=["none", "one-edge", "chain", "join"])
def test_the_enactor_creates_in_rounds(after: dict, batches: list[list[str]]) -> None:
    g = FakePort.of("h1", "h2", "h3")
    master = MasterSchedule(placements=(P("a", "h1"), P("b", "h2"), P("c", "h3")))
    r = Enactor(g, clock=g.clock).enact_schedule(EnactRequest(request_id="r1", holder=HOLDER, masters=(master,),
                                                              after=after))
    assert r.ok and creates(g) == batches


def test_a_vetoed_predecessor_holds_back_what_follows_it_until_a_delta_starts_it() -> None:
    g = FakePort.of("h1", "h2", "h3")
    g.resources["h1"].veto_start = "policy.start"
    master = MasterSchedule(placements=(P("a", "h1"), P("b", "h2")),
                            deltas=(DeltaSchedule(placements=(P("a", "h3"),)),))
    r = Enactor(g, clock=g.clock).enact_schedule(EnactRequest(request_id="r1", holder=HOLDER, masters=(master,),
                                                              after={"b": ("a",)}))
    assert r.ok and creates(g) == [["a"], ["a"], ["b"]]  # vetoed on h1; then a on h3 (the delta); then b
    assert {i.host for i in r.instances} == {"h3", "h2"}


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, dict[str, tuple[str, ...]], set[int]]:
    n = draw(st.integers(1, 6))
    after = {}
    for j in range(n):
        preds = draw(st.lists(st.integers(0, max(j - 1, 0)), max_size=j, unique=True)) if j else []
        if preds:
            after[f"k{j}"] = tuple(f"k{i}" for i in preds)
    vetoing = draw(st.sets(st.integers(0, n - 1), max_size=n))
    return n, after, vetoing


@given(graphs())
def test_the_enactor_never_starts_an_object_before_its_after_objects(g_: tuple) -> None:
    n, after, vetoing = g_
    g = FakePort.of(*[f"h{i}" for i in range(n)], *[f"s{i}" for i in range(n)])
    for i in vetoing:
        g.resources[f"h{i}"].veto_start = "policy.start"
    keys = [f"k{i}" for i in range(n)]
    # a master on h*, a one-key delta per key to its spare host s*
    master = MasterSchedule(placements=tuple(P(k, f"h{i}") for i, k in enumerate(keys)),
                            deltas=tuple(DeltaSchedule(placements=(P(k, f"s{i}"),)) for i, k in enumerate(keys)))
    r = Enactor(g, clock=g.clock).enact_schedule(EnactRequest(request_id="r1", holder=HOLDER, masters=(master,),
                                                              after=after))
    done_in: dict[str, int] = {}  # the round in which each key's instance started
    for b, ids in enumerate([ids for m, ids in g.calls if m == "create"]):
        for rid in ids:
            k = rid.split("/")[1]
            for p in after.get(k, ()):
                assert done_in.get(p, b) < b, f"{k} created before {p} ran"
        for rid in ids:
            _, k, _, sent = rid.split("/")
            if sent == "1" or int(k[1:]) not in vetoing:  # its spare host (the delta) never vetoes
                done_in[k] = b
    assert r.ok and len(r.instances) == n
