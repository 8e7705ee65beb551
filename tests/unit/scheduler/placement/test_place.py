"""`legionrm place`: the scenario file, the --json shape, the text table, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legionrm.cli import main
from legionrm.scheduler.placement.scenario import load_scenario, run_scenario

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "scenarios"

SCENARIO = """
[scheduler]
resources = ["ncpus", "mem", "color"]
node_group_key = "switch"
now = 1000

[[node]]
name = "r"
count = 3
priority = 5
[node.resources]
ncpus = 4
mem = "16gb"
color = "red"
switch = "s1"

[[node]]
name = "b"
count = 2
[node.resources]
ncpus = 8
mem = "32gb"
color = "blue"
switch = "s2"
bigmem = true

[[node]]
name = "q"
queue = "express"
[node.resources]
ncpus = 2

[[busy]]
nodes = ["r1"]
start = 0
end = 1500

[[busy]]
nodes = "b2"
start = 1200
end = 1300

[[job]]
id = "j1"
select = "2:ncpus=4:color=red"
place = "scatter:excl"
walltime = 100

[[job]]
id = "j2"
select = "1:ncpus=2:mem=1gb:bigmem=true"
place = "excl"
walltime = 100

[[job]]
id = "j3"
select = "1:ncpus=4:color=red"
place = "excl"
walltime = 100

[[job]]
id = "j4"
select = "1:ncpus=64"
walltime = 10

[[job]]
id = "j5"
select = "1:ncpus=1"
place = "pack"
queue = "express"

