"""Every validator rule, in Peloton's order, with its message; refusals leave the tree as it was."""

from __future__ import annotations

import copy

import pytest

from legionrm.errors import PoolBusyError, PoolNotFoundError, PoolRuleError
from legionrm.scheduler.pools.respool import PoolConfig, ResourcePoolTree, ResourceSpec
from legionrm.scheduler.pools.vec import go_num, vec
from tests.unit.scheduler.pools.test_respool_support import cfg, gang

CAP = {"cpu": 100, "memory": 1000, "disk": 1000, "gpu": 8}


def base() -> ResourcePoolTree:
    """/ (capacity) -> /a (cpu 50..80, mem 500..800) -> /a/b (cpu 20..40); /c (cpu 10..50)."""
    t = ResourcePoolTree()
    t.set_capacity(vec(CAP))
    t.create("/a", cfg(res={"cpu": 50, "memory": 500, "disk": 100, "gpu": 2}, lim={"cpu": 80, "memory": 800, "disk": 100, "gpu": 4}))
    t.create("/a/b", cfg(res={"cpu": 20, "memory": 100}, lim={"cpu": 40, "memory": 200}))
    t.create("/c", cfg(res={"cpu": 10}, lim={"cpu": 50}))
    return t


def spec(kind: str, r: float = 0, l: float = 0, s: float = 1) -> ResourceSpec:  # noqa: E741
    return ResourceSpec(kind, r, l, s)


def create(path, config):  # type: ignore[no-untyped-def]
    return lambda t: t.create(path, config)


def update(path, config, parent=None):  # type: ignore[no-untyped-def]
    return lambda t: t.update(path, config, parent=parent)


OK = cfg(res={"cpu": 1}, lim={"cpu": 2})

# (id, action, rule, message, kind, value, bound)
CASES = [
    ("path-nil", create(None, OK), "path", "path cannot be nil", None, None, None),
    ("path-empty", create("", OK), "path", "path cannot be empty", None, None, None),
    ("path-no-slash", create("a/x", OK), "path", "a/x: path should begin with /", None, None, None),
    ("path-empty-name", create("/a//x", OK), "path", "/a//x: path has an empty pool name", None, None, None),
    ("config-nil", create("/a/x", None), "resource_pool", "/a/x: resource pool config cannot be <nil>", None, None, None),
    ("override-root", create("/", OK), "resource_pool", "/: cannot override root", None, None, None),
    ("unknown-kind", create("/a/x", PoolConfig(resources=(spec("cpus", 1, 2),))), "resource_pool",
     "/a/x: resource pool config has unknown resource type cpus", "cpus", None, None),
    ("repeated-kind", create("/a/x", PoolConfig(resources=(spec("cpu", 1, 2), spec("cpu", 1, 2)))), "resource_pool",
     "/a/x: resource pool config has multiple configurations for resource type cpu", "cpu", None, None),
    ("negative-reservation", create("/a/x", PoolConfig(resources=(spec("memory", -5, 2),))), "resource_pool",
     "/a/x: resource pool config resource values can not be negative memory: Reservation -5", "memory", -5, 0),
    ("negative-share", create("/a/x", PoolConfig(resources=(spec("gpu", 0, 1, -0.5),))), "resource_pool",
     "/a/x: resource pool config resource values can not be negative gpu: Share -0.5", "gpu", -0.5, 0),
    ("reservation-over-limit", create("/a/x", PoolConfig(resources=(spec("disk", 20, 10),))), "resource_pool",
     "/a/x: resource disk, reservation 20 exceeds limit 10", "disk", 20, 10),
    ("own-parent", update("/a/b", OK, parent="/a/b"), "cycle",
     "/a/b: resource pool ID: /a/b and parent ID: /a/b cannot be same", None, None, None),
    ("parent-missing", create("/nope/x", OK), "parent", "/nope/x: resource pool (/nope) not found", None, None, None),
    ("parent-override", update("/a/b", OK, parent="/c"), "parent",
     "/a/b: parent override not allowed, actual /a, override /c", None, None, None),
    ("limit-over-parent", create("/a/x", cfg(res={"cpu": 1}, lim={"cpu": 81})), "parent",
     "/a/x: resource cpu, limit 81 exceeds parent limit 80", "cpu", 81, 80),
    ("sibling-taken", create("/a/b", OK), "siblings", "/a/b: resource pool:b already exists", None, None, None),
    ("children-reservations", create("/a/x", cfg(res={"cpu": 31}, lim={"cpu": 40})), "children_reservations",
     "/a/x: Aggregated child reservation 51 of kind `cpu` exceed parent `/a` reservations 50", "cpu", 51, 50),
    ("children-reservations-update", update("/a/b", cfg(res={"cpu": 51}, lim={"cpu": 60})), "children_reservations",
     "/a/b: Aggregated child reservation 51 of kind `cpu` exceed parent `/a` reservations 50", "cpu", 51, 50),
    ("explicit-id-taken", lambda t: t.create("/a/x", OK, id=t.get("/c").id), "resource_pool",
     "/a/x: resource pool id respool-3 is already used by /c", None, None, None),
    ("controller-over-100", create("/a/x", cfg(res={"cpu": 1}, lim={"cpu": 2}, controller=100.5)), "controller_limit",
     "/a/x: controller limit, max percent cannot be more than 100", None, 100.5, 100),
]  # fmt: skip


