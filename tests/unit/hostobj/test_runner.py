"""The work runner (legionrm/hostobj/runner.py): work runs as its owner's OS
account, in its own session, with nothing of the service's, and keeps its
result; every end leaves no process behind.

The tests that switch accounts run as root and make two accounts
(tests/osaccounts.py); they skip, saying so, when not root."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from legionrm.hostobj.runner.accounts import Account, RunError
from legionrm.hostobj.runner.cgroup import CGROUP_DIR, Cgroup
from legionrm.hostobj.runner.files import read_output, session_members, trim
from legionrm.hostobj.runner.process import Runner, RunnerSettings, Work, stop_state


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A service home as `legionrm up` makes one: 0700, a private key 0600 in it."""
    h = tmp_path / "home"
    (h / "auth" / "users").mkdir(parents=True)
    h.chmod(0o700)
    key = h / "auth" / "users" / "root.key"
    key.write_text("SECRET")
    key.chmod(0o600)
    return h


@pytest.fixture
def runner(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Runner:
    work_root = Path(os.environ.get("TMPDIR", "/tmp")) / f"legionrm-test-work-{os.getpid()}"
    r = Runner(RunnerSettings(log_dir=home / "state" / "runs", work_root=work_root, kill_grace_s=2.0))
    yield r
    r.stop_all("cancelled")
    import shutil

    shutil.rmtree(work_root, ignore_errors=True)


def out(runner: Runner, iid: str, stream: str = "stdout") -> str:
    return runner.output(iid, stream)[0].decode()


# --- pure parts -------------------------------------------------------------------------


@pytest.mark.parametrize("reason, state", [
    ("cancelled by its user", "cancelled"),
    ("walltime", "timed_out"),
    ("reservation ended", "timed_out"),
    ("preempted by r-9", "preempted"),
    ("host stopped", "node_lost"),
    ("stopped", "cancelled"),
], ids=lambda v: str(v).replace(" ", "-"))
def test_a_stop_reason_reads_as_an_end_state(reason: str, state: str) -> None:
    assert stop_state(reason) == state


def test_output_is_capped_with_its_tail_kept_and_read_from_an_offset(tmp_path: Path) -> None:
    d = tmp_path / "i1"
    d.mkdir()
    (d / "stdout").write_bytes(b"a" * 900 + b"TAIL")
    trim(d / "stdout", 200)
    data = (d / "stdout").read_bytes()
    assert data.endswith(b"TAIL") and len(data) == 100
    first, at = read_output(tmp_path, "i1", "stdout", 0, 60)
    rest, end = read_output(tmp_path, "i1", "stdout", at)
    assert first + rest == data and end == 100
    assert read_output(tmp_path, "i1", "stdout", 5000)[0] == data  # trimmed meanwhile: from the start
    assert read_output(tmp_path, "nope", "stderr") == (b"", 0)
    with pytest.raises(ValueError, match="stream"):
        read_output(tmp_path, "i1", "journal")


@pytest.mark.parametrize("kw, says", [
    ({}, "exactly one"),
    ({"command": "true", "function": "os:getcwd"}, "exactly one"),
    ({"function": "os.getcwd"}, "module:name"),
    ({"command": "true", "instance_id": "../x"}, "directory"),
], ids=["neither", "both", "no-colon", "bad-id"])
def test_bad_work_is_refused_in_one_line(kw: dict, says: str) -> None:
    with pytest.raises(RunError, match=says):
        Work(**{"instance_id": "i1", **kw})


# --- as the service's own account (any user may run these) -------------------------------


def test_a_run_waited_for_is_in_the_runners_results_not_its_running(runner: Runner, monkeypatch) -> None:
    """``Run.wait`` returns only once the runner's books say it ended (a slow book-keeping delays the
    waiter, never shows it a run that ended as running)."""
    books = runner._ended

    def slow_books(run: Any) -> None:
        time.sleep(0.3)
        books(run)

    monkeypatch.setattr(runner, "_ended", slow_books)
    run = runner.start(Work("i9", request_id="r9", command="true"), Account.service())
    res = run.wait(30)
    assert res is not None and not runner.is_running("i9") and runner.result("i9") == res


def test_exit_3_fails_with_rc_3_and_keeps_stdout_and_stderr(runner: Runner) -> None:
    run = runner.start(Work("i3", request_id="r3", command="echo to-out; echo to-err >&2; exit 3"), Account.service())
    res = run.wait(30)
    assert res is not None and (res.state, res.exit_code, res.signal) == ("failed", 3, None)
    assert out(runner, "i3") == "to-out\n" and out(runner, "i3", "stderr") == "to-err\n"
    assert runner.result("i3") == res and not runner.is_running("i3")


def test_the_environment_is_scrubbed_and_the_ids_are_given(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    monkeypatch.setenv("LEGIONRM_HOME", "/secret/home")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "tok")
    run = runner.start(Work("ie", request_id="r-e", command="env", cpus=2, env={"MINE": "yes", "LEGIONRM_REQUEST_ID": "x"}),
                       Account.service())
    assert run.wait(30).state == "completed"
    env = dict(line.split("=", 1) for line in out(runner, "ie").splitlines() if "=" in line)
    assert not [k for k in env if k.startswith("RAY_")] and "LEGIONRM_HOME" not in env
    assert (env["LEGIONRM_REQUEST_ID"], env["LEGIONRM_INSTANCE_ID"], env["LEGIONRM_CPUS"], env["MINE"]) == (
        "r-e", "ie", "2", "yes")
    assert set(env) <= {"PATH", "HOME", "USER", "LOGNAME", "MINE", "PWD", "SHLVL", "_",
                        "LEGIONRM_REQUEST_ID", "LEGIONRM_INSTANCE_ID", "LEGIONRM_CPUS"}


@pytest.mark.parametrize("command, how", [
    ("sleep 600", "cancel"),
    ("sleep 600 & sleep 600", "cancel"),
    ("trap '' TERM; sleep 600", "cancel"),  # ignores SIGTERM: SIGKILL after the grace
    ("sleep 600", "walltime"),
    ("(sleep 600 &); exit 0", "leader-exits"),  # left in the background: swept at the end
], ids=["sleep", "background-child", "ignores-term", "walltime", "left-behind"])
def test_every_end_leaves_no_process_of_the_session(runner: Runner, command: str, how: str) -> None:
    run = runner.start(Work(f"k-{how}", command=command, walltime_s=1.0 if how == "walltime" else None),
                       Account.service())
    if how == "cancel":
        res = run.stop("cancelled")
        expect = "cancelled"
    else:
        res = run.wait(60)
        expect = "timed_out" if how == "walltime" else "completed"
    assert res is not None and res.state == expect
    assert session_members(run.pid) == []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def test_the_grants_limits_are_applied(runner: Runner) -> None:
    """Address space from memory_gb, cpu time from walltime_s (times the cores), cpu affinity to as
    many cores as granted (when the node has more), and a cgroup of its own (where the node allows),
    read from inside the run."""
    run = runner.start(Work("lim", command="cat /proc/self/limits; grep Cpus_allowed_list /proc/self/status; "
                                           "grep ^0:: /proc/self/cgroup", cpus=1, memory_gb=0.5, walltime_s=30.0),
                       Account.service())
    assert run.wait(30).state == "completed"
    text = out(runner, "lim")
    limits = {line[:26].strip(): line[26:].split()[:2] for line in text.splitlines() if line.startswith("Max ")}
    assert limits["Max address space"] == [str(1 << 29)] * 2
    assert limits["Max cpu time"] == ["30", "35"]  # the soft limit sends SIGXCPU, the hard one SIGKILL
    allowed = next(line.split(":")[1].strip() for line in text.splitlines() if line.startswith("Cpus_allowed_list"))
    if len(os.sched_getaffinity(0)) > 1:
        assert allowed.isdigit() and int(allowed) in os.sched_getaffinity(0)  # one core of the node's
    if runner._cgroup_root is not None:
        assert text.rstrip().endswith(f"/{CGROUP_DIR}/{os.getpid()}-lim")
        assert not (runner._cgroup_root / f"{os.getpid()}-lim").exists()  # gone with the run


@pytest.mark.parametrize("how, who", [("cancel", "service"), ("leader-exits", "service"), ("cancel", "alice")],
                         ids=["cancel", "leader-exits", "cancel-as-another-account"])
def test_a_process_that_left_its_session_is_ended_through_its_cgroup(runner: Runner, how: str, who: str,
                                                                     request: pytest.FixtureRequest) -> None:
    """``setsid`` takes a process out of the run's session and process group, not out of its cgroup
    (which a run of another account joins too, before its first instruction)."""
    if runner._cgroup_root is None:
        pytest.skip("no writable cgroup v2 with cgroup.kill here: a run is ended through its session alone")
    account = Account.service() if who == "service" else Account.named(request.getfixturevalue("os_accounts")[who])
    run = runner.start(Work(f"esc-{how}", command="setsid sleep 600 & echo $!" + ("; sleep 600" if how == "cancel" else "")),
                       account)
    deadline = time.monotonic() + 30
    while not out(runner, f"esc-{how}").strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    escaped = int(out(runner, f"esc-{how}"))
    res = run.stop("cancelled") if how == "cancel" else run.wait(60)
    assert res.state == ("cancelled" if how == "cancel" else "completed")
    assert not alive(escaped) and run.left() == []


def test_a_function_returns_its_value_as_json(runner: Runner) -> None:
    run = runner.start(Work("f1", function="os.path:join", args=("a", "b")), Account.service())
    res = run.wait(60)
    assert (res.state, res.value) == ("completed", "a/b")
    bad = runner.start(Work("f2", function="os:nosuchthing"), Account.service()).wait(60)
    assert bad.state == "failed" and bad.exit_code == 1 and "AttributeError" in bad.error


def test_the_figures_are_kept(runner: Runner) -> None:
    res = runner.start(Work("c1", command="i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"),
                       Account.service()).wait(120)
    assert res.state == "completed" and res.cpu_s > 0 and res.max_rss_kb > 0 and res.ended_at >= res.started_at


# --- as other accounts (root only) ---------------------------------------------------------


def test_a_shell_job_runs_as_its_account_and_cannot_read_the_service_home(
        runner: Runner, home: Path, os_accounts: dict[str, str]) -> None:
    alice = Account.named(os_accounts["alice"])
    key = home / "auth" / "users" / "root.key"
    run = runner.start(Work("a1", command=f"id -un; umask; cat {key} || echo unreadable; "
                                          f"ls {home} || echo unlistable; pwd; stat -c '%U %a' ."), alice)
    res = run.wait(30)
    lines = out(runner, "a1").splitlines()
    assert lines[0] == alice.name and lines[1] == "0077"
    assert "unreadable" in lines and "unlistable" in lines and "SECRET" not in out(runner, "a1")
    assert lines[-2].endswith("/a1") and lines[-1] == f"{alice.name} 700"
    assert res.state == "completed" and res.account == alice.name
    assert (home / "state" / "runs" / "a1" / "stdout").stat().st_mode & 0o077 == 0  # its output: the service's to give


def test_a_function_job_runs_as_its_account(runner: Runner, os_accounts: dict[str, str], work_python: str) -> None:
    bob = Account.named(os_accounts["bob"])
    settings = runner.settings
    r = Runner(RunnerSettings(log_dir=settings.log_dir, work_root=settings.work_root, python=work_python))
    res = r.start(Work("b1", function="getpass:getuser"), bob).wait(60)
    assert (res.state, res.value) == ("completed", bob.name), out(r, "b1", "stderr")


def test_an_interpreter_the_account_cannot_run_fails_in_one_line(runner: Runner, os_accounts: dict[str, str]) -> None:
    bob = Account.named(os_accounts["bob"])
    if bob.can_run(sys.executable):
        pytest.skip(f"{sys.executable} is runnable by every account here")
    with pytest.raises(RunError, match="cannot be run by OS account") as got:
        runner.start(Work("b2", function="getpass:getuser"), bob)
    assert "\n" not in str(got.value)


def test_cancelling_another_accounts_sleep_leaves_nothing(runner: Runner, os_accounts: dict[str, str]) -> None:
    alice = Account.named(os_accounts["alice"])
    run = runner.start(Work("a2", command="sleep 600 & sleep 600"), alice)
    assert run.stop("cancelled").state == "cancelled"
    assert session_members(run.pid) == []


def test_a_run_dies_with_the_process_of_its_host(tmp_path: Path) -> None:
    """The host's process is killed (a node's host actor): the run's leader goes with it (what the
    leader itself started may stay: the orphan sweep of the host's next process ends that)."""
    import signal
    import subprocess

    code = ("import sys, time; from pathlib import Path; from legionrm.hostobj.runner.accounts import Account; "
            "from legionrm.hostobj.runner import Runner, RunnerSettings, Work; "
            f"r = Runner(RunnerSettings(log_dir=Path({str(tmp_path / 'logs')!r}), work_root=Path({str(tmp_path / 'w')!r}))); "
            "run = r.start(Work('d1', command='exec sleep 600'), Account.service()); print(run.pid, flush=True); time.sleep(600)")
    host = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    try:
        pid = int(host.stdout.readline())
        assert session_members(pid) == [pid]  # the leader is the sleep
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait()
    deadline = time.monotonic() + 30
    while session_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(pid) == []
    left = tmp_path / "logs" / "d1" / "cgroup"
    if left.exists():  # what the next process of the host does with the cgroup this one left
        assert Cgroup(left.read_text()).remove()
