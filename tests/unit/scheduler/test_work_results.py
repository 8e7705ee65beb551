"""Command work through the whole in-process system with real runners: a
request's runs end it (``failed`` when its work failed), their exit codes,
output and accounting records are kept, a cancel leaves nothing behind, and
whose account work runs as is decided at submit (``auth.no_os_user``)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from legionrm import codes

from legionrm.config import parse_cluster
from legionrm.errors import SchedulingError
from legionrm.hostobj.runner.files import session_members
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest

WAIT_S = 60.0


def system(tmp_path: Path, run_as: str = "service", work_dir: str | None = None) -> LocalSystem:
    runner = {"run_as": run_as, "kill_grace_s": 2.0, "work_dir": work_dir or str(tmp_path / "work")}
    spec = parse_cluster({
        "host": [{"name": "h1", "attributes": {"cpus": 4, "memory_gb": 8}}],
        "class": [{"name": "Command", "implementation": "legionrm.hostobj.work:Command"}],
        "runner": runner})
    return LocalSystem(spec, runs_dir=tmp_path / "runs")


def submit(s: LocalSystem, rid: str, user: str, command: str, **kw: object):
    return s.scheduler.scheduleObjects(SchedulingRequest(request_id=rid, identity=Identity(user=user), objects=(
        ObjectRequest(class_name="Command", cpus=1, memory_gb=0.5, args={"command": command}, **kw),)))


def until_final(s: LocalSystem, rid: str):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        s.tick()
        info = s.scheduler.request_info(rid)
        if info.state in ("completed", "failed", "cancelled"):
            return info
        time.sleep(0.1)
    raise AssertionError(f"{rid} did not end: {s.scheduler.request_info(rid)}")


def test_exit_3_fails_its_request_and_keeps_code_output_and_record(tmp_path: Path) -> None:
    s = system(tmp_path)
    assert submit(s, "r3", "alice", "echo out-line; echo err-line >&2; exit 3").ok
    info = until_final(s, "r3")
    assert (info.state, info.exit_code) == ("failed", 3)
    assert info.instances[0].result.state == "failed" and "exit code 3" in info.reason
    assert s.scheduler.results.output("r3")[0] == b"out-line\n"
    assert s.scheduler.results.output("r3", 0, "stderr")[0] == b"err-line\n"
    s.scheduler.results.sweep()
    [rec] = s.scheduler.results.history(user="alice")
    assert (rec.request_id, rec.state, rec.exit_code, rec.host, rec.class_name, rec.cpus) == (
        "r3", "failed", 3, "h1", "Command", 1.0)
    assert rec.cpu_s >= 0 and rec.end >= rec.start and s.scheduler.results.history(state="completed") == []


def test_a_zero_exit_completes_and_history_keeps_its_cpu_seconds(tmp_path: Path) -> None:
    s = system(tmp_path)
    assert submit(s, "r0", "alice", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done").ok
    info = until_final(s, "r0")
    assert (info.state, info.exit_code) == ("completed", 0)
    s.scheduler.results.sweep()
    [rec] = s.scheduler.results.history()
    assert rec.state == "completed" and rec.cpu_s > 0 and rec.max_rss_kb > 0


def test_cancelling_a_sleep_leaves_no_process_and_is_accounted(tmp_path: Path) -> None:
    s = system(tmp_path)
    got = submit(s, "rc", "alice", "sleep 600 & sleep 600")
    assert got.ok
    pid = int((tmp_path / "runs" / "h1" / got.instances[0].instance_id / "pid").read_text())
    assert s.scheduler.cancel("rc").state == "cancelled"
    deadline = time.monotonic() + WAIT_S
    while (session_members(pid) or not s.scheduler.results.history()) and time.monotonic() < deadline:
        time.sleep(0.1)
        s.scheduler.results.sweep()
    assert session_members(pid) == []
    [rec] = s.scheduler.results.history()
    assert rec.state == "cancelled" and rec.exit_code == 128 + 15
    assert s.scheduler.request_info("rc").instances[0].result.state == "cancelled"


def test_a_walltime_ends_the_run_timed_out(tmp_path: Path) -> None:
    s = system(tmp_path)
    assert submit(s, "rw", "alice", "sleep 600", walltime_s=1.0).ok
    info = until_final(s, "rw")
    deadline = time.monotonic() + WAIT_S
    while not s.scheduler.results.history() and time.monotonic() < deadline:
        time.sleep(0.1)
        s.scheduler.results.sweep()
    [rec] = s.scheduler.results.history()
    assert rec.state == "timed_out" and info.state == "completed"


def test_an_unknown_instance_number_says_which_there_are(tmp_path: Path) -> None:
    s = system(tmp_path)
    assert submit(s, "rn", "alice", "true").ok
    with pytest.raises(SchedulingError, match="--instance 0 to 0") as got:
        s.scheduler.results.output("rn", 5)
    assert got.value.code == codes.REQUEST_NO_INSTANCE  # a registered code, not the class's name


def test_as_root_work_runs_only_as_a_mapped_non_root_account(tmp_path: Path, os_accounts: dict[str, str]) -> None:
    work_dir = Path(f"/tmp/legionrm-test-work-{os.getpid()}")  # reachable by the accounts (pytest's tmp is not)
    s = system(tmp_path, run_as="owner", work_dir=str(work_dir))
    alice = os_accounts["alice"]
    assert submit(s, "ra", alice, "id -un").ok
    assert until_final(s, "ra").state == "completed"
    assert s.scheduler.results.output("ra")[0].decode().strip() == alice
    for user in ("no-such-account-here", "root"):
        got = submit(s, f"r-{user}", user, "id -un")
        assert not got.ok and got.state == "refused" and got.failures[0].code == "auth.no_os_user"
        assert "\n" not in got.message and user not in s.scheduler.book
    shutil.rmtree(work_dir, ignore_errors=True)


def test_a_service_that_is_not_root_runs_only_its_own_accounts_work(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("the service runs as root here: the root rule is the test above")
    import pwd

    s = system(tmp_path, run_as="owner")
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert submit(s, "mine", me, "true").ok
    got = submit(s, "other", "root", "true")
    assert not got.ok and got.failures[0].code == "auth.no_os_user" and 'run_as = "service"' in got.message


def test_the_requests_env_table_reaches_its_process(tmp_path: Path) -> None:
    s = system(tmp_path)
    assert submit(s, "re", "alice", 'echo "$GREETING $LEGIONRM_REQUEST_ID"', env={"GREETING": "hello"}).ok
    assert until_final(s, "re").state == "completed"
    assert s.scheduler.results.output("re")[0] == b"hello re\n"
