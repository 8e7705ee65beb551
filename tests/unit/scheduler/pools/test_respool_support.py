"""Builders shared by the resource-pool tests (the upstream example trees among them)."""

from __future__ import annotations

from legionrm.scheduler.pools.respool import (
    Gang,
    PoolConfig,
    ReservationType,
    ResourcePoolTree,
    ResourceSpec,
    Task,
)
from legionrm.scheduler.pools.vec import KINDS

# Peloton's calculator tests: every pool has this config, cluster 100 cpu /
# 1000 memory / 6000 disk / 0 gpu, slack 80 cpu.
UPSTREAM_CAPACITY = {"cpu": 100, "memory": 1000, "disk": 6000, "gpu": 0}
UPSTREAM_SLACK = {"cpu": 80, "memory": 0, "disk": 0, "gpu": 0}


def cfg(
    res: dict[str, float] | None = None,
    lim: dict[str, float] | None = None,
    share: dict[str, float] | None = None,
    static: bool = False,
    controller: float | None = None,
    slack: float | None = None,
) -> PoolConfig:
    """A config with the four kinds (reservation 0 / limit 0 / share 1 unless given)."""
    res, lim, share = res or {}, lim or {}, share or {}
    t = ReservationType.STATIC if static else ReservationType.ELASTIC
    return PoolConfig(
        resources=tuple(
            ResourceSpec(k, float(res.get(k, 0)), float(lim.get(k, res.get(k, 0))), float(share.get(k, 1)), t)
            for k in KINDS
        ),
        controller_limit_percent=controller,
        slack_limit_percent=slack,
    )


def upstream_cfg(static: bool = False) -> PoolConfig:
    return cfg(
        res={"cpu": 10, "memory": 100, "disk": 1000, "gpu": 1},
        lim={"cpu": 1000, "memory": 1000, "disk": 1000, "gpu": 4},
        static=static,
    )


def upstream_tree(static_leaves: bool = False) -> ResourcePoolTree:
    """root -> respool1 (respool11, respool12), respool2 (respool21, respool22), respool3.

    Loaded with ``force`` like Peloton's tree loader (its limits exceed the
    cluster, which the validators would refuse)."""
    t = ResourcePoolTree()
    for p in ("/respool1", "/respool2", "/respool3"):
        t.create(p, upstream_cfg(), force=True)
    for p in ("/respool1/respool11", "/respool1/respool12"):
        t.create(p, upstream_cfg(static_leaves), force=True)
    for p in ("/respool2/respool21", "/respool2/respool22"):
        t.create(p, upstream_cfg(), force=True)
    return t


def gang(gid: str, *tasks: dict, **common) -> Gang:
    """A gang from task dicts; ``common`` flags apply to every task."""
    if not tasks:
        tasks = ({},)
    return Gang(gid, tuple(Task(id=f"{gid}-{i}", **{**common, **t}) for i, t in enumerate(tasks)))


def leaf_tree(
    res: dict[str, float],
    lim: dict[str, float] | None = None,
    capacity: dict[str, float] | None = None,
    slack_capacity: dict[str, float] | None = None,
    **kw,
) -> ResourcePoolTree:
    """A tree with one leaf /p under the root; capacity defaults to the limit."""
    lim = lim or res
    from legionrm.scheduler.pools.vec import vec

    t = ResourcePoolTree()
    capacity = capacity or {k: max(lim.get(k, 0), res.get(k, 0)) for k in KINDS}
    t.set_capacity(vec(capacity))
    t.create("/p", cfg(res=res, lim=lim, **kw))
    t.compute_entitlement(capacity, slack_capacity or {})
    return t


def test_builders_make_valid_trees() -> None:
    t = upstream_tree()
    assert [p.path for p in t.pools()] == [
        "/", "/respool1", "/respool1/respool11", "/respool1/respool12",
        "/respool2", "/respool2/respool21", "/respool2/respool22", "/respool3",
    ]  # fmt: skip
    assert leaf_tree({"cpu": 10}).get("/p").is_leaf
