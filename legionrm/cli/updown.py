"""``legionrm up`` and ``legionrm down``.

``up`` starts a Ray head of its own (``ray start --head --block`` in a
session of its own, so it outlives the command) on a free port (or
``--port``, refused at once when taken), boots the cluster detached and
records what it started in ``$LEGIONRM_HOME/up.json``.  Ray's own dashboard
and metrics export are on (``--no-ray-dashboard`` for a leaner head), and
legionrm's dashboard is served by the gateway: ``up`` starts the gateway process
(:mod:`legionrm.gateway.process`; 127.0.0.1:8470 unless ``--gateway-host`` /
``--gateway-port``; ``0``: a free port, the one the credentials issued before
name when it is free, so a restart does not strand them), writes the
administrator's credentials file into the home, and prints the gateway's and
both dashboards' addresses (and one line when the gateway moved from the
address the credentials issued before name).  Every step shows
its progress on stderr; Ray's own output (the head's, and the driver's C++
warnings) goes to ``$LEGIONRM_HOME/logs/``, never to the terminal.  The
``--timeout`` deadline covers the whole of ``up``; when any step fails or
the deadline passes, what was started is stopped and the state file removed.

``down`` first kills the instance actors by name (detached, each in a
session of its own, they would outlive the head by seconds), then stops
that head's whole process group (SIGTERM, then SIGKILL after a short
grace), which ends every actor with it; for a system that joined
someone else's Ray (``up --address``) it kills the named actors instead.
It never runs ``ray stop``.  A state file whose head is gone is stale:
``up`` and ``down`` say so and remove it; ``down --force`` removes it
without asking the system anything.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import ray
from rich.console import Console

from legionrm.auth.guard import auth_home, login_name
from legionrm.auth.registry import Registry
from legionrm.cli.output import counted
from legionrm.client.credentials import read as read_credentials
from legionrm.config import load_cluster
from legionrm.errors import LegionError, ResourcesSilentError, SystemNotRunningError
from legionrm.gateway.routes_users import credentials_path, write_credentials
from legionrm.gateway.serve import DEFAULT_PORT, LOOPBACK
from legionrm.homefs import (
    open_private,
    private_dir,
    private_umask,
    tighten,
    write_private,
)
from legionrm.naming import host_name, instance_actor_names, kill_named, named_actors
from legionrm.scheduler.several import Roster
from legionrm.system import STATE_FILE, init_connect, ray_token_env, ray_token_path
from legionrm.system import boot

HOME = STATE_FILE.parent
LOGS = HOME / "logs"
NEXT_STEPS = ("open the dashboard in a browser", "legionrm status", "legionrm query '$cpus >= 16'", "legionrm submit examples/requests/workers.toml",
              "legionrm shell", "legionrm down")


class UpError(LegionError):
    """``up`` could not start a system (the port, the deadline, the head)."""


# --- state ----------------------------------------------------------------------


def read_state() -> dict[str, Any] | None:
    if not STATE_FILE.exists():
        return None
    try:
        state = json.loads(STATE_FILE.read_text())
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}  # unreadable: stale by definition


def write_state(state: dict[str, Any]) -> None:
    write_private(STATE_FILE, json.dumps(state, indent=2))  # 0600: it holds the dashboard's admin key


def is_stale(state: dict[str, Any]) -> bool:
    """True when the state names no live head of ours (a crashed or killed ``up``)."""
    if "address" not in state:
        return True
    pid = state.get("pid")
    if pid:
        return not _group_alive(int(pid))
    return not port_open(str(state["address"]))  # joined someone's Ray: is it still there?


# --- ports ----------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def port_open(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


# --- progress and Ray's noise ----------------------------------------------------------


@contextmanager
def stderr_to(path: Path) -> Iterator[TextIO]:
    """Send file descriptor 2 (Ray's C++ and Python logs) to ``path``; yield
    a stream on the real stderr for our own progress."""
    sys.stderr.flush()
    saved = os.dup(2)
    real = open(os.dup(saved), "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
    with open_private(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield real
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        real.close()


class Steps:
    """A line per step with its time, a spinner while it runs, all on stderr."""

    def __init__(self, stream: TextIO, quiet: bool = False) -> None:
        self.console = Console(file=stream, highlight=False, quiet=quiet, soft_wrap=True)
        self.t0 = time.monotonic()

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        t = time.monotonic()
        with self.console.status(what + " ..."):
            try:
                yield
            except BaseException:
                self.console.print(f"[red]✗[/] {what} ({time.monotonic() - t:.1f} s)")
                raise
        self.console.print(f"[green]✓[/] {what} ({time.monotonic() - t:.1f} s)")

    def elapsed(self) -> float:
        return time.monotonic() - self.t0


def _left(deadline: float, what: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise UpError(f"gave up after the --timeout deadline, while {what} (a busy machine may need a longer "
                      f"one: --timeout SECONDS)")
    return left


# --- up ---------------------------------------------------------------------------


def cli_up(args: argparse.Namespace) -> int:
    """Start Ray (or join --address) and boot the cluster file's system, detached."""
    deadline = time.monotonic() + float(getattr(args, "timeout", 60.0) or 60.0)
    spec = load_cluster(args.cluster)
    private_umask()  # the home is the service's: what up, its Ray head and every actor on it create is private
    private_dir(HOME)
    tighten(HOME)  # what an older up left readable
    old = read_state()
    if old is not None and not is_stale(old):
        raise UpError(f"a system is already up at {old['address']} (see {STATE_FILE}); `legionrm down` first")
    log = LOGS / f"up-{time.strftime('%Y%m%d-%H%M%S')}.log"
    with stderr_to(log) as err, ExitStack() as stack:
        steps = Steps(err, quiet=bool(args.json))
        if old is not None:
            steps.console.print(f"[yellow]![/] removing the state of an earlier `up` that is gone ({STATE_FILE})")
            stop(old, grace_s=1.0)
        # the resources' agents of an earlier boot (gone with it): each agent of this one gets a fresh key
        Registry(auth_home(HOME)).forget_agents(("host", "vault", "class"))
        state: dict[str, Any] = {"cluster": spec.source, "log": str(log), "started": time.time()}
        quiet_out = stack.enter_context(open_private(log, "a", encoding="utf-8"))
        stack.enter_context(redirect_stdout(quiet_out))  # the raylet's warnings that Ray prints on the driver's stdout
        try:
            if args.address:
                state["address"] = args.address
            else:
                _start_head(args, state, steps, log, deadline)
            with steps.step(f"connecting to Ray at {state['address']}"):
                _connect(state["address"], deadline)
            with steps.step(f"booting {counted(len(spec.hosts), 'host')}, {counted(len(spec.vaults), 'vault')}, "
                            f"{counted(len(spec.classes), 'class')}, "
                            "each Ray node as a host with a vault, the enactor and the scheduler"):
                _left(deadline, "booting")
                try:
                    system = boot(spec, detached=True, bind_nodes=True, state_dir=STATE_FILE.parent / "state")
                except ResourcesSilentError as exc:  # never half-working: stopped below, and said in one line
                    raise UpError(f"{exc}; up stopped everything it started and may be run again "
                                  f"(the resources' own logs: {state.get('ray_logs') or log})") from None
                state["actors"] = system.names()
                state["roster"] = Roster.of(spec).as_json()  # the schedulers, the default first (the gateway routes by it)
                state["resources"] = list(system.resources)  # what `status` expects to answer
                state["ray_hosts"] = sorted(system.nodes)
                state["vaults"] = sorted(system.vaults)  # the file's, and each Ray node's own
                write_state(state)
                _left(deadline, "booting")
            ray.shutdown()
            with steps.step("starting the gateway" + ("" if getattr(args, "no_dashboard", False) else
                                                     " (the API and the dashboard)")):
                _start_gateway(args, state, log, deadline)
                write_state(state)
                state["credentials"] = str(write_credentials(HOME, operator()))
        except BaseException:
            ray.shutdown()
            stop(state, grace_s=1.0)
            STATE_FILE.unlink(missing_ok=True)
            steps.console.print(f"[red]up failed[/]; everything it started is stopped. Ray's output: {log}")
            raise
        stack.close()
        hosts = len(spec.hosts) + len(state.get("ray_hosts", ()))  # with every Ray node bound as a host
        vaults = len(state.get("vaults", spec.vaults))
        summary = {"address": state["address"], "resources": hosts + vaults,
                   "hosts": hosts, "ray_hosts": state.get("ray_hosts", []), "vaults": vaults, "classes": len(spec.classes),
                   "actors": len(state["actors"]), "cluster": spec.source, "state_file": str(STATE_FILE),
                   "log": str(log), "ray_logs": state.get("ray_logs"), "dashboard": state.get("dashboard"),
                   "gateway": state.get("gateway"), "credentials": state.get("credentials"),
                   "ray_dashboard": state.get("ray_dashboard"), "metrics": state.get("metrics"),
                   "gateway_moved": state.get("gateway_moved"), "elapsed_s": round(steps.elapsed(), 2)}
        if args.json:
            print(json.dumps(summary, indent=2))
            return 0
        c = steps.console
        c.print(f"[bold green]legionrm is up[/] at {summary['address']} in {summary['elapsed_s']:.1f} s: "
                f"{summary['resources']} resources ({summary['hosts']} hosts, {summary['vaults']} vaults), "
                f"{summary['classes']} classes, {summary['actors']} actors, from {spec.source}")
        c.print(f"  [bold]gateway: {summary['gateway']}[/]  (your credentials: {summary['credentials']})")
        if summary["gateway_moved"]:
            c.print(f"  [yellow]{summary['gateway_moved']}[/]", highlight=False)
        if summary["dashboard"]:
            c.print(f"  [bold]dashboard: {summary['dashboard']}[/]")
        if summary["ray_dashboard"]:
            c.print(f"  Ray's dashboard: {summary['ray_dashboard']}  (metrics for Prometheus: {summary['metrics']})")
        c.print(f"  logs:  {log}" + (f"  (Ray's own: {summary['ray_logs']})" if summary["ray_logs"] else ""))
        c.print("  next:  " + "\n         ".join(NEXT_STEPS))
    return 0


def operator() -> str:
    """The administrator who runs ``up`` (``LEGIONRM_USER``, else the login name)."""
    return os.environ.get("LEGIONRM_USER") or login_name()


def _start_gateway(args: argparse.Namespace, state: dict[str, Any], log: Path, deadline: float) -> None:
    """Start the gateway process (a session of its own, so it outlives ``up``) and wait until it serves."""
    host = getattr(args, "gateway_host", None) or LOOPBACK
    port = getattr(args, "gateway_port", None)
    port = DEFAULT_PORT if port is None else int(port)
    issued = issued_url()
    if port == 0 and issued is not None:  # any free one: the one the credentials handed out name, when free
        port = _port_of(issued, host)
    if port and not port_free(port, host):
        raise UpError(f"the gateway's port {host}:{port} is in use; choose another with --gateway-port")
    info = {"address": state["address"], "ray_dashboard": state.get("ray_dashboard")}
    cmd = [sys.executable, "-m", "legionrm.gateway", "--home", str(HOME), "--host", host, "--port", str(port),
           "--admin", operator(), "--info", json.dumps(info)]
    if getattr(args, "no_dashboard", False):
        cmd.append("--no-dashboard")
    env = {**os.environ, "LEGIONRM_HOME": str(HOME)}
    with open_private(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=out,
                                start_new_session=True, env=env)
    state["gateway_pid"] = proc.pid
    assert proc.stdout is not None
    while True:  # its first line says it serves (a JSON object); or it exits
        ready, _, _ = select.select([proc.stdout], [], [], min(1.0, _left(deadline, "starting the gateway")))
        if ready:
            line = proc.stdout.readline()
            if not line:
                raise UpError(f"the gateway exited with status {proc.wait()}; see {log}")
            doc = json.loads(line)
            proc.stdout.close()
            state["gateway"] = doc["url"]
            state["dashboard"] = doc.get("dashboard")
            if issued is not None and issued != doc["url"]:
                state["gateway_moved"] = (f"the gateway moved from {issued} to {doc['url']}: credentials issued "
                                          f"before name the old address (set their url line, or use a fixed "
                                          f"--gateway-port)")
            return


def issued_url() -> str | None:
    """The gateway URL the operator's credentials in this home name (written by an earlier
    ``up``: every credentials file handed out names the same), or None when there are none."""
    try:
        return read_credentials(credentials_path(HOME, operator())).url
    except (LegionError, OSError):
        return None


def _port_of(url: str, host: str) -> int:
    """``url``'s port when it is on ``host`` and free now (so credentials issued before still
    reach the gateway), else 0: any free port."""
    try:
        parts = urlsplit(url)
        port = parts.port or 0
    except ValueError:
        return 0
    return port if parts.hostname == host and port and port_free(port, host) else 0


def _start_head(args: argparse.Namespace, state: dict[str, Any], steps: Steps, log: Path, deadline: float) -> None:
    with steps.step("choosing ports"):
        if args.port is not None and not port_free(args.port):
            raise UpError(f"port {args.port} is in use; choose another with --port, or leave --port out for a free one")
        port = args.port or free_port()
        agent_port = free_port()
        ray_dashboard = not getattr(args, "no_ray_dashboard", False)
        if ray_dashboard:  # Ray's dashboard charts legionrm's metrics; the metrics port is Prometheus' to scrape
            dash_port, metrics_port = free_port(), free_port()
            flags = ["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash_port}",
                     f"--metrics-export-port={metrics_port}"]
            state.update(ray_dashboard=f"http://127.0.0.1:{dash_port}/", metrics=f"http://127.0.0.1:{metrics_port}/metrics")
        else:
            flags = ["--include-dashboard=false"]
    temp = tempfile.mkdtemp(prefix="lrm-up-", dir="/tmp")  # short: Unix socket paths are capped at 107 bytes
    ray_env = {"RAY_AUTH_MODE": "disabled"}
    if getattr(args, "ray_token", False):  # Ray's own token auth: who may connect to the cluster at all
        token = ray_token_path(HOME, create=True)
        ray_env = ray_token_env(token)
        state.update(ray_auth="token", ray_token_path=str(token))
    with steps.step(f"starting a Ray head on 127.0.0.1:{port}"):
        with open_private(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--port={port}",
                 f"--dashboard-agent-listen-port={agent_port}", *flags, f"--temp-dir={temp}", "--node-ip-address=127.0.0.1", "--disable-usage-stats"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, **ray_env},
            )
        state.update(address=f"127.0.0.1:{port}", pid=proc.pid, temp_dir=temp, ray_logs=f"{temp}/session_latest/logs")
        write_state(state)  # from here on, `down --force` can clean up whatever happens
        while not port_open(state["address"]):
            if proc.poll() is not None:
                raise UpError(f"the Ray head exited with status {proc.returncode}; see {log}")
            _left(deadline, "waiting for the Ray head")
            time.sleep(0.2)


