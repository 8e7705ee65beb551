"""Custom resource kinds in the pools (issue 27 item 3): a pool may name a
custom kind (``[pool.tpu]``, ``limit`` only) and requests that ask
``resources = { tpu = n }`` are charged to it, capped in their leaf and every
pool above that names the kind; a pool that does not name it does not cap it."""

from __future__ import annotations

import tomllib

import pytest

from legionrm import codes
from legionrm.errors import PoolValidationError
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.pools import changes_between, reconfigured, specs_of
from legionrm.scheduler.pools.file import build_tree, parse_pools
from legionrm.scheduler.pools.gate import RespoolGate

GB = 1024.0
CAPACITY = {"cpu": 100, "memory": 1000 * GB, "disk": 1000 * GB, "gpu": 4}
CPU = "cpu = {reservation = 0, limit = 100}\nmemory = {reservation = 0, limit = 1024000}\n"
POOLS = f"""
[[pool]]
path = "/ml"
{CPU}tpu = {{limit = 4}}

[[pool]]
path = "/ml/a"
{CPU}tpu = {{limit = 3}}

[[pool]]
path = "/ml/b"
{CPU}
[[pool]]
path = "/web"
{CPU}"""


def gate(text: str = POOLS) -> RespoolGate:
    return RespoolGate(build_tree(parse_pools(tomllib.loads(text), file="pools"), CAPACITY), CAPACITY)


def req(rid: str, pool: str, tpu: float = 0, count: int = 1) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="u"), pool=pool, objects=(
        ObjectRequest(class_name="W", cpus=1, memory_gb=1, count=count, resources={"tpu": tpu} if tpu else {}),))


def test_a_request_is_charged_its_custom_kind_and_the_leafs_limit_caps_it() -> None:
    g = gate()
    assert g.admit(req("r1", "/ml/a", tpu=1, count=2)) is None  # 2 tpus in /ml/a
    out = g.admit(req("r2", "/ml/a", tpu=2))
    assert out is not None and out.code == codes.RESPOOL_ENTITLEMENT and out.by == "respool:/ml/a", out
    report = g.report()
    assert report["/ml/a"]["custom"] == {"tpu": {"allocation": 2.0, "limit": 3.0}}
    assert report["/ml"]["custom"] == {"tpu": {"allocation": 2.0, "limit": 4.0}}
    g.release("r1")
    assert g.admit(req("r2", "/ml/a", tpu=2)) is None


def test_a_parent_that_names_the_kind_caps_its_children_together() -> None:
    g = gate()
    assert g.admit(req("a", "/ml/a", tpu=3)) is None
    out = g.admit(req("b", "/ml/b", tpu=2))  # /ml/b names no tpu limit, but /ml does: 3 + 2 > 4
    assert out is not None and out.code == codes.RESPOOL_ENTITLEMENT and out.by == "respool:/ml", out
    assert g.admit(req("c", "/ml/b", tpu=1)) is None


@pytest.mark.parametrize("pool, tpu, ok, code", [
    pytest.param("/ml/a", 5, False, codes.RESPOOL_LIMIT, id="more-than-a-limit-never"),
    pytest.param("/web", 50, True, None, id="no-pool-names-it-no-cap"),
    pytest.param("/ml/a", 0, True, None, id="none-asked"),
])
def test_limits_of_a_custom_kind(pool: str, tpu: float, ok: bool, code: str | None) -> None:
    out = gate().admit(req("r", pool, tpu=tpu))
    assert (out is None) == ok and (out is None or out.code == code), out


@pytest.mark.parametrize("table, rule", [
    pytest.param('tpu = {reservation = 1, limit = 4}', "reservation must be 0", id="a-custom-kind-is-never-reserved"),
    pytest.param('"no-such kind" = {limit = 1}', "unknown resource type", id="not-a-kind-name"),
])
def test_bad_custom_kinds_are_refused(table: str, rule: str) -> None:
    with pytest.raises(PoolValidationError) as err:
        gate(f'[[pool]]\npath = "/x"\n{CPU}{table}\n')
    assert rule in str(err.value)


def test_a_reload_changes_a_custom_limit_and_keeps_the_charges() -> None:
    g = gate()
    assert g.admit(req("r", "/ml/a", tpu=2)) is None
    new_text = POOLS.replace("tpu = {limit = 3}", "tpu = {limit = 2}")
    changes = changes_between(specs_of(g), parse_pools(tomllib.loads(new_text), file="pools"))
    assert [(c.op, c.spec.path) for c in changes] == [("update", "/ml/a")]
    new = reconfigured(g, changes)
    assert new.report()["/ml/a"]["custom"] == {"tpu": {"allocation": 2.0, "limit": 2.0}}
    out = new.admit(req("more", "/ml/a", tpu=1))
    assert out is not None and out.code == codes.RESPOOL_ENTITLEMENT


CLUSTER = f"""
[[host]]
name = "t1"
resources = {{ tpu = 4 }}
[host.attributes]
cpus = 100
memory_gb = 1000

[[class]]
name = "W"
{POOLS}"""


def test_a_system_charges_a_custom_kind_and_pools_shows_it(capsys) -> None:
    """In a system: a request asking ``resources = { tpu = n }`` runs, is charged to its pool,
    and ``status`` / ``pools`` show that pool's custom allocation and limit."""
    from legionrm.cli.front import pool_lines
    from legionrm.config import parse_cluster
    from legionrm.inprocess import LocalSystem
    from legionrm.scheduler.door import status_for
    from legionrm.scheduler.wiring import pool_gate

    spec = parse_cluster(tomllib.loads(CLUSTER))
    s = LocalSystem(spec, pools=pool_gate(spec))
    assert s.scheduler.scheduleObjects(req("t", "/ml/a", tpu=2)).ok
    refused = s.scheduler.scheduleObjects(req("u", "/ml/a", tpu=2).model_copy(update={"wait": False}))
    assert not refused.ok and refused.failures[0].code == codes.RESPOOL_ENTITLEMENT, refused.message
    pools = status_for(s.scheduler, None, None).pools
    assert pools["/ml/a"]["custom"] == {"tpu": {"allocation": 2.0, "limit": 3.0}}
    row = next(line for line in pool_lines(pools).splitlines() if line.startswith("/ml/a "))
    assert row.endswith("tpu 2/3"), row
