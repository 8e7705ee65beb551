"""This process as a Ray driver: connecting, waiting on calls, signing them.

:func:`init_connect` joins the Ray that ``legionrm up`` started (by its state
file, :data:`STATE_FILE`, presenting Ray's auth token when that ``up`` asked
for one: :func:`ray_token_path`), :func:`local_cluster` makes a lean Ray of a
few nodes on this machine, :func:`call` is the one place the driver waits on
Ray, and :func:`proof_for` signs a call as the driver's user
(:func:`caller_name`) for the actor it goes to.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import ray
from ray._raylet import Config as RayConfig
from ray.cluster_utils import Cluster

from legionrm.auth import CallSigner, signed
from legionrm.auth.guard import signer_for
from legionrm.errors import SystemNotRunningError
from legionrm.homefs import write_private
from legionrm.naming import NAMESPACE, instance_name

STATE_FILE = Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm"))) / "up.json"
HOME = STATE_FILE.parent
RAY_NOTES = logging.getLogger("legionrm.ray")


def caller_name() -> str | None:
    """Who this driver acts as: ``LEGIONRM_USER``, else the login name."""
    return os.environ.get("LEGIONRM_USER") or None


def signer_if(authenticated: bool, home: str | os.PathLike[str] | None = None) -> CallSigner | None:
    """The caller's signer when the system checks who calls (None when it does not).
    Raises (one line, with the fix) when it does and the caller has no credential."""
    return signer_for(home or HOME, caller_name()) if authenticated else None


def signer_for_actor(handle: Any, home: str | os.PathLike[str] | None = None) -> CallSigner | None:
    """:func:`signer_if` the actor (Scheduler or Collection) says it checks proofs."""
    try:
        on = bool(call(handle.authenticated.remote(), 30))
    except AttributeError:  # an actor from before authentication
        on = False
    return signer_if(on, home)


_SIGNERS: dict[str, CallSigner | None] = {}


def proof_for(handle: Any, call_name: str, args: Any, *, to: str) -> Any:
    """The proof to send with ``call_name`` on the actor ``handle``, made out to
    ``to`` (that actor's name: ``scheduler``, ``collection``...; None when that
    actor checks nobody); the signer is looked up once per actor."""
    key = str(getattr(handle, "_actor_id", id(handle)))  # reach-in: a Ray actor handle has no public id
    if key not in _SIGNERS:
        _SIGNERS[key] = signer_for_actor(handle)
    return signed(_SIGNERS[key], call_name, args, to=to)


def call(ref_or_refs: Any, timeout: float | None = 60.0) -> Any:
    """Wait for one Ray call (or a list) — the one place the driver blocks on Ray."""
    return ray.get(ref_or_refs, timeout=timeout)


@contextmanager
def local_cluster(workers: tuple[str, ...] = ("node_a", "node_b"), head_cpus: int = 2) -> Iterator[Any]:
    """A lean multi-node Ray on this machine, connected, for the demo and the
    tests: a head (``head_cpus``, no dashboard, monitor or log monitor) and one
    1-CPU worker node per name in ``workers``, each advertising a custom
    resource of that name so work can be pinned to it.  The temp dir is short
    (Unix socket paths are capped at 107 bytes) and removed afterwards.
    Yields the :class:`ray.cluster_utils.Cluster`; on exit the driver
    disconnects and every node stops, so nothing is left running."""
    temp_dir = tempfile.mkdtemp(prefix="lrm", dir="/tmp")
    old_tmp = os.environ.get("RAY_TMPDIR")
    # Cluster writes "<RAY_TMPDIR>/ray/ray_current_cluster": keep it in our dir, not a shared /tmp/ray
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)
    lean = dict(include_dashboard=False, no_monitor=True, include_log_monitor=False)
    cluster = None
    try:
        cluster = Cluster(initialize_head=True,
                          head_node_args=dict(num_cpus=head_cpus, temp_dir=temp_dir, resources={"head": 1}, **lean))
        for name in workers:  # one at a time: parallel node starts collide on ports
            cluster.add_node(num_cpus=1, resources={name: 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace=NAMESPACE, logging_level="ERROR", log_to_driver=False)
        _raylet_notes_to_log()  # the demo's tables, not the raylet's worker-pool notes
        yield cluster
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        if old_tmp is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old_tmp


def instance_actor(instance_id: str) -> Any:
    """The Ray actor running an instance on a host bound to a Ray node."""
    return ray.get_actor(instance_name(instance_id), namespace=NAMESPACE)


def node_ids(labels: tuple[str, ...] = ("head", "node_a", "node_b")) -> dict[str, str]:
    """Live Ray node ids by the custom resource each advertises."""
    out: dict[str, str] = {}
    for n in ray.nodes():
        if n.get("Alive"):
            out.update({label: n["NodeID"] for label in labels if label in n.get("Resources", {})})
    return out


RAY_TOKEN_FILE = "ray_token"


def ray_token_path(home: str | os.PathLike[str], create: bool = False) -> Path:
    """The file holding the Ray cluster's auth token (``auth/ray_token``, 0600);
    with ``create`` a fresh random token is written first."""
    path = Path(home) / "auth" / RAY_TOKEN_FILE
    if create:
        write_private(path, secrets.token_hex(32))
    return path


def ray_token_env(path: str | os.PathLike[str]) -> dict[str, str]:
    """The environment that makes a Ray process (head, driver) use token auth with the token at ``path``."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}


def use_ray_token(path: str | os.PathLike[str]) -> None:
    """Make this driver present Ray's auth token from ``path`` when it connects
    (Ray reads RAY_AUTH_MODE into its C++ config: refresh it, as ``ray`` itself does)."""
    os.environ.update(ray_token_env(path))
    RayConfig.initialize("")


def init_connect(address: str = "auto") -> None:
    """Connect to a running Ray (the one ``legionrm up`` started, by default).
    When that ``up`` started Ray with token authentication, present its token."""
    if ray.is_initialized():
        return
    if STATE_FILE.exists():
        token = json.loads(STATE_FILE.read_text()).get("ray_token_path")
        if token:
            use_ray_token(token)
    if address == "auto" and STATE_FILE.exists():
        address = json.loads(STATE_FILE.read_text())["address"]
    try:
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
    except ConnectionError as exc:
        raise SystemNotRunningError(f"no Ray cluster at {address!r}: {exc}; start one with `legionrm up`") from None
    _raylet_notes_to_log()


def _raylet_notes_to_log() -> None:
    """Ray prints the raylet's broadcast notes (such as "14 PYTHON worker processes
    have been started ...", every two more workers on a 2-cpu head) on the driver's
    stdout, even without ``log_to_driver``: that stdout is a command's answer (one
    line, or JSON).  Send them to the ``legionrm.ray`` logger instead; workers' own
    output (not asked for here) is untouched.  Does nothing if Ray moves the hook."""
    worker = ray._private.worker  # reach-in: Ray has no public hook for these notes
    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "__module__", None) == __name__:  # hooked already (by this module)
        return

    def to_log(data: dict[str, Any], ignore_prefix: bool) -> None:
        if data.get("pid") == "raylet":
            RAY_NOTES.info("%s", " ".join(map(str, data.get("lines", ()))))
        else:
            printer(data, ignore_prefix)

    worker.print_to_stdstream = to_log
