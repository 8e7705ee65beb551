"""A full disk under load (issue 28's "done when"): a live system whose home
is a small filesystem (a tmpfs of :data:`SIZE`, mounted for this test and
unmounted after; skipped when this process may not mount one) fills up
while callers submit.

* every submit either succeeds and is durable (in the state store), or fails
  with ``state.disk_full`` and leaves no trace (the id unknown, nothing runs
  for it, the id free to use again);
* the hosts stay available (they keep beating, degraded);
* once the filler file is deleted, work flows again without a restart;
* the audit is clean and the pools book nothing without live instances.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from legionrm import codes
from legionrm.models import (
    Identity,
    ObjectRequest,
    SchedulerResponse,
    SchedulingRequest,
)
from legionrm.state import StoreFault
from tests.clusters import lean_cluster
from tests.faults import durable_system

pytestmark = pytest.mark.ray

SIZE = "8m"
CALLERS = 4
FULL_SUBMITS = 40
"""Submits made while the disk is full, at most (fewer once enough of them failed for want of space)."""
HOSTS = '$kind == "host"'


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A tmpfs of :data:`SIZE` on a fresh folder, unmounted and removed after."""
    where = Path(tempfile.mkdtemp(prefix="lrmfull", dir="/tmp"))
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs",
                                            str(where)], capture_output=True).returncode != 0:
        where.rmdir()
        pytest.skip("cannot mount a tmpfs here (not root, or no mount)")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)  # a straggler still holds a file
        where.rmdir()


def fill(path: Path) -> int:
    """Write ``path`` until the filesystem is full; its size."""
    chunk = b"\0" * 65536
    n = 0
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                n += f.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        for size in (4096, 512, 1):  # the last crumbs too
            try:
                while True:
                    n += f.write(chunk[:size])
            except OSError:
                pass
    return n


def request(rid: str, user: str) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), wait=False, objects=(
        ObjectRequest(class_name="Worker", cpus=0.5, memory_gb=0.5, walltime_s=3),))


def submit(system: Any, rid: str, user: str) -> tuple[str, str]:
    """("ok", state) for an acknowledged submit, ("full", why) for one refused for want of space."""
    try:
        r: SchedulerResponse = system.schedule(request(rid, user))
    except Exception as exc:  # noqa: BLE001 - what crossed Ray: it must be the store's own fault
        fault = getattr(exc, "cause", exc)
        assert isinstance(fault, StoreFault) and fault.code == codes.STATE_DISK_FULL, f"{rid}: {exc}"
        assert "rollback" not in str(fault) and str(fault).count("\n") == 0, str(fault)  # one line, the true cause
        return "full", str(fault)
    return "ok", r.state


def stored_ids(home: Path) -> set[str]:
    """The request ids the Scheduler's state store holds (live and settled), read beside it."""
    db = sqlite3.connect(f"file:{home / 'scheduler.db'}?mode=ro", uri=True)
    try:
        return {r[0] for t in ("requests", "requests_finished") for r in db.execute(f"SELECT id FROM {t}")}
    finally:
        db.close()


def until(check: Any, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def test_a_disk_that_fills_mid_load_loses_nothing_and_work_flows_again(ray_cluster, small_fs: Path, capsys) -> None:
    from legionrm.system import call

    home = small_fs / "home"
    with durable_system(lean_cluster(), "lrmfull", state_dir=str(home)) as system:
        hosts = sorted(system.query(HOSTS).names)
        assert hosts
        answers: dict[str, tuple[str, str]] = {}
        for k in range(4):  # room on the disk: it works
            answers[f"before-{k}"] = submit(system, f"before-{k}", "ann")
        assert all(a == "ok" for a, _ in answers.values()), answers

        full = threading.Event()
        failed = threading.Semaphore(0)
        lock = threading.Lock()

        def caller(c: int) -> None:
            for n in range(FULL_SUBMITS // CALLERS):
                rid = f"load-{c}-{n}"
                got = submit(system, rid, f"u{c}")
                with lock:
                    answers[rid] = got
                if got[0] == "full":
                    failed.release()
                if n == 1 and c == 0:
                    full.set()  # mid-load: the filler runs now

        with ThreadPoolExecutor(CALLERS + 1) as pool:
            callers = [pool.submit(caller, c) for c in range(CALLERS)]
            full.wait(120)
            filler = small_fs / "filler"
            fill(filler)
            for f in callers:
                f.result()
        refused = sorted(rid for rid, (how, _) in answers.items() if how == "full")
        with capsys.disabled():
            print(f"\n  disk full: {len(answers)} submits, {len(refused)} refused for want of space "
                  f"({refused[0] if refused else '-'}: {answers[refused[0]][1] if refused else '-'})")
        assert refused, "no submit met the full disk"
        # the hosts keep beating on a full disk (degraded, not lost): every one is still available
        time.sleep(3.0)  # six heartbeats, each trying to save its host's state
        assert sorted(system.query(HOSTS).names) == hosts
        # reads keep working, and every answer was true: acknowledged means written, refused means no trace
        known = {i.id for i in call(system.scheduler.list_requests.remote())}
        durable = stored_ids(home)
        for rid, (how, why) in answers.items():
            if how == "ok":
                assert rid in durable, f"{rid} was acknowledged but is not in the store"
            else:
                assert rid not in durable and rid not in known, f"{rid} failed ({why}) but left a trace"

        filler.unlink()  # space is back: no restart
        for k in range(4):
            rid = f"after-{k}"
            how, why = submit(system, rid, "ann")
            assert how == "ok", why
        # the refused ids are free again; everything runs out its walltime and ends
        for rid in refused[:2]:
            assert submit(system, rid, "bob")[0] == "ok"

        def ended() -> bool:
            infos = call(system.scheduler.list_requests.remote())
            return all(i.state in ("completed", "failed", "cancelled") for i in infos)

        assert until(ended, 90), [(i.id, i.state, i.reason) for i in call(system.scheduler.list_requests.remote())
                                  if i.state not in ("completed", "failed", "cancelled")]
        assert call(system.scheduler.audit.remote(), 60) == []
        assert call(system.pools.held.remote()) == {}  # no pool cpus booked without instances
        status = call(system.scheduler.status.remote())
        assert "fault" not in status.store  # a write succeeded: the store says so no more
