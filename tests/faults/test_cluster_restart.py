"""The whole Ray cluster goes away and `legionrm up` starts again on the same
home: the Scheduler reloads every request from its state store; the work that
ran on the lost cluster is marked lost (its request ends node_lost), work that waited
still waits or runs, nothing is issued twice, and the auditor finds the books
balanced.  As an operator types it, in subprocesses with a private home
(the first system SIGKILLed whole); prints the time to recover.

Then a second boot on the same home and state dir, on the session's Ray,
after every actor of the first was killed (and after a clean shutdown):
every resource answers (no ``auth.bad_signature`` from keys issued anew),
the capacity is whole, the requests acknowledged before are back, a new
submit runs, and nothing under the home is readable by anyone else."""

from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from legionrm.homefs import exposed
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from tests.clusters import lean_cluster
from tests.faults import durable_system

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray

LEAN_FILE = """
[[host]]
name = "batch"
count = 2
nodepool = "batch"
attributes = { cpus = 4, memory_gb = 8 }

[[class]]
name = "Command"
implementation = "legionrm.hostobj.work:Command"
host_list = ["ray-*"]
"""


def _kill_head(home: Path) -> bool:
    """SIGKILL the process group of the Ray head ``up`` started on ``home`` (every
    Ray process of it): the home stays, with up.json naming a head that is gone."""
    try:
        pid = int(json.loads((home / "up.json").read_text())["pid"])
        os.killpg(pid, signal.SIGKILL)
    except (OSError, KeyError, ValueError):
        return False
    return True


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

    run = tmp_path / "run.toml"  # its sleep outlives a SIGKILLed head (a session of its own): short, so it ends soon
    run.write_text('request_id = "r-run"\n[identity]\nuser = "%s"\n[[object]]\nclass_name = "Command"\n'
                   'cpus = 1\nmemory_gb = 0.2\nargs = { command = "sleep 120" }\n' % os.environ.get("USER", "root"))
    # the work runs as the service's own account here (a test system: this user is trusted with it);
    # a lean file (a host group, the Ray node bound as a host with its vault, the class r-run needs):
    # each actor of a boot is a worker process to start, twice here
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(LEAN_FILE + f'\n[runner]\nrun_as = "service"\nwork_dir = "{tmp_path / "work"}"\n')
    # --gateway-port 0: a free port, so another test's system on this machine never collides with it
    up = lrm("up", "--cluster", str(cluster), "--no-dashboard", "--no-ray-dashboard", "--no-ray-token",
             "--gateway-port", "0", "--timeout", "180", timeout=240)
    try:
        assert up.returncode == 0, up.stderr
        sub = lrm("submit", str(run))
        assert sub.returncode == 0, sub.stderr + sub.stdout
        assert requests() == {"r-run": "running"}
    finally:  # the whole system dies at once, as to a SIGKILL (or `down --force` if up did not finish)
        killed = _kill_head(tmp_path / "home") or lrm("down", "--force").returncode == 0
    assert killed
    assert (tmp_path / "home" / "state" / "scheduler.db").exists()

    t0 = time.monotonic()
    again = lrm("up", "--cluster", str(cluster), "--no-dashboard", "--no-ray-dashboard", "--no-ray-token",
                "--gateway-port", "0", "--timeout", "180", timeout=240)
    try:
        assert again.returncode == 0, again.stderr
        status = json.loads(lrm("status", "--json").stdout)
        assert status["answering"]["not_answering"] == [], status["answering"]  # no auth.bad_signature
        assert list(exposed(tmp_path / "home")) == []
        deadline = time.monotonic() + 30
        while (states := requests()).get("r-run") == "running" and time.monotonic() < deadline:
            time.sleep(0.5)  # the watch finds the instance's host gone with the old cluster
        recovered = time.monotonic() - t0
        with capsys.disabled():
            print(f"\n  whole cluster restarted: up again and the lost work accounted for in {recovered:.1f} s")
        assert states == {"r-run": "node_lost"}  # lost with its cluster, never started twice
        show = json.loads(lrm("show", "r-run", "--json").stdout)
        assert [i["state"] for i in show["instances"]] == ["lost"]
        audit = lrm("audit", "--json")
        assert json.loads(audit.stdout)["findings"] == [], audit.stdout
    finally:
        lrm("down", "--force")


