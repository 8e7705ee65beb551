"""Starting, watching and ending runs: :class:`Runner` and :class:`Run` (see the package)."""

from __future__ import annotations

import ctypes
import json
import math
import os
import queue
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from legionrm.homefs import private_dir, write_private
from legionrm.hostobj.runner.accounts import Account, RunError
from legionrm.hostobj.runner.cgroup import Cgroup, cgroup_root
from legionrm.hostobj.runner.files import OUTPUT_CAP, STREAMS, kept_result, read_output, session_members, trim
from legionrm.models import WorkEnd, WorkResult
from legionrm.models.arrays import ARRAY_ENV

GB = 1024**3
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
VALUE_LIMIT = 60 * 1024
"""The largest JSON return value kept (it must fit the pipe's buffer)."""
WATCH_S = 0.5
"""How often the runner checks walltimes and output sizes."""
RESULTS_KEPT = 10_000

STOP_STATES: dict[str, WorkEnd] = {
    "cancel": "cancelled", "preempt": "preempted", "evict": "preempted", "walltime": "timed_out",
    "reservation ended": "timed_out", "host stopped": "node_lost", "node": "node_lost", "shutdown": "node_lost",
}
"""How a stop's reason reads as an end state (the first key the reason starts with or contains)."""

_BOOT = r"""
import importlib, json, os, sys
fd, target, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def put(d):
    os.write(fd, json.dumps(d).encode()); os.close(fd)
mod, _, name = target.partition(":")
try:
    fn = importlib.import_module(mod)
    for part in name.split("."):
        fn = getattr(fn, part)
    value = fn(*args)
except BaseException as exc:
    import traceback; traceback.print_exc()
    put({"error": (type(exc).__name__ + ": " + str(exc))[:500]}); sys.exit(1)
try:
    text = json.dumps({"value": value})
except (TypeError, ValueError):
    put({"error": target + " returned a " + type(value).__name__ + ", which is not JSON data"}); sys.exit(1)
if len(text) > LIMIT:
    put({"error": target + " returned %d bytes of JSON, more than the LIMIT kept" % len(text)}); sys.exit(1)
sys.stdout.flush()
put(json.loads(text))
""".replace("LIMIT", str(VALUE_LIMIT))
"""What the fresh interpreter runs: import the function, call it, send its value (or error) down fd."""


def stop_state(reason: str) -> WorkEnd:
    """The end state a stop with ``reason`` gives (default: ``cancelled``)."""
    low = reason.lower()
    for key, state in STOP_STATES.items():
        if low.startswith(key) or key in low:
            return state
    return "cancelled"


@dataclass(frozen=True)
class Work:
    """One instance's work and its grant: a shell ``command`` or a ``function``
    (``"module:name"``, called with the string ``args``)."""

    instance_id: str
    request_id: str = ""
    command: str = ""
    function: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cpus: float = 1.0
    memory_gb: float = 0.0
    walltime_s: float | None = None

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.function):
            raise RunError("give exactly one of command= (a shell line) or function= ('module:name')")
        if self.function and ":" not in self.function:
            raise RunError(f"function {self.function!r} must be 'module:name'")
        if "/" in self.instance_id or self.instance_id in ("", ".", ".."):
            raise RunError(f"instance id {self.instance_id!r} cannot name a directory")


def default_work_root() -> Path:
    return Path(tempfile.gettempdir()) / f"legionrm-work-{os.geteuid()}"


@dataclass(frozen=True)
class RunnerSettings:
    """Where a runner keeps outputs (``log_dir``: under the service's state
    directory) and work directories (``work_root``: somewhere every account
    can reach, never under the service's home), which interpreter runs
    functions, how long a stopped run has between SIGTERM and SIGKILL, and
    whether each run gets a cgroup of its own where the node allows it
    (:mod:`~legionrm.hostobj.runner.cgroup`)."""

    log_dir: Path
    work_root: Path = field(default_factory=default_work_root)
    python: str = sys.executable
    kill_grace_s: float = 10.0
    output_cap: int = OUTPUT_CAP
    cgroups: bool = True


def scrubbed_env(work: Work, account: Account, workdir: Path) -> dict[str, str]:
    """The whole environment of a run (see the module): nothing of the service's."""
    env = {"PATH": DEFAULT_PATH, "HOME": account.home if os.path.isdir(account.home) else str(workdir),
           "USER": account.name, "LOGNAME": account.name}
    # LEGIONRM_* is the service's; an array's task gets its index from the Scheduler (legionrm.models.arrays)
    env.update({k: str(v) for k, v in work.env.items() if not k.startswith("LEGIONRM_") or k == ARRAY_ENV})
    env.update(LEGIONRM_REQUEST_ID=work.request_id, LEGIONRM_INSTANCE_ID=work.instance_id,
               LEGIONRM_CPUS=f"{work.cpus:g}")
    return env


