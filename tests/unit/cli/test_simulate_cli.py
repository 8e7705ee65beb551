"""``legionrm simulate``: the scenario's own cycles by default, --summary,
--plot, and each example scenario's expected results (from its comments)
checked through the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from legionrm.cli import main
from legionrm.cli.simulate import DEFAULT_CYCLES, scenario_cycles, series
from legionrm.scheduler.fairshare import load_scenario, run

SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "scenarios"

# file -> (by "job" or "user", the final processes its comment expects); the comment is quoted
EXPECTED = [
    ("ducc_s1_mixed_orders.toml", "user", {"alice": 6, "bob": 3}),  # "Expect alice 6 x O1 and bob 3 x O2"
    ("ducc_s2_weights.toml", "job", {"low-1": 5, "normal-1": 12, "high-1": 23}),  # "expect low 5, normal 12, high 23"
    ("ducc_s3_unequal_jobs.toml", "job", {"alice-1": 7, "bob-20": 3, "bob-30": 2, "bob-40": 2}),  # "alice 7; bob 3, 2, 2"
    ("ducc_s5_priority.toml", "job", {"u1": 12, "n1": 0}),  # "urgent ... gets all 12; normal gets 0"
    ("ducc_s5a_priority_wants_8.toml", "job", {"u1": 8, "n1": 4}),  # "urgent ... gets 8; normal gets the other 4"
    ("ducc_s5b_same_priority.toml", "job", {"u1": 6, "n1": 6}),  # "expect 6 / 6"
]


@pytest.mark.parametrize("name,by,expected", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_scenario_comments_hold(name: str, by: str, expected: dict[str, int]) -> None:
    path = str(SCENARIOS / name)
    sc = load_scenario(path)
    results = run(sc, scenario_cycles(path, sc.arrivals, sc.events))
    jobs, users = series(results, sc.core)
    got = jobs if by == "job" else users
    assert {k: v[-1] for k, v in got.items()} == expected


def test_doubling_series_and_named_cycles(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(SCENARIOS / "ducc_s10_doubling.toml")  # "Run with --cycles 8: processes 1, 1, 2, 4, 8, 16, 32, 64."
    assert main(["simulate", path, "--summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [int(ln.split()[2]) for ln in lines] == [1, 1, 2, 4, 8, 16, 32, 64]


def test_default_cycles_without_a_comment(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text("# no cycles named here\n")
    assert scenario_cycles(str(f), {}, {}) == DEFAULT_CYCLES
    assert scenario_cycles(str(f), {1: [], 12: []}, {3: []}) == 12


def test_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "shares.png"
    assert main(["simulate", str(SCENARIOS / "ducc_s3_unequal_jobs.toml"), "--cycles", "3", "--summary",
                 "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(capsys.readouterr().out.splitlines()) == 3


# ``simulate --swf``: the fields the issue names, one job per line (-1: missing)
TRACE = """; a small trace: job 2 asks for more than the cluster, job 5 has no processors
1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1
2 5 -1 50 64 -1 -1 64 60 -1 1 2 1 -1 -1 -1 -1 -1
3 6 -1 10 1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
4 7 -1 20 2 -1 -1 2 30 -1 1 3 1 -1 -1 -1 -1 -1
5 8 -1 10 -1 -1 -1 -1 -1 -1 1 3 1 -1 -1 -1 -1 -1
"""
SUMMARY_KEYS = ["policy", "jobs", "utilization", "wait_mean_s", "wait_median_s", "wait_p95_s", "wait_max_s",
                "bounded_slowdown_mean", "makespan_s", "jain_index"]


@pytest.mark.parametrize("policy", ["fcfs", "easy", "site"])
def test_swf_leaves_out_a_job_larger_than_the_cluster_and_says_so(policy: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A job no cluster of this size could ever start is left out, not queued: at the head of an fcfs
    queue it would hold every job behind it for ever (jobs 3 and 4 never ran before)."""
    trace, starts = tmp_path / "t.swf", tmp_path / "starts.csv"
    trace.write_text(TRACE)
    assert main(["simulate", "--swf", str(trace), "--hosts", "2", "--cpus-per-host", "2", "--policy", policy,
                 "--json", "--starts", str(starts)]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert list(doc) == SUMMARY_KEYS and (doc["policy"], doc["jobs"]) == (policy, 3)
    rows = starts.read_text().splitlines()
    assert rows[0] == "job,submit,start,end,procs"
    # each job that ran, by number; 4 waits for 3's cpu, then runs its 20 s
    assert rows[1:] == ["1,0,0,100,2", "3,6,6,16,1", "4,7,16,36,2"]
    assert err.strip() == ("legionrm simulate: jobs left out: 1 without processors or run time and 1 with more "
                           "processors than the 4 cpus of 2 hosts (job 2)")


@pytest.mark.parametrize(("text", "says"), [
    ("1 0 -1 100\n", "t.swf: line 1: a job has 18 fields, this line 4"),
    ("1 0 -1 x 2 -1 -1 2 200 -1 1 1 1\n", "t.swf: line 1: fields must be numbers"),
    ("; only a header\n", "the trace has no job to replay"),
], ids=["short-line", "not-a-number", "no-jobs"])
def test_swf_bad_trace_is_one_line_naming_the_line(text: str, says: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(text)
    assert main(["simulate", "--swf", str(trace)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err, err


def test_swf_as_a_table_says_what_ran_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(TRACE)
    assert main(["simulate", "--swf", str(trace), "--hosts", "2", "--cpus-per-host", "2", "--policy", "fcfs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "t.swf: 3 jobs on 2 hosts x 2 cpus, policy fcfs"
    assert lines[1].split() == ["measure", "value"] and lines[2].split() == ["jobs", "3"]
