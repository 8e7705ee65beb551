"""The whole Ray cluster goes away and `legionrm up` starts again on the same
home: the Scheduler reloads every request from its state store; the work that
ran on the lost cluster is marked lost (its request fails), work that waited
still waits or runs, nothing is issued twice, and the auditor finds the books
balanced.  As an operator types it, in subprocesses with a private home;
prints the time to recover."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from legionrm.config import default_cluster_path

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray


def test_a_new_up_on_the_same_home_knows_what_the_lost_cluster_held(tmp_path: Path, capsys) -> None:
    env = {**os.environ, "LEGIONRM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)

    def lrm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "legionrm.cli", *args], env=env, cwd=ROOT, text=True,
                              capture_output=True, timeout=timeout)

    def requests() -> dict[str, str]:
        out = lrm("list", "--json")
        assert out.returncode == 0, out.stderr
        return {r["id"]: r["state"] for r in json.loads(out.stdout)["requests"]}

    run = tmp_path / "run.toml"
    run.write_text('request_id = "r-run"\n[identity]\nuser = "%s"\n[[object]]\nclass_name = "Command"\n'
                   'cpus = 1\nmemory_gb = 0.2\nargs = { command = "sleep 600" }\n' % os.environ.get("USER", "root"))
    # the work runs as the service's own account here (a test system: this user is trusted with it)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(default_cluster_path().read_text()
                       + f'\n[runner]\nrun_as = "service"\nwork_dir = "{tmp_path / "work"}"\n')
    up = lrm("up", "--cluster", str(cluster), "--no-dashboard", "--no-ray-dashboard", "--no-ray-token", "--timeout", "90")
    try:
        assert up.returncode == 0, up.stderr
        sub = lrm("submit", str(run))
        assert sub.returncode == 0, sub.stderr + sub.stdout
        assert requests() == {"r-run": "running"}
    finally:
        down = lrm("down", "--force")  # the cluster goes away with its work; the home (and state) stays
    assert down.returncode == 0, down.stderr
    assert (tmp_path / "home" / "state" / "scheduler.db").exists()

    t0 = time.monotonic()
    again = lrm("up", "--cluster", str(cluster), "--no-dashboard", "--no-ray-dashboard", "--no-ray-token",
                "--timeout", "90")
    try:
        assert again.returncode == 0, again.stderr
        deadline = time.monotonic() + 30
        while (states := requests()).get("r-run") == "running" and time.monotonic() < deadline:
            time.sleep(0.5)  # the watch finds the instance's host gone with the old cluster
        recovered = time.monotonic() - t0
        with capsys.disabled():
            print(f"\n  whole cluster restarted: up again and the lost work accounted for in {recovered:.1f} s")
        assert states == {"r-run": "failed"}  # lost with its cluster, never started twice
        show = json.loads(lrm("show", "r-run", "--json").stdout)
        assert [i["state"] for i in show["instances"]] == ["lost"]
        audit = lrm("audit", "--json")
        assert json.loads(audit.stdout)["findings"] == [], audit.stdout
    finally:
        lrm("down", "--force")