try:
    _PRCTL: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: the leader does not die with the host's process
    _PRCTL = None
PR_SET_PDEATHSIG = 1


def _limits(memory_bytes: int, cpu_s: int, cores: tuple[int, ...], cgroup_fd: int | None) -> Callable[[], None]:
    """The child's limits, set between the switch of account and the exec (see the module);
    first it joins its cgroup through ``cgroup_fd`` (see :mod:`~legionrm.hostobj.runner.cgroup`)."""
    setrlimit, setaffinity, prctl, write = resource.setrlimit, os.sched_setaffinity, _PRCTL, os.write
    as_, cpu, kill = resource.RLIMIT_AS, resource.RLIMIT_CPU, int(signal.SIGKILL)

    def apply() -> None:
        if cgroup_fd is not None:
            try:
                write(cgroup_fd, b"0")
            except OSError:  # not joined: its session alone is what a stop ends
                pass
        if prctl is not None:  # the host's process dies (the node's host actor is killed): so does the leader
            prctl(PR_SET_PDEATHSIG, kill)
        if memory_bytes:
            setrlimit(as_, (memory_bytes, memory_bytes))
        if cpu_s:
            setrlimit(cpu, (cpu_s, cpu_s + 5))  # the soft limit sends SIGXCPU, the hard one SIGKILL
        if cores:
            setaffinity(0, cores)

    return apply