[[job]]
id = "j6"
select = "1:ncpus=8"
place = "excl"
walltime = 500
"""


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    return f


def test_json_shape_and_answers(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["place", str(scenario), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc) == ["jobs"]
    jobs = doc["jobs"]
    assert list(jobs) == ["j1", "j2", "j3", "j4", "j5", "j6"]
    for j in jobs.values():
        assert set(j) == {"status", "comment", "exec_vnode", "nodes", "path", "earliest_start"}
    assert jobs["j1"] == {
        "status": "run", "comment": "Job run at 1000 on (r2:ncpus=4)+(r3:ncpus=4)",
        "exec_vnode": "(r2:ncpus=4)+(r3:ncpus=4)", "nodes": [["r2", "r3"]], "path": "buckets",
        "earliest_start": 1000.0,
    }
    # b2 has a reservation at 1200: a 100 s job fits before it (busy-later first)
    assert jobs["j2"]["exec_vnode"] == "(b2:ncpus=2:mem=1048576kb)"
    assert jobs["j3"]["status"] == "not_now" and jobs["j3"]["earliest_start"] == 1100.0
    assert jobs["j3"]["comment"].startswith("Not Running: ")
    assert jobs["j4"]["status"] == "never" and jobs["j4"]["path"] == "nodes"
    assert jobs["j4"]["comment"] == "Can Never Run: Insufficient amount of resource: ncpus (R: 64 A: 14 T: 28)"
    assert jobs["j4"]["earliest_start"] is None
    assert jobs["j5"]["nodes"] == [["q"]] and jobs["j5"]["earliest_start"] == 1000.0
    # b1 is free; b2 is held by j2 until 1100 and reserved 1200-1300: j6 takes b1
    assert jobs["j6"]["nodes"] == [["b1"]]


def test_text_table(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["place", str(scenario)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["JOB", "STATUS", "PATH", "START"]
    assert lines[1].split()[:4] == ["j1", "run", "buckets", "1000"]
    assert "Can Never Run" in out


def test_count_expands_names_and_sort_by_priority(scenario: Path) -> None:
    placer, _ = run_scenario(load_scenario(str(scenario)))
    assert placer.table.names[:3] == ["r1", "r2", "r3"]
    assert set(placer.table.names) == {"r1", "r2", "r3", "b1", "b2", "q"}


BAD_FILES = [
    ("bad select", '[[node]]\nname="n"\n[[job]]\nid="j"\nselect="2:ncpus=+1"\n', ["job[0].select", "^"]),
    ("bad place", '[[node]]\nname="n"\n[[job]]\nid="j"\nselect="1"\nplace="scater"\n', ["unknown place keyword", "^"]),
    ("unknown key", '[[node]]\nname="n"\ncolour="red"\n', ["node[0].colour", "unknown key"]),
    ("busy names no host", '[[node]]\nname="n"\n[[busy]]\nnodes=["x"]\nstart=0\nend=1\n', ["busy[0].nodes", "'x'"]),
    ("end before start", '[[node]]\nname="n"\n[[busy]]\nnodes=["n"]\nstart=5\nend=1\n', ["busy[0].end"]),
    ("missing select", '[[node]]\nname="n"\n[[job]]\nid="j"\n', ["job[0].select", "required"]),
    ("duplicate job id", '[[node]]\nname="n"\n[[job]]\nid="j"\nselect="1"\n[[job]]\nid="j"\nselect="1"\n',
     ["used twice"]),
    ("bad TOML", "[[node]\n", ["not valid TOML"]),
    ("mixed kinds", '[[node]]\nname="a"\n[node.resources]\nx=1\n[[node]]\nname="b"\n[node.resources]\nx="s"\n',
     ["resource 'x'"]),
    ("bad sort key", '[scheduler]\nnode_sort_key="ncpus UP"\n', ["node_sort_key"]),
    ("bad resource value", '[[node]]\nname="a"\n[node.resources]\nx={a=1}\n', ["node[0].resources.x"]),
    # audit: carets and the file first
    ("bad TOML has a caret", '[[node]]\nname="n"\n[[job]\n', ["line 3, column 6", "[[job]\n     ^"]),
    ("select error names file, key, then line and column", '[[node]]\nname="n"\n[[job]]\nid="j"\nselect="2:ncpus=+1"\n',
     ["bad.toml: job[0].select: line 1, column 9: unexpected '+'", "2:ncpus=+1\n        ^"]),
    ("value of the wrong kind for the hosts", '[[node]]\nname="n"\n[node.resources]\nncpus=2\n'
     '[[job]]\nid="j"\nselect="1:ncpus=1+1:ncpus=two"\n',
     ["job[0].select: line 1, column 19: ncpus=two", "1:ncpus=1+1:ncpus=two\n                  ^"]),
    ("boolean that is not one", '[[node]]\nname="n"\n[node.resources]\ngpu=true\n'
     '[[job]]\nid="j"\nselect="1:gpu=maybe"\n', ["job[0].select: line 1, column 7", "expected true or false"]),
]


@pytest.mark.parametrize("why,text,words", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], why: str, text: str,
                          words: list[str]) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    code, out, err = run_cli(["place", str(f)], capsys)
    assert code == 2 and out == ""
    assert err.startswith("legionrm place: ")
    for w in words:
        assert w in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["place", str(tmp_path / "nope.toml")], capsys)
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("place_*.toml")), ids=lambda p: p.name)
def test_examples_run(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["place", str(path), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["jobs"]


def test_seed_example_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["place", str(EXAMPLES / "place_seed.toml"), "--json"], capsys)
    jobs = json.loads(out)["jobs"]
    assert jobs["split"]["status"] == "not_now" and jobs["three"]["status"] == "run"


def test_busy_may_name_a_counted_node_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text('[[node]]\nname="n"\ncount=2\n[node.resources]\nncpus=1\n'
                 '[[busy]]\nnodes="n"\nstart=0\nend=50\n'
                 '[[job]]\nid="j"\nselect="1:ncpus=1"\nplace="excl"\nwalltime=5\n')
    code, out, _ = run_cli(["place", str(f), "--json"], capsys)
    job = json.loads(out)["jobs"]["j"]
    assert code == 0 and job["status"] == "not_now" and job["earliest_start"] == 50.0


CYCLE = """
[scheduler]
resources = ["ncpus", "mem"]
[[node]]
name = "x"
[node.resources]
ncpus = 4
mem = "8gb"
[[node]]
name = "y"
[node.resources]
ncpus = 4
mem = "16gb"
[[node]]
name = "z"
[node.resources]
ncpus = 4
mem = "8gb"
[[job]]
id = "j"
select = "2:ncpus=1"
place = "scatter:excl"
"""

ASKS_MEM = """
[[job]]
id = "k"
select = "1:ncpus=1:mem=1gb"
place = "scatter:excl"
"""

SIGNATURE_CYCLE = [
    # upstream's signature covers the resources the cycle's jobs request (L13)
    ("no job asks for mem: x, y, z share a bucket", CYCLE, [["x", "y"]]),
    ("a job asks for mem: mem splits buckets", CYCLE + ASKS_MEM, [["x", "z"]]),
    ("empty resources line: every resource", CYCLE.replace('["ncpus", "mem"]', "[]") + ASKS_MEM, [["x", "z"]]),
]


@pytest.mark.parametrize("why,text,nodes", SIGNATURE_CYCLE, ids=[c[0] for c in SIGNATURE_CYCLE])
def test_bucket_signature_is_per_cycle(tmp_path: Path, capsys: pytest.CaptureFixture[str], why: str, text: str,
                                       nodes: list) -> None:
    f = tmp_path / "s.toml"
    f.write_text(text)
    code, out, err = run_cli(["place", str(f), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["jobs"]["j"]["nodes"] == nodes
