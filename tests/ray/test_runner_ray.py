"""Issue 25 live: Command work on a real Ray node runs as its owner's OS
account, in its own process, never in a Ray worker, and keeps its result.

As root, with two throwaway accounts (tests/osaccounts.py): alice's shell
job and bob's function job each run as their mapped account; from inside,
nothing under the service's home can be read and nothing of Ray's is in the
environment; ``exit 3`` ends failed with its code and output kept, which
bob cannot read; a cancelled ``sleep`` leaves no process of its session;
``history`` lists the jobs with their cpu-seconds; a user with no account is
refused at submit."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from legionrm.models import ClassSpec, Identity, ObjectRequest, RunnerSpec, SchedulingRequest

pytestmark = pytest.mark.ray
WAIT_S = 90.0


@pytest.fixture(scope="module")
def live(ray_cluster, ray_nodes, os_accounts, work_python):
    from legionrm.auth import Registry
    from legionrm.auth.guard import auth_home, ensure_home, signer_for
    from legionrm.models import ClusterSpec
    from legionrm.system import boot

    home, state = tempfile.mkdtemp(prefix="lrm-run"), tempfile.mkdtemp(prefix="lrm-state")
    work = f"/tmp/lrm-run-work-{os.getpid()}"
    ensure_home(home, operator="ops")
    reg = Registry(auth_home(home))
    reg.add_user("alice", os_user=os_accounts["alice"])
    reg.add_user("bob", os_user=os_accounts["bob"])
    reg.add_user("carol")  # no OS account of that name
    spec = ClusterSpec(classes=(ClassSpec(name="Command", implementation="legionrm.hostobj.work:Command",
                                          host_list=("ray-*",)),),
                       runner=RunnerSpec(python=work_python, work_dir=work, kill_grace_s=2.0))
    system = boot(spec, ray_nodes={"ray-a": ray_nodes["node_a"]}, heartbeat_s=0.5, auth_home=home, state_dir=state)
    signers = {u: signer_for(home, u) for u in ("alice", "bob", "carol", "ops")}
    try:
        yield {u: dataclasses.replace(system, signer=s) for u, s in signers.items()}, home, Path(state)
    finally:
        dataclasses.replace(system, signer=signers["ops"]).shutdown()
        for d in (home, state, work):
            shutil.rmtree(d, ignore_errors=True)


def submit(sys_: Any, rid: str, user: str, **args: str) -> Any:
    return sys_.schedule(SchedulingRequest(request_id=rid, identity=Identity(user=user), objects=(
        ObjectRequest(class_name="Command", cpus=1, memory_gb=0.2, args=args),)))


def accepted(sys_: Any, rid: str, user: str, **args: str) -> Any:
    """Submit; the answer is placed, or pending: ray-a has 1 cpu, and the work of the test before may
    hold it until the Collection hears it ended (a heartbeat, 0.5 s), when this one starts."""
    got = submit(sys_, rid, user, **args)
    assert got.ok or (got.state == "pending" and not got.instances), got.message
    return got


def info_once(sys_: Any, rid: str, done: Callable[[Any], bool], what: str) -> Any:
    """The request's info once ``done`` holds of it (polled for up to ``WAIT_S``)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        info = sys_._signed("request_info", {"request_id": rid})
        if done(info):
            return info
        time.sleep(0.25)
    raise AssertionError(f"{rid} did not {what}: {info}")


def running(sys_: Any, rid: str) -> Any:
    """The request once its instance runs."""
    return info_once(sys_, rid, lambda i: bool(i.instances), "start")


def ended(sys_: Any, rid: str) -> Any:
    """The request once it ended and its exit code is known."""
    return info_once(sys_, rid, lambda i: i.state in ("completed", "failed", "cancelled") and i.exit_code is not None,
                     "end")


def logs(sys_: Any, rid: str, stream: str = "stdout") -> str:
    data, _, _ = sys_._signed("logs", {"request_id": rid, "instance": None, "stream": stream, "offset": 0,
                                       "limit": 1 << 20})
    return data.decode()


def test_a_shell_job_runs_as_its_account_with_nothing_of_the_service(live, os_accounts) -> None:
    users, home, _ = live
    accepted(users["alice"], "run-sh", "alice",
             command=f"id -un; find {home} -readable 2>/dev/null | wc -l; env; python3 -c 'import ray' || echo no-ray")
    info = ended(users["alice"], "run-sh")
    out = logs(users["alice"], "run-sh").splitlines()
    assert info.state == "completed" and out[0] == os_accounts["alice"]
    assert out[1] == "0"  # not one file or directory under the service's home is readable
    env = dict(line.split("=", 1) for line in out[2:] if "=" in line)
    assert not [k for k in env if k.startswith("RAY_")] and "LEGIONRM_HOME" not in env and "no-ray" in out
    assert env["LEGIONRM_REQUEST_ID"] == "run-sh"


def test_a_function_job_runs_as_its_account_and_returns_its_value(live, os_accounts) -> None:
    users, _, _ = live
    accepted(users["bob"], "run-fn", "bob", function="getpass:getuser")
    info = ended(users["bob"], "run-fn")
    assert info.state == "completed" and info.instances[0].result.value == os_accounts["bob"]


def test_exit_3_fails_keeps_its_output_and_only_its_owner_reads_it(live) -> None:
    users, _, _ = live
    accepted(users["alice"], "run-3", "alice", command="echo to-out; echo to-err >&2; exit 3")
    info = ended(users["alice"], "run-3")
    assert (info.state, info.exit_code) == ("failed", 3)
    assert logs(users["alice"], "run-3") == "to-out\n" and logs(users["alice"], "run-3", "stderr") == "to-err\n"
    with pytest.raises(Exception, match="auth.not_owner"):
        logs(users["bob"], "run-3")


