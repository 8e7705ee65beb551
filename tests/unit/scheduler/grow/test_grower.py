"""The autoscaler's side of pending work (issue 27 item 5): which requests wait
for a node, their bundles, and when the autoscaler is told (a fake stands in
for Ray's ``request_resources``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from legionrm.models import Identity, ObjectRequest, PlacementFailure, SchedulingRequest
from legionrm.scheduler.grow import Grower, bundle_of, waits_for_a_node


def fail(code: str, stage: str = "plan", lasting: bool = False) -> PlacementFailure:
    return PlacementFailure(key="W#*", resource="planner", code=code, reason="", stage=stage, lasting=lasting)


@dataclass
class Entry:
    request: SchedulingRequest
    state: str
    failures: tuple[PlacementFailure, ...]
    submitted: float = 0.0


def entry(rid: str, state: str = "pending", failures: tuple = (fail("capacity.total", lasting=True),),
          count: int = 1, submitted: float = 0.0, **need: object) -> Entry:
    objs = (ObjectRequest(class_name="W", count=count, cpus=2, memory_gb=0.5, **need),)
    return Entry(SchedulingRequest(request_id=rid, identity=Identity(user="u"), objects=objs), state, failures, submitted)


@pytest.mark.parametrize("state, failures, waits", [
    pytest.param("pending", (fail("capacity.total", lasting=True),), True, id="too-small-everywhere"),
    pytest.param("pending", (fail("query.no_match", lasting=True),), True, id="nothing-matches"),
    pytest.param("pending", (fail("no_hosts"),), True, id="no-hosts"),
    pytest.param("pending", (fail("capacity"),), False, id="busy-now-waits-for-running-work"),
    pytest.param("pending", (fail("policy", stage="reserve"),), False, id="a-host-refused"),
    pytest.param("pending", (), False, id="no-failure-yet"),
    pytest.param("running", (fail("capacity.total", lasting=True),), False, id="not-pending"),
])
def test_which_requests_wait_for_a_node(state: str, failures: tuple, waits: bool) -> None:
    assert waits_for_a_node(state, failures) is waits


def test_a_bundle_is_one_instance_in_ray_names_without_zeros() -> None:
    obj = ObjectRequest(class_name="W", cpus=2, memory_gb=0.5, gpus=1, resources={"tpu": 4, "fpga": 0})
    assert bundle_of(obj) == {"CPU": 2.0, "GPU": 1.0, "memory": float(512 * 1024**2), "tpu": 4.0}


def test_the_demand_is_every_waiting_instance_oldest_first_and_bounded() -> None:
    g = Grower(lambda b: None, max_bundles=3)
    entries = [entry("new", count=2, submitted=2.0, gpus=1), entry("old", count=2, submitted=1.0),
               entry("busy", failures=(fail("capacity"),))]
    demand = g.demand(entries)
    assert [b.get("GPU", 0) for b in demand] == [0, 0, 1]  # old's two, then one of new's (the bound)


def test_the_autoscaler_is_told_only_of_changes_and_a_failure_is_retried() -> None:
    asked: list[list[dict]] = []
    broken = [True]

    def ask(bundles: list[dict]) -> None:
        if broken[0]:
            raise ConnectionError("no autoscaler")
        asked.append(bundles)

    g = Grower(ask)
    assert g([]) == [] and asked == []  # nothing waits, nothing was asked: nothing to tell
    g([entry("r")])
    assert asked == []  # it failed: told again next time
    broken[0] = False
    g([entry("r")])
    g([entry("r")])
    assert asked == [[{"CPU": 2.0, "memory": float(512 * 1024**2)}]]
    g([])
    assert asked[-1] == []
