"""`legionrm pools FILE [--json]`: the file format, the JSON shape, exit 2 on invalid files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legionrm.cli import main
from legionrm.errors import ConfigError, PoolRuleError
from legionrm.scheduler.pools.file import run_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "scenarios"

BASE = """
[capacity]
cpu = 100
memory = 1000
disk = 1000
gpu = 0

[slack_capacity]
cpu = 20

[[pool]]
path = "/a"
controller_limit_percent = 50
[pool.cpu]
reservation = 30
limit = 60
[pool.memory]
reservation = 300
limit = 600

[[pool]]
path = "/b"
[pool.cpu]
reservation = 20
limit = 100
share = 2
type = "STATIC"
"""


def write(tmp_path: Path, text: str) -> str:
    f = tmp_path / "pools.toml"
    f.write_text(text)
    return str(f)


def test_json_shape_and_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + """
[[demand]]
pool = "/b"
cpu = 10

[[allocation]]
pool = "/a"
cpu = 5
slack = true

[[gang]]
id = "g1"
pool = "/a"
tasks = [{cpu = 20, memory = 100, priority = 2}, {cpu = 10, memory = 100, priority = 2}]

[[gang]]
id = "g2"
pool = "/a"
tasks = [{cpu = 40, memory = 10}]

[[gang]]
id = "ctl"
pool = "/a"
tasks = [{cpu = 40, controller = true, priority = 1}]
"""
    assert main(["pools", write(tmp_path, text), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"units", "pools", "admitted"}
    assert out["units"] == {"cpu": "cores", "memory": "MB", "disk": "MB", "gpu": "devices"}
    assert list(out["pools"]) == ["/", "/a", "/b"]
    a = out["pools"]["/a"]
    assert set(a) == {"entitlement", "slack_entitlement", "non_slack_entitlement", "allocation", "queues"}
    assert set(a["entitlement"]) == {"cpu", "memory", "disk", "gpu"}
    assert a["queues"] == {"pending": ["g2"], "controller": ["ctl"], "non_preemptible": [], "revocable": []}
    assert out["admitted"] == ["g1"]
    # /a: 30 reserved + 70 demand... cluster 100: /b static 20 + its demand 10 -> 20 (reservation covers it)
    assert a["entitlement"]["cpu"] == pytest.approx(60)  # limit 60
    assert a["allocation"]["cpu"] == 35 and out["pools"]["/"]["allocation"]["cpu"] == 35
    assert out["pools"]["/b"]["entitlement"]["cpu"] == pytest.approx(40)  # 20 static + what /a's limit cut off


def test_human_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pools", write(tmp_path, BASE + '[[gang]]\nid = "x"\npool = "/a"\ntasks = [{cpu = 1}]\n')]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["pool", "cpu", "cores", "memory", "MB", "disk", "MB", "gpu", "devices", "queued"]
    assert any(ln.split()[:2] == ["/a", "entitlement"] for ln in lines) and out.rstrip().endswith("admitted: x")


def test_a_cluster_file_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Path(__file__).resolve().parents[3] / "legionrm" / "data" / "cluster.toml"
    assert main(["pools", str(cluster), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["pools"]) == {"/", "/research", "/teaching", "/shared"}
    assert out["pools"]["/"]["entitlement"]["cpu"] == 208 and out["admitted"] == []
    assert main(["pools", str(cluster)]) == 0
    assert "/research" in capsys.readouterr().out


def test_a_cluster_file_without_pools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[[host]]\nname = "h"\n[host.attributes]\ncpus = 4\n')
    assert main(["pools", str(f)]) == 2
    assert "no [[pool]] tables" in capsys.readouterr().err


INVALID = [
    ("reservation-over-limit", BASE.replace("reservation = 30", "reservation = 70"),
     "/a: resource cpu, reservation 70 exceeds limit 60"),
    ("children-over-root", BASE.replace("reservation = 20", "reservation = 80"),
     "/b: Aggregated child reservation 110 of kind `cpu` exceed parent `/` reservations 100"),
    ("unknown-kind", BASE + "[pool.cpus]\nreservation = 1\nlimit = 1\n", "/b: resource pool config has unknown resource type cpus"),
    ("controller-percent", BASE.replace("= 50", "= 120"), "/a: controller limit, max percent cannot be more than 100"),
    ("sibling-taken", BASE.replace('path = "/b"', 'path = "/a"'), "/a: resource pool:a already exists"),
    ("parent-missing", BASE.replace('path = "/b"', 'path = "/x/b"'), "/x/b: resource pool (/x) not found"),
    ("bad-path", BASE.replace('path = "/b"', 'path = "b"'), "b: path should begin with /"),
    # a kind sub-table twice is a TOML error; it is reported as the repeated kind it is
    ("repeated-kind", BASE + "[pool.cpu]\nreservation = 1\nlimit = 1\n",
     "/b: resource pool config has multiple configurations for resource type cpu"),
    ("repeated-kind-in-first-pool", BASE.replace("[pool.memory]", "[pool.cpu]"),
     "/a: resource pool config has multiple configurations for resource type cpu"),
    ("repeated-kind-after-an-earlier-kind-error", BASE + "[pool.memory]\nreservation = 5\nlimit = 1\n[pool.cpu]\n",
     "/b: resource memory, reservation 5 exceeds limit 1"),
]  # fmt: skip


@pytest.mark.parametrize("text,message", [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_file_exits_2_with_validator_message(tmp_path, capsys, text, message) -> None:  # type: ignore[no-untyped-def]
    assert main(["pools", write(tmp_path, text)]) == 2
    assert capsys.readouterr().err.strip() == f"legionrm pools: {message}"
    with pytest.raises(PoolRuleError):
        run_file(write(tmp_path, text))


SHAPE = [
    ("unknown-top-table", BASE + "[nodes]\nx = 1\n", "nodes"),
    ("unknown-pool-key", BASE.replace('path = "/b"', 'path = "/b"\nweight = 2'), "pool[1].weight"),
    ("bad-number", BASE.replace("limit = 60\n", 'limit = "sixty"\n'), "pool[0].cpu.limit"),
    ("bad-type", BASE.replace('"STATIC"', '"FIXED"'), "pool[1].cpu.type"),
    ("demand-unknown-pool", BASE + '[[demand]]\npool = "/zz"\ncpu = 1\n', "demand[0].pool"),
    ("gang-no-tasks", BASE + '[[gang]]\nid = "g"\npool = "/a"\ntasks = []\n', "gang[0].tasks"),
    ("gang-on-non-leaf", BASE + '[[pool]]\npath = "/a/c"\n[[gang]]\nid = "g"\npool = "/a"\ntasks = [{cpu = 1}]\n', "gang[0].pool"),
    ("task-unknown-key", BASE + '[[gang]]\nid = "g"\npool = "/a"\ntasks = [{cpus = 1}]\n', "gang[0].tasks[0].cpus"),
    ("gang-id-twice", BASE + '[[gang]]\nid = "g"\npool = "/a"\ntasks = [{cpu = 1}]\n' * 2, "gang[1].id"),
    ("task-id-twice", BASE + '[[gang]]\nid = "g"\npool = "/a"\ntasks = [{cpu = 1, id = "t"}, {cpu = 1, id = "t"}]\n',
     "gang[0].tasks[1].id"),
    ("task-id-clashes-with-default", BASE + '[[gang]]\nid = "g"\npool = "/a"\ntasks = [{cpu = 1}]\n'
     '[[gang]]\nid = "h"\npool = "/a"\ntasks = [{cpu = 1, id = "g-0"}]\n', "gang[1].tasks[0].id"),
]  # fmt: skip


@pytest.mark.parametrize("text,where", [c[1:] for c in SHAPE], ids=[c[0] for c in SHAPE])
def test_file_shape_errors_name_file_table_key(tmp_path, capsys, text, where) -> None:  # type: ignore[no-untyped-def]
    f = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        run_file(f)
    assert str(err.value).startswith(f"{f}: {where}")
    assert main(["pools", f]) == 2


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pools", "/nonexistent/pools.toml"]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("pools_*.toml")))
def test_examples_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pools", str(EXAMPLES / name), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pools"]["/"]


def test_unknown_type_behaves_as_elastic(tmp_path: Path) -> None:
    """Upstream's third ReservationType, UNKNOWN_TYPE, is accepted and is ELASTIC."""
    def cpu(type_: str) -> float:
        return run_file(write(tmp_path, BASE.replace('"STATIC"', type_)))["pools"]["/b"]["entitlement"]["cpu"]

    assert cpu('"UNKNOWN_TYPE"') == cpu('"ELASTIC"') == pytest.approx(200 / 3)  # 0 + 2/3 of 100 unclaimed
    assert cpu('"STATIC"') == pytest.approx(20 + 160 / 3)  # reservation 20 + 2/3 of the other 80