class _Spawner:
    """The one thread that forks every run of this process.  A leader's
    parent-death signal fires when the *thread* that forked it ends, so that
    thread must live as long as the process: not a caller's, which may be a
    short-lived worker."""

    _lock = threading.Lock()
    _queue: queue.SimpleQueue[tuple[Future[Any], list[str], dict[str, Any]]] | None = None

    @classmethod
    def popen(cls, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        with cls._lock:
            if cls._queue is None:
                cls._queue = queue.SimpleQueue()
                threading.Thread(target=cls._loop, args=(cls._queue,), name="runner-spawner", daemon=True).start()
        done: Future[Any] = Future()
        cls._queue.put((done, argv, kw))
        return done.result()  # type: ignore[no-any-return]

    @staticmethod
    def _loop(q: queue.SimpleQueue[tuple[Future[Any], list[str], dict[str, Any]]]) -> None:
        while True:
            done, argv, kw = q.get()
            try:
                done.set_result(subprocess.Popen(argv, **kw))
            except BaseException as exc:  # noqa: BLE001 - the caller gets it
                done.set_exception(exc)


def _capped(limit: int, value: int) -> int:
    """``value`` no higher than this process's hard ``limit`` (a child may only lower its limits)."""
    hard = resource.getrlimit(limit)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


class Run:
    """One started instance: its process, and its result once it ended."""

    def __init__(self, work: Work, account: Account, proc: subprocess.Popen[bytes], value_fd: int | None,
                 out_dir: Path, settings: RunnerSettings, on_end: Callable[[Run], None],
                 cgroup: Cgroup | None = None) -> None:
        self.work, self.account, self.proc, self.out_dir, self.cgroup = work, account, proc, out_dir, cgroup
        self.settings = settings
        self.pid = proc.pid
        self.started_at = time.time()
        self.deadline = self.started_at + work.walltime_s if work.walltime_s else None
        self.result: WorkResult | None = None
        self._value_fd = value_fd
        self._asked: WorkEnd | None = None
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._on_end = on_end
        threading.Thread(target=self._wait, name=f"run-{work.instance_id}", daemon=True).start()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def wait(self, timeout: float | None = None) -> WorkResult | None:
        """The result once the run ended (None when ``timeout`` passes first)."""
        self._ended.wait(timeout)
        return self.result

    def stop(self, state: WorkEnd = "cancelled") -> WorkResult | None:
        """End the run as ``state``: SIGTERM to its process group, SIGKILL
        after the grace; returns its result (a run that already ended keeps its own end)."""
        with self._lock:
            if not self._ended.is_set() and self._asked is None:
                self._asked = state
        if not self._kill(signal.SIGTERM) or not self._ended.wait(self.settings.kill_grace_s):
            self._kill(signal.SIGKILL)
            self._ended.wait(self.settings.kill_grace_s + 5)
        return self.result

    def trim_outputs(self) -> None:
        for s in STREAMS:
            trim(self.out_dir / s, self.settings.output_cap)

    def _kill(self, sig: int) -> bool:
        """Signal the whole process group (the leader's pid is its id while the leader is unreaped)."""
        if self._ended.is_set():
            return False
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def left(self) -> list[int]:
        """The run's live processes: those of its session, and of its cgroup (one that left the session)."""
        return sorted(set(session_members(self.pid)) | set(self.cgroup.members() if self.cgroup else ()))

    def _sweep(self) -> None:
        """End what is left of the run after its leader ended (a process it
        left in the background, in its session or not): SIGTERM, then
        SIGKILL; then its cgroup goes."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.left()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if sig == signal.SIGKILL and self.cgroup is not None:
                self.cgroup.kill()  # and whatever they forked meanwhile
            end = time.monotonic() + (self.settings.kill_grace_s if sig == signal.SIGTERM else 5)
            while self.left() and time.monotonic() < end:
                time.sleep(0.05)
        if self.cgroup is not None:
            self.cgroup.remove()

    def _read_value(self) -> dict[str, Any]:
        if self._value_fd is None:
            return {}
        chunks = []
        os.set_blocking(self._value_fd, False)
        try:
            while chunk := os.read(self._value_fd, 65536):
                chunks.append(chunk)
        except BlockingIOError:  # a process of the run still holds the pipe open
            pass
        finally:
            os.close(self._value_fd)
        try:
            got = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            return {"error": "the function's result could not be read"}
        return got if isinstance(got, dict) else {}

    def _wait(self) -> None:
        try:
            _, status, usage = os.wait4(self.pid, 0)
        except ChildProcessError:  # reaped elsewhere: the status is lost
            status, usage = -1, None
        self.proc.returncode = status  # Popen must not wait for it again
        self._sweep()
        got = self._read_value()
        sig = os.WTERMSIG(status) if status >= 0 and os.WIFSIGNALED(status) else None
        code = os.WEXITSTATUS(status) if status >= 0 and os.WIFEXITED(status) else (128 + sig if sig else None)
        with self._lock:
            state: WorkEnd = self._asked or ("completed" if code == 0 else "failed")
            self.result = WorkResult(
                instance_id=self.work.instance_id, request_id=self.work.request_id, account=self.account.name,
                state=state, exit_code=code, signal=sig, started_at=self.started_at, ended_at=time.time(),
                cpu_s=round(usage.ru_utime + usage.ru_stime, 3) if usage else 0.0,
                max_rss_kb=int(usage.ru_maxrss) if usage else 0, value=got.get("value"),
                error=str(got.get("error", "")) if code != 0 or "error" in got else "")
        self.trim_outputs()
        try:
            write_private(self.out_dir / "result.json", self.result.model_dump_json())
        except OSError:
            pass
        try:  # the runner's books first: once a waiter wakes, the run is no longer running there
            self._on_end(self)
        finally:
            self._ended.set()


class Runner:
    """Starts, watches and stops runs on one node (see the module)."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._results: dict[str, WorkResult] = {}
        self._cores: dict[str, tuple[int, ...]] = {}
        self._watching = False
        self._cgroup_root: Path | None = cgroup_root() if settings.cgroups else None

    # --- starting ---------------------------------------------------------------

    def start(self, work: Work, account: Account) -> Run:
        """Start ``work`` as ``account``; RunError (one line) when it cannot start."""
        s = self.settings
        if work.function and not account.can_run(s.python):
            raise RunError(f"the Python interpreter {s.python} cannot be run by OS account {account.name!r}; "
                           "set [runner] python to one every account can run (a venv made from the system python3)")
        workdir = self._workdir(work.instance_id, account)
        out_dir = private_dir(Path(s.log_dir) / work.instance_id)  # outputs are the service's to give
        value_r, value_w = os.pipe() if work.function else (None, None)
        argv = (["/bin/sh", "-c", work.command] if work.command
                else [s.python, "-c", _BOOT, str(value_w), work.function, *work.args])
        with self._lock:
            cores = self._pick_cores(work.cpus)
            self._cores[work.instance_id] = cores
        cpu_s = math.ceil(work.walltime_s * max(1, len(cores) or math.ceil(work.cpus))) if work.walltime_s else 0
        mem = int(work.memory_gb * GB)
        cgroup = Cgroup.make(self._cgroup_root, f"{os.getpid()}-{work.instance_id}") if self._cgroup_root else None
        limits = _limits(_capped(resource.RLIMIT_AS, mem) if mem else 0,
                         _capped(resource.RLIMIT_CPU, cpu_s) if cpu_s else 0, cores,
                         cgroup.join_fd if cgroup is not None else None)
        who: dict[str, Any] = {} if account.is_service else dict(user=account.uid, group=account.gid,
                                                                  extra_groups=list(account.groups))
        outs = [os.open(out_dir / n, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600) for n in STREAMS]
        try:
            proc = _Spawner.popen(argv, stdin=subprocess.DEVNULL, stdout=outs[0], stderr=outs[1], cwd=workdir,
                                    env=scrubbed_env(work, account, workdir), umask=0o077, start_new_session=True,
                                    close_fds=True, pass_fds=(value_w,) if value_w is not None else (),
                                    preexec_fn=limits, **who)
        except (OSError, subprocess.SubprocessError) as exc:
            if value_r is not None:
                os.close(value_r)
            with self._lock:
                self._cores.pop(work.instance_id, None)
            if cgroup is not None:
                cgroup.remove()
            raise RunError(f"cannot start {argv[0]} as OS account {account.name!r}: {exc}") from None
        finally:
            for fd in outs:
                os.close(fd)
            if cgroup is not None:
                cgroup.joined()
            if value_w is not None:
                os.close(value_w)
        write_private(out_dir / "pid", str(proc.pid))  # a later process of the host finds what this one left
        if cgroup is not None:
            write_private(out_dir / "cgroup", str(cgroup.path))
        run = Run(work, account, proc, value_r, out_dir, s, self._ended, cgroup)
        with self._lock:
            if not run.ended:  # else its end is booked already
                self._runs[work.instance_id] = run
            self._watch()
        return run

    def _workdir(self, instance_id: str, account: Account) -> Path:
        """``<work_root>/<instance>``, owned by ``account``, 0700.  The root is
        made 0711 (reachable, not listable) and must be a real directory this
        process owns (a symlink or someone else's directory is refused)."""
        root = Path(self.settings.work_root)
        root.mkdir(parents=True, exist_ok=True, mode=0o711)
        st = os.lstat(root)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise RunError(f"work root {root} is not a directory owned by the service")
        os.chmod(root, 0o711)
        d = root / instance_id
        if d.is_symlink():
            d.unlink()
        d.mkdir(mode=0o700, exist_ok=True)
        if not account.is_service:
            os.chown(d, account.uid, account.gid)
        os.chmod(d, 0o700)
        return d

    def _pick_cores(self, cpus: float) -> tuple[int, ...]:
        """As many cores as granted, the least used by this runner's runs first;
        none (no pinning) when the grant is zero or the node has no more."""
        avail = sorted(os.sched_getaffinity(0))
        n = math.ceil(cpus)
        if n <= 0 or n >= len(avail):
            return ()
        load = {c: 0 for c in avail}
        for cores in self._cores.values():
            for c in cores:
                if c in load:
                    load[c] += 1
        return tuple(sorted(sorted(avail, key=lambda c: (load[c], c))[:n]))

    # --- watching and ending ------------------------------------------------------

    def _watch(self) -> None:
        """Start the one thread that ends runs at their walltime and trims outputs (caller holds the lock)."""
        if self._watching:
            return
        self._watching = True

        def loop() -> None:
            while True:
                time.sleep(WATCH_S)
                with self._lock:
                    runs = list(self._runs.values())
                now = time.time()
                for run in runs:
                    if run.deadline is not None and now >= run.deadline and not run.ended:
                        threading.Thread(target=run.stop, args=("timed_out",), daemon=True).start()
                        run.deadline = None
                    run.trim_outputs()

        threading.Thread(target=loop, name="runner-watch", daemon=True).start()

    def _ended(self, run: Run) -> None:
        with self._lock:
            self._runs.pop(run.work.instance_id, None)
            self._cores.pop(run.work.instance_id, None)
            if run.result is not None:
                self._results[run.work.instance_id] = run.result
                while len(self._results) > RESULTS_KEPT:
                    self._results.pop(next(iter(self._results)))

    def stop(self, instance_id: str, state: WorkEnd = "cancelled") -> WorkResult | None:
        """End a run (see :meth:`Run.stop`); its result, or None when unknown."""
        with self._lock:
            run = self._runs.get(instance_id)
        return run.stop(state) if run is not None else self.result(instance_id)

    def stop_all(self, state: WorkEnd = "node_lost") -> None:
        """End every run at once (the node's host is going away)."""
        with self._lock:
            runs = list(self._runs.values())
        threads = [threading.Thread(target=r.stop, args=(state,), daemon=True) for r in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # --- reading --------------------------------------------------------------------

    def running(self) -> list[str]:
        with self._lock:
            return list(self._runs)

    def is_running(self, instance_id: str) -> bool:
        with self._lock:
            return instance_id in self._runs

    def result(self, instance_id: str) -> WorkResult | None:
        """An ended run's result (from memory, else from its output directory)."""
        with self._lock:
            got = self._results.get(instance_id)
        return got if got is not None else kept_result(self.settings.log_dir, instance_id)

    def output(self, instance_id: str, stream: str = "stdout", offset: int = 0,
               limit: int = OUTPUT_CAP) -> tuple[bytes, int]:
        """See :func:`read_output`."""
        return read_output(self.settings.log_dir, instance_id, stream, offset, limit)
