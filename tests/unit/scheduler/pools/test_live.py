"""Live pool changes: created, updated and deleted through the Peloton
validators on a copy; a refused change leaves the running pools exactly as
they were (compared before and after), and a created pool admits at once."""

from __future__ import annotations

import pytest

from legionrm.errors import PoolValidationError
from legionrm.models import Identity, ObjectRequest, PoolChange, PoolResourceSpec, PoolSpec, SchedulingRequest
from legionrm.scheduler.pools import RespoolGate, build_tree, changes_between, reconfigured, specs_of
from legionrm.scheduler.ports import OpenGate

CAP = {"cpu": 16.0, "memory": 64 * 1024.0, "disk": 0.0, "gpu": 0.0}


def pool(path: str, cpus: float, reservation: float = 0.0, default: bool = False) -> PoolSpec:
    return PoolSpec(path=path, default=default, resources=(
        PoolResourceSpec(kind="cpu", reservation=reservation, limit=cpus),
        PoolResourceSpec(kind="memory", limit=64 * 1024.0)))


def gate(*specs: PoolSpec) -> RespoolGate:
    default = next((p.path for p in specs if p.default), None)
    return RespoolGate(build_tree(specs, CAP), CAP, default_pool=default)


def req(rid: str, pool_path: str, cpus: float = 2) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="u"), pool=pool_path,
                             objects=(ObjectRequest(class_name="W", count=1, cpus=cpus, memory_gb=1),))


def state(g: RespoolGate) -> tuple:
    return specs_of(g), g.report(), g.held(), g.default_pool


def test_a_created_pool_admits_at_once_and_the_old_gate_is_untouched() -> None:
    old = gate(pool("/a", 8, default=True))
    assert old.admit(req("r1", "/a")) is None
    before = state(old)
    new = reconfigured(old, [PoolChange(op="create", spec=pool("/b", 4))])
    assert new.admit(req("r2", "/b")) is None
    assert new.held() == {"r1": "/a", "r2": "/b"}  # admitted work keeps its allocation
    assert state(old) == before


@pytest.mark.parametrize("change, rule", [
    (PoolChange(op="update", spec=pool("/a", 8, reservation=40)), "reservation"),  # reservation past its limit
    (PoolChange(op="create", spec=pool("/a", 4)), "exists"),  # a second /a
    (PoolChange(op="create", spec=pool("/x/y", 4)), "not found"),  # no parent
    (PoolChange(op="delete", spec=pool("/a", 8)), "busy"),  # /a holds admitted work
    (PoolChange(op="update", spec=pool("/ghost", 8)), "ghost"),
], ids=["reservation-over-limit", "twice", "no-parent", "busy", "unknown"])
def test_a_refused_change_changes_nothing(change: PoolChange, rule: str) -> None:
    g = gate(pool("/a", 8, default=True), pool("/b", 4))
    assert g.admit(req("r1", "/a")) is None
    before = state(g)
    with pytest.raises(PoolValidationError) as err:
        reconfigured(g, [PoolChange(op="create", spec=pool("/c", 2)), change])  # the first would pass: all or nothing
    assert rule in str(err.value) and "\n" not in str(err.value)
    assert state(g) == before


def test_changes_between_deletes_children_first_and_creates_parents_first() -> None:
    old = (pool("/a", 8), pool("/a/x", 4), pool("/b", 4))
    new = (pool("/b", 6), pool("/c", 2), pool("/c/d", 1))
    got = [(c.op, c.spec.path) for c in changes_between(old, new)]
    assert got == [("delete", "/a/x"), ("delete", "/a"), ("update", "/b"), ("create", "/c"), ("create", "/c/d")]
    assert changes_between(new, new) == []


def test_a_system_without_pools_gets_its_first_pool() -> None:
    new = reconfigured(OpenGate(), [PoolChange(op="create", spec=pool("/p", 4, default=True))], CAP, default_pool="/p")
    assert new.admit(req("r", "/")) is None and new.held() == {"r": "/p"}
    assert new.admit(req("big", "/p", cpus=8)).code.startswith("respool")


def test_the_pools_as_they_run_compare_equal_to_the_file_they_came_from() -> None:
    specs = (pool("/a", 8, default=True), pool("/b", 4))
    assert changes_between(specs_of(gate(*specs)), specs) == []