@pytest.mark.parametrize("action,rule,message,kind,value,bound", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_rule_refuses_with_its_message(action, rule, message, kind, value, bound) -> None:  # type: ignore[no-untyped-def]
    t = base()
    before = snapshot(t)
    with pytest.raises(PoolRuleError) as err:
        action(t)
    assert str(err.value) == message
    assert (err.value.rule, err.value.kind, err.value.value, err.value.bound) == (rule, kind, value, bound)
    assert snapshot(t) == before  # a refused change leaves the tree exactly as it was


def snapshot(t: ResourcePoolTree) -> list[tuple]:
    return [
        (p.path, p.id, copy.deepcopy(p.config), p.reservation.tolist(), p.limit.tolist(), sorted(p.children))
        for p in t.pools()
    ]


def test_a_kind_the_parent_lacks() -> None:
    t = ResourcePoolTree()  # no capacity yet: the root has no resources
    with pytest.raises(PoolRuleError, match=r"^/x: parent / doesn't have resource kind cpu$"):
        t.create("/x", OK)


ORDER = [
    # two broken rules at once: the earlier validator (or the earlier resource) speaks
    ("unknown-before-negative", PoolConfig(resources=(spec("cpu", -1, 2), spec("cpus", 1, 1))), "negative cpu: Reservation -1"),
    ("resource-order", PoolConfig(resources=(spec("cpus", 1, 1), spec("cpu", -1, 2))), "unknown resource type cpus"),
    ("pool-before-parent", PoolConfig(resources=(spec("cpu", 90, 85),)), "reservation 90 exceeds limit 85"),
    ("parent-before-children", cfg(res={"cpu": 60}, lim={"cpu": 81}), "limit 81 exceeds parent limit 80"),
    ("children-before-controller", cfg(res={"cpu": 60}, lim={"cpu": 80}, controller=150), "Aggregated child reservation 80"),
]  # fmt: skip


@pytest.mark.parametrize("config,fragment", [c[1:] for c in ORDER], ids=[c[0] for c in ORDER])
def test_validators_run_in_order_and_stop_at_first(config, fragment) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PoolRuleError) as err:
        base().create("/a/x", config)
    assert fragment in str(err.value)


def test_missing_kinds_default_and_slack_percent_is_not_validated() -> None:
    t = base()
    p = t.create("/a/x", PoolConfig(resources=(spec("cpu", 5, 10),), slack_limit_percent=250))
    assert [(r.kind, r.reservation, r.limit, r.share) for r in p.config.resources] == [
        ("cpu", 5, 10, 1), ("memory", 0, 0, 1), ("disk", 0, 0, 1), ("gpu", 0, 0, 1),
    ]  # fmt: skip
    assert p.slack_limit.tolist() == [0.0, 0.0, 0.0, 0.0]  # cpu slack is always 0; other kinds had no reservation


def test_update_reuses_own_reservation_and_name() -> None:
    t = base()
    t.update("/a/b", cfg(res={"cpu": 50}, lim={"cpu": 80}))  # 50 fits only once b's old 20 is taken out
    assert t.get("/a/b").reservation[0] == 50


