"""The operator's path end to end, as a user types it, in subprocesses with a
private LEGIONRM_HOME: up (a free port, progress, a summary) -> status ->
submit twice (the second a clean one-line refusal, and a JSON object under
--json) -> a bad query on the live Collection (its caret, no traceback) ->
down in seconds, nothing left.  Starts its own Ray head (not the session
cluster) and always takes it down.  Also: Ray's real exception classes are
the ones cli/errors.py recognises by name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from legionrm.cli.errors import describe

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray


def test_real_ray_errors_are_described() -> None:
    from ray.exceptions import ActorDiedError, GetTimeoutError, RayTaskError

    from legionrm.errors import SchedulingError

    assert describe(GetTimeoutError("Get timed out")).code == "timeout"
    assert describe(ActorDiedError()).code == "actor_died"
    wrapped = RayTaskError("f", "Traceback ...\x1b[31m", SchedulingError("already scheduled")).as_instanceof_cause()
    assert (describe(wrapped).code, describe(wrapped).message) == ("SchedulingError", "already scheduled")


def test_up_status_submit_down(tmp_path: Path) -> None:
    env = {**os.environ, "LEGIONRM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled",
           "COLUMNS": "200"}
    env.pop("RAY_ADDRESS", None)

    def lrm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "legionrm.cli", *args], env=env, cwd=ROOT, text=True,
                              capture_output=True, timeout=timeout)

    t = time.monotonic()
    up = lrm("up", "--timeout", "90")
    up_s = time.monotonic() - t
    try:
        assert up.returncode == 0, up.stderr
        assert "legionrm is up at 127.0.0.1:" in up.stderr and "15 resources (13 hosts, 2 vaults)" in up.stderr  # 12 from the file, the Ray node bound
        assert "logs:" in up.stderr and "legionrm down" in up.stderr and "WARNING" not in up.stderr
        dash = re.search(r"dashboard: (http://127\.0\.0\.1:\d+/)(\?key=[\w-]+)", up.stderr)
        metrics = re.search(r"metrics for Prometheus: (http://\S+/metrics)", up.stderr)
        assert dash and metrics, up.stderr
        with urllib.request.urlopen(dash.group(1) + "api/state" + dash.group(2), timeout=10) as r:
            assert json.loads(r.read())["summary"]["hosts"] == 13  # legionrm's dashboard sees the system
        with pytest.raises(urllib.error.HTTPError) as no_key:  # every host and everyone's work: not without the key
            urllib.request.urlopen(dash.group(1) + "api/state", timeout=10)
        assert no_key.value.code == 403 and json.loads(no_key.value.read())["code"] == "auth.no_proof"
        with urllib.request.urlopen(metrics.group(1), timeout=10) as r:
            assert r.status == 200  # Ray's metrics export, for Prometheus to scrape
        st = json.loads(lrm("status", "--json").stdout)
        assert (st["resources"], st["hosts"], st["vaults"]) == (15, 13, 2)
        assert all("memory_mb" in v for v in st["pools"]["/"].values() if isinstance(v, dict))

        again = lrm("up")
        assert again.returncode == 2 and "already up" in again.stderr

        req = str(ROOT / "examples" / "requests" / "workers.toml")
        first = lrm("submit", req)
        assert first.returncode == 0, first.stderr
        second = lrm("submit", req)
        assert second.returncode == 2 and second.stdout == ""
        assert second.stderr.strip() == "legionrm submit: request id 'workers-1' was already scheduled"
        as_json = json.loads(lrm("submit", req, "--json").stdout)
        assert as_json["error"]["code"] == "SchedulingError"

        shell = subprocess.run([sys.executable, "-m", "legionrm.cli", "shell"], input="$cpus >=\n\\explain nosuch $cpus > 1\n",
                               env=env, cwd=ROOT, text=True, capture_output=True, timeout=60)
        assert shell.stdout.splitlines()[:3] == ["error: line 1, column 9: query ends too early (expected an expression)",
                                                 "$cpus >=", "        ^"]
        assert "error: no resource named 'nosuch' in the collection" in shell.stdout
        assert "Traceback" not in shell.stdout + shell.stderr and "\x1b" not in shell.stdout
    finally:
        t = time.monotonic()
        down = lrm("down")
        down_s = time.monotonic() - t
    assert down.returncode == 0 and "legionrm is down" in down.stderr, down.stderr
    assert not (tmp_path / "home" / "up.json").exists()
    print(f"up {up_s:.1f} s, down {down_s:.1f} s")
    assert down_s < 10
