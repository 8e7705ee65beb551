"""Cluster files: the bundled example loads, and bad files say where."""

from __future__ import annotations

from pathlib import Path

import pytest

from legionrm.config import load_cluster, parse_cluster
from legionrm.errors import ConfigError
from legionrm.models import Resources
from legionrm.scheduler.pools.gate import RespoolGate
from legionrm.scheduler.ports import OpenGate
from legionrm.scheduler.wiring import pool_gate


def test_bundled_cluster_has_a_dozen_varied_hosts_and_two_vaults() -> None:
    spec = load_cluster()
    assert len(spec.hosts) == 12 and len(spec.vaults) == 2
    assert {h.attributes["arch"] for h in spec.hosts} == {"x86_64", "aarch64", "sparc"}
    assert spec.hosts[0].name == "lab1" and spec.hosts[0].nodepool == "batch"
    assert spec.hosts[0].capacity().cpus == 20


def test_count_expands_names() -> None:
    spec = parse_cluster({"host": [{"name": "n", "count": 3, "attributes": {"cpus": 2}}]})
    assert [h.name for h in spec.hosts] == ["n1", "n2", "n3"]


@pytest.mark.parametrize(
    "doc, where",
    [
        ({"host": [{"count": 2}]}, "host[0].name: is required"),
        ({"host": [{"name": "a", "colour": 1}]}, "host[0].colour: unknown key"),
        ({"host": [{"name": "a", "count": 0}]}, "host[0].count: must be at least 1"),
        ({"host": [{"name": "a", "attributes": {"x": [1]}}]}, "host[0].attributes.x: attribute values"),
        ({"host": [{"name": "a", "attributes": {"cpus": -1}}]}, "host[0].attributes.cpus: capacity"),
        ({"host": [{"name": "a"}, {"name": "a"}]}, "host[1].name: name 'a' is already used by host[0]"),
        ({"host": [{"name": "a", "policy": "a:b:c"}]}, "host[0].policy: must be 'module:Class'"),
        ({"host": [{"name": "a", "access": {"allow_users": "bob"}}]}, "host[0].access.allow_users: must be list"),
        ({"vault": [{"name": "v", "serves": "x"}]}, "vault[0].serves: must be list"),
        ({"class": [{"name": "C"}, {"name": "C"}]}, "class[1].name: class 'C' is defined twice"),
        ({"collection": {"stale_after": 0}}, "collection.stale_after"),
        ({"hosts": []}, "hosts: unknown key"),
        ({"pool": [{"path": "/a", "weight": 2}]}, "pool[0].weight: unknown key"),
        ({"pool": [{"path": "/a", "cpu": {"limit": "x"}}]}, "pool[0].cpu.limit: must be float"),
        ({"pool": [{"path": "/a", "cpu": {"reservation": 1, "limit": 1}}]}, "pool: /a: resource cpu, limit 1 exceeds parent limit 0"),
        ({"pool": [{"path": "/a", "default": True}, {"path": "/b", "default": True}]}, "pool[1].default: only one pool"),
        ({"pool": [{"path": "/a", "default": True}, {"path": "/a/b"}]}, "pool[0].default: the default pool /a has child pools"),
        ({"pool": [{"path": "/a", "default": "yes"}]}, "pool[0].default: must be bool"),
    ],
    ids=["missing-name", "unknown-key", "zero-count", "bad-attr-type", "negative-capacity", "duplicate-name",
         "bad-policy", "access-not-list", "serves-not-list", "duplicate-class", "bad-settings", "unknown-table",
         "pool-unknown-key", "pool-bad-number", "pool-over-cluster-capacity", "two-default-pools", "default-pool-not-leaf",
         "default-not-bool"],
)
def test_bad_cluster_files_name_the_place(doc, where) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cluster(doc, file="c.toml")
    assert str(err.value).startswith("c.toml: ") and where in str(err.value)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_cluster(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[host]\nname=")
    with pytest.raises(ConfigError, match="bad.toml: not valid TOML"):
        load_cluster(bad)


def test_bundled_cluster_pools_fit_its_capacity() -> None:
    spec = load_cluster()
    assert spec.capacity() == Resources(cpus=208, memory_gb=1760, gpus=8, storage_gb=24000)
    assert [p.path for p in spec.pools] == ["/research", "/teaching", "/shared"] and spec.default_pool() == "/shared"
    gate = pool_gate(spec)
    assert isinstance(gate, RespoolGate) and gate.default_pool == "/shared"
    assert gate.capacity == {"cpu": 208, "memory": 1760 * 1024, "disk": 24000 * 1024, "gpu": 8}


@pytest.mark.parametrize(
    "doc, gate_type",
    [
        ({"host": [{"name": "a", "attributes": {"cpus": 2}}]}, OpenGate),
        ({"host": [{"name": "a", "attributes": {"cpus": 2}}], "pool": [{"path": "/x", "cpu": {"limit": 2}}]}, RespoolGate),
    ],
    ids=["no-pools-open-gate", "pools-respool-gate"],
)
def test_pool_gate_follows_the_cluster_file(doc, gate_type) -> None:
    assert type(pool_gate(parse_cluster(doc))) is gate_type


def test_the_queue_table() -> None:
    spec = parse_cluster({"queue": {"policy": "fcfs", "backfill_depth": 2, "default_walltime_s": 600}})
    assert (spec.queue.policy, spec.queue.backfill_depth, spec.queue.default_walltime_s) == ("fcfs", 2, 600)
    assert parse_cluster({}).queue.policy == "easy"


@pytest.mark.parametrize("queue, key", [({"policy": "lifo"}, "policy"), ({"depth": 1}, "depth"),
                                        ({"backfill_depth": -1}, "backfill_depth")],
                         ids=["unknown-policy", "unknown-key", "negative-depth"])
def test_a_bad_queue_table_names_its_key(queue, key) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cluster({"queue": queue}, file="c.toml")
    assert "queue" in str(err.value) and key in str(err.value)


@pytest.mark.parametrize("table, deadline", [({}, 10.0), ({"deadline_s": 3}, 3.0), ({"deadline_s": 0.5}, 0.5)],
                         ids=["default", "int", "float"])
def test_the_enactor_table(table, deadline) -> None:
    assert parse_cluster({"enactor": table}).enactor.deadline_s == deadline


@pytest.mark.parametrize("table, says", [({"deadline_s": 0}, "enactor.deadline_s: must be > 0"),
                                         ({"deadline_s": 601}, "enactor.deadline_s: must be at most 600"),
                                         ({"deadline_s": "10s"}, "enactor.deadline_s: must be float"),
                                         ({"timeout_s": 3}, "enactor.timeout_s: unknown key")],
                         ids=["zero", "over-ten-minutes", "text", "unknown-key"])
def test_a_bad_enactor_table_names_its_key(table, says) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cluster({"enactor": table}, file="c.toml")
    assert str(err.value).startswith(f"c.toml: {says}"), err.value