def test_controller_and_slack_limits_derive_from_reservation() -> None:
    t = base()
    p = t.create("/a/x", cfg(res={"cpu": 20, "memory": 300, "gpu": 2}, lim={"cpu": 30, "memory": 300, "gpu": 2}, controller=10, slack=30))
    assert p.controller_limit.tolist() == [2.0, 30.0, 0.0, 0.2]
    assert p.slack_limit.tolist() == pytest.approx([0.0, 90.0, 0.0, 0.6])
    d = t.create("/c/y", cfg(res={"cpu": 5, "memory": 0}, lim={"cpu": 5}))
    assert d.controller_limit is None and d.slack_limit.tolist() == [0, 0, 0, 0]


def test_lookup_create_delete() -> None:
    t = base()
    b = t.get("/a/b")
    assert t.get(b.id) is b and t.lookup_id("/a/b") == b.id and t.get("/").id == "root"
    with pytest.raises(PoolNotFoundError):
        t.get("/a/zz")
    with pytest.raises(PoolRuleError, match="path should begin with /"):
        t.lookup_id("a/b")
    with pytest.raises(PoolBusyError, match="^/a: resource pool is not leaf$"):
        t.delete("/a")
    t.add_allocation("/a/b", {"cpu": 1})
    with pytest.raises(PoolBusyError, match="^/a/b: resource pool is busy$"):
        t.delete("/a/b")
    t.delete("/c")
    assert "/c" not in t and [p.path for p in t.pools()] == ["/", "/a", "/a/b"]
    with pytest.raises(PoolBusyError):
        t.delete("/")


def test_forced_update_skips_rules_but_keeps_the_tree_sound() -> None:
    t = base()
    t.update("/a/b", cfg(res={"cpu": 500}, lim={"cpu": 900}), force=True)
    assert t.get("/a/b").reservation[0] == 500
    with pytest.raises(PoolRuleError, match="already exists"):
        t.create("/a/b", OK, force=True)


@pytest.mark.parametrize(
    "value,text",
    [(101, "101"), (-5, "-5"), (99999, "99999"), (100000, "100000"), (0.5, "0.5"), (409.6, "409.6"),
     (1e6, "1e+06"), (1234567, "1.234567e+06"), (0.00001, "1e-05"), (0.0001, "0.0001")],
    ids=str,
)  # fmt: skip
def test_numbers_print_like_go(value: float, text: str) -> None:
    assert go_num(value) == text


def test_update_sums_reservations_in_upstream_float_order() -> None:
    """Upstream computes new + (all children) - own old: 0.1 + (0.1 + 0.1) - 0.1 is
    0.20000000000000004, over a parent reservation of 0.2, so even re-applying the same
    config is refused there (and here); summing the siblings first would give 0.2."""
    t = base()
    t.create("/z", cfg(res={"cpu": 0.2}, lim={"cpu": 1}))
    t.create("/z/x", cfg(res={"cpu": 0.1}, lim={"cpu": 1}))
    t.create("/z/y", cfg(res={"cpu": 0.1}, lim={"cpu": 1}))
    with pytest.raises(PoolRuleError) as err:
        t.update("/z/x", cfg(res={"cpu": 0.1}, lim={"cpu": 1}))
    assert str(err.value) == (
        "/z/x: Aggregated child reservation 0.20000000000000004 of kind `cpu` exceed parent `/z` reservations 0.2"
    )


BUSY = [
    # id, what the leaf holds, refused?  (upstream: allocation or demand above 0 by EPS)
    ("idle", lambda t: None, False),
    ("allocation", lambda t: t.add_allocation("/c", {"memory": 1}), True),
    ("demand", lambda t: t.add_demand("/c", {"gpu": 1}), True),
    ("allocation-below-eps", lambda t: t.add_allocation("/c", {"cpu": 0.0005}), False),
    ("queued-revocable-gang", lambda t: t.enqueue(gang("r", {"cpu": 1}, revocable=True), "/c"), True),
]  # fmt: skip


@pytest.mark.parametrize("load,refused", [b[1:] for b in BUSY], ids=[b[0] for b in BUSY])
def test_delete_refuses_a_busy_leaf(load, refused) -> None:  # type: ignore[no-untyped-def]
    t = base()
    load(t)
    if refused:
        with pytest.raises(PoolBusyError, match="^/c: resource pool is busy$"):
            t.delete("/c")
        assert "/c" in t
    else:
        t.delete("/c")
        assert "/c" not in t