def _connect(address: str, deadline: float) -> None:
    while True:
        try:
            init_connect(address)
            return
        except SystemNotRunningError:
            _left(deadline, f"connecting to {address}")
            time.sleep(0.5)


# --- down -------------------------------------------------------------------------


def stop(state: dict[str, Any], grace_s: float = 3.0) -> None:
    """Stop what ``state`` says ``up`` started: the gateway's and the head's whole process groups
    (SIGTERM to both at once, then SIGKILL to what is left after ``grace_s``); its temp dir goes too."""
    groups = [int(state[k]) for k in ("gateway_pid", "pid") if state.get(k)]
    for pgid in groups:  # the gateway first: it stops calling the head
        _signal_group(pgid, signal.SIGTERM)
    for pgid in groups:
        end = time.monotonic() + grace_s
        while time.monotonic() < end and _group_alive(pgid):
            time.sleep(0.1)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
            end = time.monotonic() + 5.0
            while time.monotonic() < end and _group_alive(pgid):
                time.sleep(0.1)
    if state.get("temp_dir"):
        shutil.rmtree(state["temp_dir"], ignore_errors=True)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies, which a
    container's init may never reap, do not count; /proc where there is one)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def kill_system_actors(names: list[str]) -> int:
    """Kill the named actors ``names``, the hosts of Ray nodes that joined after
    ``up`` (the default scheduler bound them) and every instance actor
    (detached: the Ray they run on would keep them after their hosts are
    gone) in legionrm's namespace, on the connected Ray; returns how many were killed."""
    return kill_named(sorted({*names, *named_actors(host_name("ray-"))})) + kill_named(instance_actor_names())


