"""`legionrm simulate`: the JSON shape, events, and exit 2 on bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legionrm.cli import main

ROOT = Path(__file__).resolve().parents[4]
BASE = """
[rm]
quantum_gb = 1
expand_by_doubling = false
prediction = false

[[class]]
name = "normal"
policy = "FAIR_SHARE"

[[machine]]
name = "m"
memory_gb = 4
count = 2
"""


def run(tmp_path, text, *args, capsys):
    f = tmp_path / "s.toml"
    f.write_text(text)
    code = main(["simulate", str(f), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_shape_and_count_expansion(tmp_path, capsys):
    text = BASE + '[[job]]\nid = "j1"\nuser = "a"\nmemory_gb = 1\nwork_items = 6\ntime_per_item_ms = 5\n'
    code, out, _ = run(tmp_path, text, "--json", "--cycles", "2", capsys=capsys)
    assert code == 0
    doc = json.loads(out)
    assert [c["cycle"] for c in doc["cycles"]] == [1, 2]
    job = doc["cycles"][0]["jobs"]["j1"]
    assert set(job) == {"order", "counted", "processes", "evicting", "cap", "pure_fair_share", "deferred", "reason", "machines"}
    assert job["processes"] == 6 and sum(job["machines"].values()) == 6
    assert set(doc["cycles"][0]["machines"]) == {"m1", "m2"}
    assert set(doc["cycles"][0]["machines"]["m1"]) == {"nodepool", "order", "free"}


def test_arrivals_and_events(tmp_path, capsys):
    text = BASE + (
        '[[job]]\nid = "a"\nuser = "a"\nmemory_gb = 1\nwork_items = 100\ntime_per_item_ms = 5\n'
        '[[job]]\nid = "b"\nuser = "b"\nmemory_gb = 1\nwork_items = 100\ntime_per_item_ms = 5\narrive = 2\n'
        '[[event]]\ncycle = 4\nkind = "complete"\njob = "b"\n'
    )
    code, out, _ = run(tmp_path, text, "--json", "--cycles", "4", capsys=capsys)
    cyc = json.loads(out)["cycles"]
    assert cyc[0]["jobs"]["a"]["processes"] == 8 and "b" not in cyc[0]["jobs"]
    assert cyc[1]["jobs"]["a"]["evicting"] == 4
    assert cyc[2]["jobs"]["a"]["processes"] == 4 and cyc[2]["jobs"]["b"]["processes"] == 4
    assert "b" not in cyc[3]["jobs"] and cyc[3]["jobs"]["a"]["processes"] == 8


BAD = [
    ("unknown-class", BASE + '[[job]]\nid = "j"\nuser = "a"\nclass = "nope"\nmemory_gb = 1\n', ["job[0]", "class", "unknown class"]),
    ("mixed-policy", BASE + '[[class]]\nname = "f"\npolicy = "FIXED_SHARE"\npriority = 10\n', ["class[1]", "priority", "mixed"]),
    ("no-default", BASE + '[[class]]\nname = "other"\npolicy = "FAIR_SHARE"\n', ["class", "default", "no default class"]),
    ("machine-in-no-pool", BASE + '[[machine]]\nname = "x"\nmemory_gb = 4\nnodepool = "ghost"\n', ["machine[1]", "nodepool", "no pool"]),
    ("bad-type", BASE + '[[job]]\nid = "j"\nuser = "a"\nmemory_gb = "lots"\n', ["job[0]", "memory_gb", "must be"]),
    ("unknown-key", BASE + '[[job]]\nid = "j"\nuser = "a"\nmemory_gb = 1\nmemroy = 3\n', ["job[0]", "memroy", "unknown key"]),
    ("event-unknown-job", BASE + '[[event]]\ncycle = 1\nkind = "complete"\njob = "zz"\n', ["event[0]", "job", "unknown job"]),
    ("bad-policy", BASE + '[[class]]\nname = "x"\npolicy = "GREEDY"\n', ["class[1]", "policy", "unknown policy"]),
]


@pytest.mark.parametrize("text,needles", [(t, n) for _, t, n in BAD], ids=[i for i, _, _ in BAD])
def test_bad_files_exit_2_naming_table_and_key(tmp_path, capsys, text, needles):
    code, _, err = run(tmp_path, text, capsys=capsys)
    assert code == 2
    assert err.startswith("legionrm simulate:")
    for n in needles:
        assert n in err, (n, err)


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples" / "scenarios").glob("ducc_*.toml")))
def test_example_scenarios_run(name, capsys):
    code = main(["simulate", str(ROOT / "examples" / "scenarios" / name), "--cycles", "3"])
    assert code == 0
    assert "cycle 3: jobs" in capsys.readouterr().out
