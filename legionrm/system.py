"""Boot or connect to a legionrm system on Ray.

This module (with the ``*/actor.py`` shells) is where Ray lives.  A system is
a set of named actors in the ``legionrm`` namespace: the Collection, the
host groups and vaults, the class objects, the Enactor and the Scheduler.

``legionrm up`` starts a Ray head of its own (``ray start --head --block`` in
the background, so it outlives the command), creates the actors detached, and
writes what it started to ``~/.legionrm/up.json``; ``legionrm down`` kills
those actors and stops that head, and nothing else (it never runs
``ray stop``, which would kill every Ray on the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # see notes/ray-on-a-small-machine.md

import ray  # noqa: E402

from legionrm.collection.actor import CollectionActor  # noqa: E402
from legionrm.config import load_cluster  # noqa: E402
from legionrm.errors import SystemNotRunningError  # noqa: E402
from legionrm.models import ClusterSpec, Identity, QueryResult, ResourceRecord  # noqa: E402

NAMESPACE = "legionrm"
COLLECTION = "collection"
STATE_FILE = Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm"))) / "up.json"


def call(ref_or_refs: Any, timeout: float | None = 60.0) -> Any:
    """Wait for one Ray call (or a list) — the one place the driver blocks on Ray."""
    return ray.get(ref_or_refs, timeout=timeout)


def init_local(temp_dir: str | None = None, num_cpus: int | None = None) -> None:
    """Start a fresh, lean local Ray for this process (no dashboard)."""
    if ray.is_initialized():
        return
    ray.init(
        address="local",
        namespace=NAMESPACE,
        include_dashboard=False,
        num_cpus=num_cpus,
        _temp_dir=temp_dir or tempfile.mkdtemp(prefix="lrm-", dir="/tmp"),
        log_to_driver=False,
        configure_logging=False,
    )


def init_connect(address: str = "auto") -> None:
    """Connect to a running Ray (the one ``legionrm up`` started, by default)."""
    if ray.is_initialized():
        return
    if address == "auto" and STATE_FILE.exists():
        address = json.loads(STATE_FILE.read_text())["address"]
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
    except ConnectionError as exc:
        raise SystemNotRunningError(f"no Ray cluster at {address!r}: {exc}; start one with `legionrm up`") from None


def actor(name: str) -> Any:
    """The named legionrm actor; SystemNotRunningError if it is not there."""
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        raise SystemNotRunningError(f"no legionrm actor {name!r} is running; start a system with `legionrm up`") from None


@dataclass
class System:
    """Handles to the actors of one running system."""

    spec: ClusterSpec
    collection: Any
    extra: dict[str, Any] = field(default_factory=dict)
    detached: bool = False

    def names(self) -> list[str]:
        return [COLLECTION, *self.extra]

    def shutdown(self) -> None:
        """Kill every actor of this system (idempotent)."""
        for h in [self.collection, *self.extra.values()]:
            try:
                ray.kill(h)
            except Exception:  # already gone
                pass


def boot(spec: ClusterSpec, *, detached: bool = False) -> System:
    """Create the system's actors on the connected Ray.  Not idempotent:
    boot once per Ray (named actors clash otherwise)."""
    opts: dict[str, Any] = dict(name=COLLECTION, namespace=NAMESPACE)
    if detached:
        opts["lifetime"] = "detached"
    coll = CollectionActor.options(**opts).remote(spec.collection, spec.records())
    call(coll.ping.remote())
    return System(spec=spec, collection=coll, detached=detached)


class RemoteBackend:
    """The query tools' view of a running Collection actor."""

    def __init__(self, handle: Any) -> None:
        self._h = handle

    @classmethod
    def connect(cls) -> "RemoteBackend":
        init_connect()
        return cls(actor(COLLECTION))

    def query(self, text: str, caller: Identity | None = None, include_unavailable: bool = False) -> QueryResult:
        return call(self._h.query.remote(text, caller, include_unavailable))

    def record(self, name: str) -> ResourceRecord:
        return call(self._h.record.remote(name))

    def attribute_names(self) -> list[str]:
        return call(self._h.snapshot.remote()).attribute_names()


# --- CLI --------------------------------------------------------------------


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
    system = boot(spec, detached=True)
    state["actors"] = system.names()
    STATE_FILE.write_text(json.dumps(state))
    print(f"legionrm is up at {state['address']}: {len(spec.hosts)} hosts, {len(spec.vaults)} vaults from {spec.source}")
    return 0


def _stop_head(state: dict[str, Any]) -> None:
    pid = state.get("pid")
    if pid:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


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
                ray.kill(actor(name))
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
    init_connect()
    snap = call(actor(COLLECTION).snapshot.remote())
    names = snap.resource_names()
    avail = [n for n in names if snap.is_available(n)]
    status = {"resources": len(names), "available": len(avail), "unavailable": sorted(set(names) - set(avail))}
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        print(f"{status['resources']} resources, {status['available']} available")
        for n in status["unavailable"]:
            print(f"  unavailable: {n}")
    return 0