def _kill_actors(state: dict[str, Any]) -> int:
    """For a system on someone else's Ray: kill its named actors and its instances (not their Ray)."""
    init_connect(state["address"])
    try:
        return kill_system_actors(state.get("actors", []))
    finally:
        ray.shutdown()


def _kill_instances(state: dict[str, Any]) -> int:
    """Kill every instance actor on the head ``up`` started, before the head
    stops; a head that does not answer is stopped anyway (0 killed)."""
    try:
        init_connect(state["address"])
        return kill_named(instance_actor_names())
    except Exception:  # noqa: BLE001 - the head's process group is stopped next, whatever happened here
        return 0
    finally:
        ray.shutdown()


def cli_down(args: argparse.Namespace) -> int:
    """Stop what `up` started; with --force, without asking the system anything."""
    state = read_state()
    if state is None:
        if args.json:
            print(json.dumps({"down": True, "was_up": False}))
        else:
            print("no system is up", file=sys.stderr)
        return 0
    log = Path(state.get("log") or LOGS / "down.log")
    with stderr_to(log) as err:
        steps = Steps(err, quiet=bool(args.json))
        stale = is_stale(state)
        if stale:
            steps.console.print(f"[yellow]![/] the system in {STATE_FILE} is already gone; forgetting it")
        killed = 0
        if not state.get("pid") and not stale and not args.force:
            with steps.step(f"killing legionrm's actors on the Ray at {state['address']}"):
                killed = _kill_actors(state)
        if state.get("pid") and not stale:
            if not args.force:  # detached, in sessions of their own: they would outlive the head by seconds
                with steps.step("stopping the instances"):
                    killed = _kill_instances(state)
            with steps.step(f"stopping the Ray head (process group {state['pid']}) and every actor on it"):
                stop(state, grace_s=1.0 if args.force else 3.0)
        else:
            stop(state, grace_s=0.5)  # whatever is left of a stale one: its temp dir, a straggler
        STATE_FILE.unlink(missing_ok=True)
        if args.json:
            print(json.dumps({"down": True, "was_up": not stale, "actors_killed": killed,
                              "elapsed_s": round(steps.elapsed(), 2)}))
        else:
            steps.console.print(f"[bold]legionrm is down[/] ({steps.elapsed():.1f} s)")
    return 0