# --- a second boot on the same home, on the session's Ray ---------------------------------------


def _booted(spec, tmp_path):
    """A system on the home and state dir under ``tmp_path`` (whichever boot of them it is),
    signing as this driver's user, whom the first boot made its administrator."""
    return durable_system(spec, "", state_dir=str(tmp_path / "state"), auth_home=str(tmp_path / "home"))


def _work(rid: str, cpus: float, constraint: str = '$nodepool == "batch"') -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=getpass.getuser()), objects=(
        ObjectRequest(class_name="Worker", cpus=cpus, memory_gb=1, constraint=constraint),))


def _capacity(system) -> dict[str, float]:
    return {r.name: float(r.attributes.get("cpus", 0)) for r in system.query("true").records}


def _states(system, why: bool = False) -> dict[str, str]:
    """Each request's state (with ``why``: and its reason, so a failed assertion says what happened)."""
    from legionrm.system import call

    proof = system.signer.sign("list_requests", {"user": None, "state": None}, to="scheduler")
    return {i.id: f"{i.state}: {i.reason}" if why else i.state
            for i in call(system.scheduler.list_requests.remote(None, None, proof=proof))}


def _kill_whole(system) -> None:
    """Every actor of ``system`` killed at once, as SIGKILL would (no shutdown, no restart)."""
    import ray

    from legionrm.naming import named_actor
    from legionrm.testing import eventually

    for h in system.handles():
        ray.kill(h, no_restart=True)
    gone = eventually(lambda: [n for n in system.names() if named_actor(n) is not None], lambda left: not left)
    assert gone == [], gone


def _answers_whole(system, capacity: dict[str, float]) -> None:
    from legionrm.system import answers, call

    got = answers(system)
    assert got.ok and got.total == len(system.resources), got.line()  # no auth.bad_signature, nobody silent
    refused = call(system.collection.refused_writes.remote(proof=system.signer.sign("refused_writes", {}, to="collection")))
    assert refused == []
    assert _capacity(system) == capacity  # every host's cpus: the cluster is whole
    run = system.schedule(_work("after", 1))
    assert run.ok and run.state == "running", run.message


@pytest.mark.parametrize("how", ["killed", "down"], ids=["whole-system-killed", "clean-down-up"])
def test_a_second_boot_on_the_same_home_answers_from_every_resource(ray_cluster, tmp_path, how) -> None:
    spec = lean_cluster()  # two host groups, a vault, the class the work is of: what the checks below ask of
    before = {}
    with _booted(spec, tmp_path) as first:
        assert first.signer is not None  # the driver's user is the home's administrator
        capacity = _capacity(first)
        run = first.schedule(_work("before-run", 2))
        assert run.ok, run.message
        host = run.instances[0].host
        wait = first.schedule(_work("before-wait", capacity[host], f'$name == "{host}"'))
        assert wait.state == "pending", wait.message  # acknowledged, and waits for before-run
        before = _states(first)
        if how == "killed":
            _kill_whole(first)
    with _booted(spec, tmp_path) as again:
        _answers_whole(again, capacity)
        after = _states(again)
        assert after["before-wait"] in ("pending", "admitted", "placing", "running"), _states(again, why=True)
        if how == "killed":  # its host kept what it granted: the work is found again
            assert after["before-run"] == "running"
            # and its class object, new, counts it again (else the audit finds class.count)
            from legionrm.system import call
            from legionrm.testing import eventually

            def miscounted() -> list:
                findings = call(again.scheduler.audit.remote(proof=again.signer.sign("audit", {}, to="scheduler")))
                return [f for f in findings if f.code == "class.count"]

            assert eventually(miscounted, lambda got: not got, timeout_s=60, every_s=1) == []
        assert set(before) <= set(after)
        private = [(str(p), oct(m)) for d in ("home", "state") for p, m in exposed(tmp_path / d)]
        assert private == []  # the registry, keys, state stores (-wal, -shm): the service's alone
