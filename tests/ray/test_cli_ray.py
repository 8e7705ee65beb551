"""The operator's path end to end, as a user types it, in subprocesses with a
private LEGIONRM_HOME: up (a free port, the gateway, progress, a summary) ->
status -> a user added, who holds only their credentials file: submit twice
(the example names no request id, so both go in), list, show, cancel; the
other user's cancel refused -> a Counter deactivated into its Ray node's own
vault and activated again (one line each) -> a bad query through the gateway
(its caret, no traceback) -> down in seconds, nothing left.  Starts its own Ray head (not the session
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
from legionrm.homefs import exposed

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray


def test_real_ray_errors_are_described() -> None:
    from ray.exceptions import ActorDiedError, GetTimeoutError, RayTaskError

    from legionrm.errors import SchedulingError

    assert describe(GetTimeoutError("Get timed out")).code == "timeout"
    assert describe(ActorDiedError()).code == "actor_died"
    wrapped = RayTaskError("f", "Traceback ...\x1b[31m", SchedulingError("already scheduled")).as_instanceof_cause()
    assert (describe(wrapped).code, describe(wrapped).message) == ("SchedulingError", "already scheduled")


@pytest.mark.parametrize(("nodes", "taken", "want"), [
    ({"ray-1a2b3c4d": "1a2b3c4d99"}, set(), {"vault-1a2b3c4d": ("ray-1a2b3c4d", "1a2b3c4d99")}),
    ({"ray-a": "A", "ray-b": "B"}, {"vault-a"}, {"vault-b": ("ray-b", "B")}),  # the file's own vault-a stays
    ({}, set(), {}),
], ids=["one-node", "file-names-one", "no-nodes"])
def test_each_ray_node_gets_a_vault_serving_it_alone(nodes: dict[str, str], taken: set[str],
                                                     want: dict[str, tuple[str, str]]) -> None:
    from legionrm.system import node_vaults

    got = node_vaults(nodes, taken)
    assert {name: (spec.serves[0], node) for name, (spec, node) in got.items()} == want
    assert all(len(spec.serves) == 1 and spec.attributes["storage_gb"] > 0 for spec, _ in got.values())


def test_raylet_notes_stay_off_a_commands_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    import ray._private.worker as ray_worker

    from legionrm.system.driver import _raylet_notes_to_log

    _raylet_notes_to_log()
    _raylet_notes_to_log()  # twice: wrapped once
    note = {"lines": ["WARNING: 14 PYTHON worker processes have been started"], "pid": "raylet", "is_err": False}
    ray_worker.print_to_stdstream(note, ignore_prefix=False)
    assert capsys.readouterr().out == ""
    ray_worker.print_to_stdstream({"lines": ["hello from a task"], "pid": 123, "is_err": False}, ignore_prefix=True)
    assert "hello from a task" in capsys.readouterr().out  # a worker's own output still prints


def test_up_status_submit_down(tmp_path: Path) -> None:
    env = {**os.environ, "LEGIONRM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled",
           "COLUMNS": "200"}
    env.pop("RAY_ADDRESS", None)

    def lrm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "legionrm.cli", *args], env=env, cwd=ROOT, text=True,
                              capture_output=True, timeout=timeout)

    home = tmp_path / "home"
    try:  # `down` in the end whatever happens, also when `up` itself does not return in time
        t = time.monotonic()
        up = lrm("up", "--timeout", "150", "--gateway-port", "0", timeout=200)  # the gateway too: a few seconds more
        up_s = time.monotonic() - t
        assert up.returncode == 0, up.stderr
        assert "legionrm is up at 127.0.0.1:" in up.stderr and "16 resources (13 hosts, 3 vaults)" in up.stderr  # 12 hosts from the file, the Ray node bound, with its vault
        assert "logs:" in up.stderr and "legionrm down" in up.stderr and "WARNING" not in up.stderr
        assert re.search(r"gateway: http://127\.0\.0\.1:\d+", up.stderr), up.stderr
        dash = re.search(r"dashboard: (http://127\.0\.0\.1:\d+/)(\?key=[\w-]+)", up.stderr)
        metrics = re.search(r"metrics for Prometheus: (http://\S+/metrics)", up.stderr)
        assert dash and metrics, up.stderr
        with urllib.request.urlopen(dash.group(1) + "api/state" + dash.group(2), timeout=10) as r:
            view = json.loads(r.read())
        assert view["summary"]["hosts"] == 13 and view["errors"] == []  # the gateway's dashboard sees the system
        with pytest.raises(urllib.error.HTTPError) as no_key:  # every host and everyone's work: not without the key
            urllib.request.urlopen(dash.group(1) + "api/state", timeout=10)
        assert no_key.value.code == 403 and json.loads(no_key.value.read())["code"] == "auth.no_proof"
        with urllib.request.urlopen(metrics.group(1), timeout=10) as r:
            assert r.status == 200  # Ray's metrics export, for Prometheus to scrape
        st = json.loads(lrm("status", "--json").stdout)  # the operator: the credentials `up` wrote into the home
        assert len(st["hosts"]) == 13 and st["scheduler"] is not None
        assert st["answering"] == {"total": 16, "not_answering": [], "refusals": []}
        assert list(exposed(home)) == []  # up.json (the dashboard's key), logs, keys, state: 0600/0700
        assert all("memory_mb" in v for v in st["scheduler"]["pools"]["/"].values() if isinstance(v, dict))

        again = lrm("up")
        assert again.returncode == 2 and "already up" in again.stderr

        # a user holding only their credentials file
        assert lrm("user", "add", "carol").returncode == 0 and lrm("user", "add", "dave").returncode == 0
        for u in ("carol", "dave"):
            assert (home / "auth" / "users" / f"{u}.credentials").stat().st_mode & 0o777 == 0o600
        user_env = {k: v for k, v in env.items() if k not in ("LEGIONRM_HOME",)}

        def as_user(name: str, *args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "legionrm.cli", *args, "--credentials",
                                   str(home / "auth" / "users" / f"{name}.credentials")], env=user_env, cwd=ROOT,
                                  text=True, capture_output=True, timeout=120)

        req = str(ROOT / "examples" / "requests" / "workers.toml")
        ids = []
        for _ in range(2):  # no request_id in the example: a second submit does not conflict
            out = as_user("carol", "submit", req, "--json")
            assert out.returncode == 0, out.stdout + out.stderr
            ids.append(json.loads(out.stdout)["id"])
        listed = as_user("carol", "list", "--format", "{id} {user}")
        assert sorted(listed.stdout.split()) == sorted([*ids, "carol", "carol"]), listed.stderr
        assert ids[0] in as_user("carol", "show", ids[0]).stdout
        refused = as_user("dave", "cancel", ids[0])
        assert refused.returncode == 1 and "auth.not_owner" in refused.stdout
        assert as_user("carol", "cancel", *ids).returncode == 0

        # a Counter rests in its Ray node's own vault and comes back, each answer one line
        counter = lrm("submit", str(ROOT / "examples" / "requests" / "counter.toml"))
        assert counter.returncode == 0 and "WARNING" not in counter.stdout, counter.stdout + counter.stderr
        oid = re.search(r"^  (\S+)  Counter +on (ray-\w+)  vault (vault-\w+)$", counter.stdout, re.MULTILINE)
        assert oid and oid.group(3) == "vault-" + oid.group(2).removeprefix("ray-"), counter.stdout
        inert = lrm("deactivate", oid.group(1))
        assert inert.returncode == 0 and re.fullmatch(rf"{re.escape(oid.group(1))}: inert, in {oid.group(3)} \(\d+ bytes\)\n",
                                                     inert.stdout), inert.stdout + inert.stderr
        back = lrm("activate", oid.group(1), "--on", f'$name == "{oid.group(2)}"')
        assert back.returncode == 0 and re.fullmatch(rf"{re.escape(oid.group(1))}: running, \S+ on {oid.group(2)}\n", back.stdout), back.stderr

        shell = subprocess.run([sys.executable, "-m", "legionrm.cli", "shell"], input="$cpus >=\n\\explain nosuch $cpus > 1\n",
                               env=env, cwd=ROOT, text=True, capture_output=True, timeout=60)
        assert shell.stdout.splitlines()[:3] == ["error: line 1, column 9: query ends too early (expected an expression)",
                                                 "$cpus >=", "        ^"]
        assert "nosuch" in shell.stdout
        assert "Traceback" not in shell.stdout + shell.stderr and "\x1b" not in shell.stdout
    finally:
        t = time.monotonic()
        down = lrm("down")
        down_s = time.monotonic() - t
    assert down.returncode == 0 and "legionrm is down" in down.stderr, down.stderr
    assert not (tmp_path / "home" / "up.json").exists()
    print(f"up {up_s:.1f} s, down {down_s:.1f} s")  # reported, not asserted: tests never assert a time
