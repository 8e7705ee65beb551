"""The commands that drive a running system: ``up``, ``down``, ``status``,
``submit``.  ``up`` starts a Ray head of its own (``ray start --head --block``
in the background, so it outlives the command), boots the cluster detached,
and writes what it started to the state file; ``down`` kills those actors and
stops that head, and nothing else (never ``ray stop``)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

import ray

from legionrm.config import load_cluster
from legionrm.errors import SystemNotRunningError
from legionrm.models import SchedulerResponse, SchedulerStatus
from legionrm.naming import COLLECTION, SCHEDULER, require_actor
from legionrm.cli.requests import follow
from legionrm.request_file import load_request
from legionrm.system import STATE_FILE, boot, call, init_connect


def cli_up(args: argparse.Namespace) -> int:
    """Start Ray (or join --address) and boot the cluster file's system, detached."""
    spec = load_cluster(args.cluster)
    if STATE_FILE.exists():
        print(f"a system is already up (see {STATE_FILE}); `legionrm down` first", file=sys.stderr)
        return 2
    state: dict[str, Any] = {"cluster": spec.source}
    if args.address:
        state["address"] = args.address
    else:
        temp = tempfile.mkdtemp(prefix="lrm-up-", dir="/tmp")
        port = 6390
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}",
                "--node-ip-address=127.0.0.1",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "RAY_AUTH_MODE": "disabled"},
        )
        state.update(address=f"127.0.0.1:{port}", pid=proc.pid, temp_dir=temp)
    STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
    STATE_FILE.write_text(json.dumps(state))
    deadline = time.time() + 60
    while True:
        try:
            init_connect(state["address"])
            break
        except SystemNotRunningError:
            if time.time() > deadline:
                _stop_head(state)
                raise
            time.sleep(1.0)
    system = boot(spec, detached=True, bind_nodes=True)
    state["actors"] = system.names()
    STATE_FILE.write_text(json.dumps(state))
    print(f"legionrm is up at {state['address']}: {len(spec.hosts)} hosts, {len(spec.vaults)} vaults from {spec.source}")
    return 0


def _stop_head(state: dict[str, Any], grace_s: float = 10.0) -> None:
    """Stop the Ray head `up` started: its whole process group (the head runs
    in a session of its own), politely, then by force; its temp dir goes too."""
    pid = state.get("pid")
    if pid:
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.time() + wait
            while time.time() < deadline and _group_alive(pid):
                time.sleep(0.2)
            if not _group_alive(pid):
                break
    if state.get("temp_dir"):
        shutil.rmtree(state["temp_dir"], ignore_errors=True)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def cli_down(args: argparse.Namespace) -> int:
    """Kill the actors `up` started and stop the Ray head it started."""
    if not STATE_FILE.exists():
        print("no system is up", file=sys.stderr)
        return 0
    state = json.loads(STATE_FILE.read_text())
    try:
        init_connect(state["address"])
        for name in state.get("actors", []):
            try:
                ray.kill(require_actor(name))
            except SystemNotRunningError:
                pass
        ray.shutdown()
    except SystemNotRunningError:
        pass
    _stop_head(state)
    STATE_FILE.unlink(missing_ok=True)
    print("legionrm is down")
    return 0


def cli_status(args: argparse.Namespace) -> int:
    """``legionrm status``: resources, the Scheduler's instances, elastic jobs and pools."""
    init_connect()
    snap = call(require_actor(COLLECTION).snapshot.remote())
    names = snap.resource_names()
    avail = [n for n in names if snap.is_available(n)]
    sched: SchedulerStatus = call(require_actor(SCHEDULER).status.remote())
    status = {"resources": len(names), "available": len(avail), "unavailable": sorted(set(names) - set(avail)),
              "scheduler": sched.model_dump(mode="json")}
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print(f"{status['resources']} resources, {status['available']} available")
    for n in status["unavailable"]:
        print(f"  unavailable: {n}")
    print(f"{sched.instances} instances started by scheduleObjects"
          + (": " + ", ".join(f"{h} {c}" for h, c in sorted(sched.hosts.items())) if sched.hosts else ""))
    if sched.elastic:
        print(f"elastic jobs after cycle {sched.last_cycle}:")
        for jid, j in sorted(sched.elastic.items()):
            print(f"  {jid:<16} {j.user:<10} {j.processes}/{j.target} processes of {j.memory_gb:g} GB")
    for path, p in sorted(sched.pools.items()):
        alloc, ent = p.get("allocation", {}), p.get("entitlement", {})
        print(f"pool {path:<12} cpu {alloc.get('cpu', 0):g}/{ent.get('cpu', 0):.4g} entitled, "
              f"memory {alloc.get('memory', 0) / 1024:g}/{ent.get('memory', 0) / 1024:.4g} GB")
    return 0


def cli_submit(args: argparse.Namespace) -> int:
    """``legionrm submit REQUEST.toml``: scheduleObjects on the running system.
    Exit 0 when every instance runs, 1 when the request failed (each
    placement's failure is printed), 2 for a bad file."""

    request = load_request(args.request)  # checked before touching Ray
    init_connect()
    scheduler = require_actor(SCHEDULER)
    response: SchedulerResponse = call(scheduler.scheduleObjects.remote(request), 300)
    if getattr(args, "wait", False) and response.state == "pending":
        info = follow(scheduler, request.request_id, args.wait_timeout)
        response = response.model_copy(update={"ok": info.state == "running", "state": info.state,
                                                "message": info.reason})
    if args.json:
        print(response.model_dump_json(indent=2))
    elif response.ok:
        print(f"{request.request_id}: {response.message}")
        for inst in response.instances:
            print(f"  {inst.instance_id}  {inst.class_name:<10} on {inst.host}" + (f"  vault {inst.vault}" if inst.vault else ""))
    elif response.state == "pending":
        print(f"{request.request_id}: pending, waits in the queue ({response.failures[0].code if response.failures else 'queued'}); "
              f"`legionrm show {request.request_id}` follows it")
        return 0
    else:
        print(f"{request.request_id}: not scheduled ({response.masters} master schedules tried)")
        for f in response.failures:
            print(f"  {f.key:<12} {f.resource or '-':<10} {f.stage:<8} {f.code}: {f.reason}")
    return 0 if response.ok else 1