def test_cancelling_a_sleep_leaves_no_process_behind(live) -> None:
    from legionrm.hostobj.runner.files import session_members

    users, _, state = live
    accepted(users["alice"], "run-sleep", "alice", command="sleep 600 & sleep 600")
    instance = running(users["alice"], "run-sleep").instances[0].id
    pid = int((state / "runs" / "ray-a" / instance / "pid").read_text())
    assert session_members(pid)
    users["alice"]._signed("cancel", {"request_id": "run-sleep", "reason": "cancelled by its user"})
    info = ended(users["alice"], "run-sleep")
    assert info.state == "cancelled" and info.instances[0].result.state == "cancelled"
    assert session_members(pid) == []


def test_history_lists_each_finished_job_with_its_cpu_seconds_to_its_owner(live) -> None:
    users, _, _ = live
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        mine = users["alice"]._signed("history", {"user": None, "since": None, "until": None, "state": None})
        if {"run-sh", "run-3"} <= {r.request_id for r in mine}:
            break
        time.sleep(0.5)
    assert {r.user for r in mine} == {"alice"} and all(r.cpu_s >= 0 and r.host == "ray-a" for r in mine)
    assert [r.exit_code for r in mine if r.request_id == "run-3"] == [3]
    theirs = users["bob"]._signed("history", {"user": None, "since": None, "until": None, "state": None})
    assert {r.user for r in theirs} <= {"bob"}


def test_a_user_with_no_os_account_is_refused_at_submit(live) -> None:
    users, _, _ = live
    got = submit(users["carol"], "run-carol", "carol", command="true")
    assert not got.ok and got.failures[0].code == "auth.no_os_user" and "\n" not in got.message


def test_a_walltime_end_is_timed_out_and_leaves_no_process_behind(live) -> None:
    from legionrm.hostobj.runner.files import session_members

    users, _, state = live
    got = users["alice"].schedule(SchedulingRequest(request_id="run-wall", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Command", cpus=1, memory_gb=0.2, walltime_s=3,
                      args={"command": "sleep 600 & sleep 600"}),)))
    assert got.ok or got.state == "pending", got.message  # (pending: see accepted)
    instance = running(users["alice"], "run-wall").instances[0].id
    pid = int((state / "runs" / "ray-a" / instance / "pid").read_text())
    info = ended(users["alice"], "run-wall")
    assert info.instances[0].result.state == "timed_out", info
    assert session_members(pid) == []


def test_from_inside_the_work_connecting_to_a_token_ray_fails(os_accounts, tmp_path) -> None:
    """A Ray head with token auth (as ``legionrm up`` starts one): alice's work, started by the
    runner as a host starts it, cannot call its GCS (no token: Ray refuses); given a copy of the
    token it could, so the token is what stands between work and Ray, and work never has it (its
    environment is scrubbed and the service's home is unreadable: the tests above)."""
    import signal
    import subprocess
    import sys

    import ray

    from legionrm.cli.updown import free_port, port_open
    from legionrm.hostobj.runner import Account, Runner, RunnerSettings, Work

    site = str(Path(ray.__file__).parents[1])
    temp = Path(tempfile.mkdtemp(prefix="lrm-tok-", dir="/tmp"))  # short: socket paths are capped
    temp.chmod(0o755)
    token = temp / "token"
    token.write_text(os.urandom(32).hex())
    port = free_port()
    head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={port}",
                             "--include-dashboard=false", "--num-cpus=0", f"--temp-dir={temp / 'r'}",
                             "--node-ip-address=127.0.0.1", "--disable-usage-stats"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)})
    runner = Runner(RunnerSettings(log_dir=tmp_path / "runs", work_root=tmp_path / "work", kill_grace_s=2.0))
    probe = ("import sys\ntry:\n    from ray._raylet import GcsClient\nexcept ImportError:\n    sys.exit('no ray')\n"
             f"try:\n    print('answered', len(GcsClient(address='127.0.0.1:{port}').internal_kv_keys(b'', None, timeout=20)))\n"
             "except Exception as exc:\n    print('refused', type(exc).__name__)\n")
    alice = Account.named(os_accounts["alice"])
    try:
        deadline = time.monotonic() + WAIT_S
        while not port_open(f"127.0.0.1:{port}") and time.monotonic() < deadline:
            assert head.poll() is None, "the token-auth Ray head exited"
            time.sleep(0.2)
        time.sleep(2)  # the GCS takes the port before it answers
        for iid, env in (("no-token", {}), ("given-token", {"RAY_AUTH_MODE": "token",
                                                            "RAY_AUTH_TOKEN_PATH": str(token)})):
            token.chmod(0o644 if env else 0o600)
            run = runner.start(Work(iid, command=f"/usr/bin/python3.11 -c \"{probe}\"",
                                    env={"PYTHONPATH": site, **env}), alice)
            run.wait(WAIT_S)
            said = runner.output(iid)[0].decode() + runner.output(iid, "stderr")[0].decode()
            if "no ray" in said:
                pytest.skip(f"OS account {alice.name} cannot import ray from {site}: it cannot reach Ray at all")
            if env:
                assert "answered" in said, said  # the probe works: with the token, the GCS answers
            else:
                assert "refused AuthenticationError" in said and "answered" not in said, said
    finally:
        runner.stop_all("cancelled")
        os.killpg(head.pid, signal.SIGTERM)  # the head's whole process group: every Ray process it started
        try:
            head.wait(10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)  # what SIGTERM left (a raylet, an agent)
        except ProcessLookupError:
            pass
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)
