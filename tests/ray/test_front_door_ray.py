"""Issue 24's "done when", live: two users, each an OS account holding only its credentials file.

As root (skipped, saying why, otherwise), on the session Ray cluster: a
system booted as ``up`` boots it (its Command work on a Ray node, run as its
owner's account), the gateway as ``up`` starts it (``python -m
legionrm.gateway`` in a session of its own, umask 077, connecting by the
home's ``up.json``), and two users added with their OS accounts, their
credentials written as ``user add`` writes them and handed to each account.
Then, run as each account (``runuser``, an environment holding nothing but
the credentials file's path: no LEGIONRM_HOME, no Ray address or token), the
CLI and the Python client submit, list, show, wait, read logs and cancel; the
other user's logs and cancel are refused; a replayed, tampered, expired,
unsigned or wrong-key call is refused with its code; and not one file or
directory under the home can be opened by either account."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from legionrm.client.credentials import read
from legionrm.client.signing import RequestSigner, load_key

pytestmark = pytest.mark.ray
START_S = 60.0
USERS = ("alice", "bob")
OTHER = {"alice": "bob", "bob": "alice"}
ECHO = textwrap.dedent("""\
    [[object]]
    class_name = "Command"
    cpus = 0.25
    memory_gb = 0.1
    args = { command = "echo hello from $(id -un)" }
    """)


@dataclasses.dataclass
class Front:
    home: Path
    url: str
    accounts: dict[str, str]
    creds: dict[str, Path]
    python: str

    def run(self, user: str, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``argv`` run as ``user``'s OS account with nothing but their credentials file's path."""
        return subprocess.run(["runuser", "-u", self.accounts[user], "--", "env", "-i", "PATH=/usr/bin:/bin",
                               f"LEGIONRM_CREDENTIALS={self.creds[user]}", *argv],
                              cwd=self.creds[user].parent, input=stdin, capture_output=True, text=True, timeout=180)

    def cli(self, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.run(user, self.python, "-m", "legionrm.cli", *argv)


def _start_gateway(home: Path, log: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """The gateway process as ``up`` starts it; its first line says it serves."""
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "legionrm.gateway", "--home", str(home), "--port", "0",
                                 "--admin", "ops"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                text=True, start_new_session=True, umask=0o077,
                                env={**os.environ, "LEGIONRM_HOME": str(home), "RAY_AUTH_MODE": "disabled"})
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], START_S)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        raise AssertionError(f"the gateway did not start: {log.read_text()[-2000:]}")
    return proc, json.loads(line)


@pytest.fixture(scope="module")
def front(ray_cluster, ray_nodes, os_accounts, client_python):
    from legionrm.auth.guard import auth_home, ensure_home, signer_for
    from legionrm.auth.registry import Registry
    from legionrm.gateway.routes_users import write_credentials
    from legionrm.homefs import private_dir, private_umask, write_private
    from legionrm.models import ClassSpec, ClusterSpec, RunnerSpec
    from legionrm.system import boot

    base = Path(tempfile.mkdtemp(prefix="lrm-door-", dir="/tmp"))
    base.chmod(0o755)  # the accounts' own directories live here; the home stays 0700
    home, work = base / "home", f"/tmp/lrm-door-work-{os.getpid()}"
    old = private_umask()
    try:
        private_dir(home)
        ensure_home(home, operator="ops")
    finally:
        os.umask(old)
    spec = ClusterSpec(classes=(ClassSpec(name="Command", implementation="legionrm.hostobj.work:Command",
                                          host_list=("ray-*",)),),
                       runner=RunnerSpec(python=client_python, work_dir=work, kill_grace_s=2.0))
    system = boot(spec, ray_nodes={"ray-a": ray_nodes["node_a"]}, heartbeat_s=0.5, auth_home=home,
                  state_dir=home / "state")
    write_private(home / "up.json", json.dumps({"address": ray_cluster.address}))
    proc = None
    try:
        proc, doc = _start_gateway(home, base / "gateway.log")
        ops = write_credentials(home, "ops")  # as `up` writes its administrator's
        creds = {}
        for user in USERS:  # the administrator adds each, through the gateway; the file is handed to the account
            added = subprocess.run([sys.executable, "-m", "legionrm.cli", "user", "add", user, "--os-user",
                                    os_accounts[user], "--credentials", str(ops), "--json"],
                                   capture_output=True, text=True, timeout=120)
            made = Path(_json(added)["credentials"])
            mine = base / user
            mine.mkdir(mode=0o700)
            creds[user] = mine / "credentials"
            shutil.copyfile(made, creds[user])
            creds[user].chmod(0o600)
            (mine / "echo.toml").write_text(ECHO)
            for p in (mine, creds[user], mine / "echo.toml"):
                shutil.chown(p, os_accounts[user], os_accounts[user])
        assert Registry(auth_home(home)).user("alice").os_user == os_accounts["alice"]
        yield Front(home=home, url=doc["url"], accounts=os_accounts, creds=creds, python=client_python)
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
        dataclasses.replace(system, signer=signer_for(home, "ops")).shutdown()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def _json(got: subprocess.CompletedProcess[str], code: int = 0) -> Any:
    assert got.returncode == code, (got.returncode, got.stdout, got.stderr)
    return json.loads(got.stdout)


def test_the_cli_as_each_account(front: Front) -> None:
    def session(user: str) -> str:
        """Submit (and wait), logs, list, show, wait; a sleep submitted and cancelled; the first id."""
        done = _json(front.cli(user, "submit", "echo.toml", "--wait", "--json"))
        assert done["ok"] and done["state"] == "completed" and done["exit_code"] == 0, done
        rid = done["id"]
        logs = front.cli(user, "logs", rid)
        assert logs.returncode == 0 and logs.stdout == f"hello from {front.accounts[user]}\n", logs
        assert [r["id"] for r in _json(front.cli(user, "list", "--json"))["requests"]] == [rid]
        assert _json(front.cli(user, "show", rid, "--json"))["user"] == user
        assert _json(front.cli(user, "wait", rid, "--json"))["state"] == "completed"
        sleeper = _json(front.cli(user, "submit", "echo.toml", "--set", "object.0.args.command=sleep 600", "--json"))
        assert sleeper["ok"], sleeper
        gone = _json(front.cli(user, "cancel", sleeper["id"], "--json"))
        assert [i["state"] for i in gone["cancelled"]] == ["cancelled"] and not gone["refused"]
        return rid

    with ThreadPoolExecutor(len(USERS)) as pool:  # the two accounts side by side
        ids = dict(zip(USERS, pool.map(session, USERS)))
    for user, other in OTHER.items():
        theirs = front.cli(user, "logs", ids[other])
        assert theirs.returncode == 2 and "auth.not_owner" in theirs.stderr and theirs.stderr.count("\n") == 1
        refused = _json(front.cli(user, "cancel", ids[other], "--json"), 1)
        assert refused["refused"][ids[other]]["code"] == "auth.not_owner"
        as_other = front.cli(user, "list", "--as", other)
        assert as_other.returncode == 2 and "auth.forbidden" in as_other.stderr


CLIENT = textwrap.dedent("""\
    import json, sys
    from legionrm import Client
    from legionrm.client.errors import GatewayError
    c = Client.from_credentials()
    r = c.submit({"object": [{"class_name": "Command", "cpus": 0.25, "memory_gb": 0.1,
                              "args": {"command": "echo client of $(id -un)"}}]})
    out = {"id": r.id, "wait": c.wait(r.id, timeout=90).state, "logs": c.logs(r.id).stdout,
           "list": [i.id for i in c.list()], "show": c.show(r.id).user}
    s = c.submit({"object": [{"class_name": "Command", "cpus": 0.25, "memory_gb": 0.1,
                              "args": {"command": "sleep 600"}}]})
    out["cancel"] = c.cancel(s.id).state
    for verb in ("logs", "cancel"):
        try:
            getattr(c, verb)(sys.argv[1])
            out[verb + "_theirs"] = "allowed"
        except GatewayError as e:
            out[verb + "_theirs"] = e.code
    out["modules"] = sorted(m for m in ("ray", "numpy") if m in sys.modules)
    print(json.dumps(out))
    """)


def test_the_python_client_as_each_account(front: Front) -> None:
    ids: dict[str, str] = {}
    for user in USERS:  # a request of each, for the other to be refused
        ids[user] = _json(front.cli(user, "submit", "echo.toml", "--json"))["id"]
    with ThreadPoolExecutor(len(USERS)) as pool:
        runs = dict(zip(USERS, pool.map(lambda u: front.run(u, front.python, "-c", CLIENT, ids[OTHER[u]]), USERS)))
    for user, other in OTHER.items():
        got = _json(runs[user])
        assert (got["wait"], got["show"], got["cancel"]) == ("completed", user, "cancelled"), got
        assert got["logs"] == f"client of {front.accounts[user]}\n" and got["id"] in got["list"]
        assert ids[other] not in got["list"] and got["modules"] == []
        assert (got["logs_theirs"], got["cancel_theirs"]) == ("auth.not_owner", "auth.not_owner")


def _signed(key: Any, user: str, url: str, *, body: bytes = b"", created: dt.datetime | None = None) -> httpx.Request:
    req = httpx.Request("POST" if body else "GET", url + "/api/v1/requests", content=body or None)
    RequestSigner(user, key).sign(req, body, created=created)
    return req


def _replayed(key: Any, url: str) -> list[httpx.Request]:
    once = _signed(key, "alice", url)
    return [once, once]


def _tampered(key: Any, url: str) -> list[httpx.Request]:
    req = _signed(key, "alice", url, body=b'{"toml": "[[object]]\\nclass_name = \\"Command\\"\\n"}')
    req.stream = httpx.ByteStream(req.content.replace(b"Command", b"Commanx"))  # the same length, another body
    return [req]


ATTACKS = [
    pytest.param(_replayed, 401, "auth.replayed", id="replayed"),
    pytest.param(_tampered, 401, "auth.bad_signature", id="tampered"),
    pytest.param(lambda k, u: [_signed(k, "alice", u, created=dt.datetime.now(dt.UTC)
                                       - dt.timedelta(seconds=120))], 401, "auth.expired", id="expired"),
    pytest.param(lambda k, u: [httpx.Request("GET", u + "/api/v1/requests")], 401, "auth.unsigned", id="unsigned"),
    pytest.param(lambda k, u: [_signed(Ed25519PrivateKey.generate(), "alice", u)], 401, "auth.bad_signature",
                 id="wrong-key"),
]


@pytest.mark.parametrize(("attack", "status", "code"), ATTACKS)
def test_a_bad_call_is_refused_with_its_code(front: Front, attack: Any, status: int, code: str) -> None:
    cred = read(front.creds["alice"])
    *first, last = attack(load_key(cred.private_key_pem), front.url)
    with httpx.Client(timeout=30) as http:
        for req in first:
            assert http.send(req).status_code == 200  # the call itself was good: only its repeat is not
        got = http.send(last)
    assert (got.status_code, got.json()["code"]) == (status, code), got.text


def test_nothing_under_the_home_opens_for_either_account(front: Front) -> None:
    from legionrm.homefs import exposed

    paths = [str(front.home)] + [str(Path(top) / n) for top, dirs, files in os.walk(front.home) for n in dirs + files]
    assert len(paths) > 10 and not list(exposed(front.home))
    probe = textwrap.dedent("""\
        import os, sys
        opened = []
        for p in sys.stdin.read().splitlines():
            try:
                os.listdir(p) if os.path.isdir(p) else open(p, "rb").close()
                opened.append(p)
            except OSError:
                pass
        print("\\n".join(opened))
        """)
    for user in USERS:
        got = front.run(user, front.python, "-c", probe, stdin="\n".join(paths))
        assert got.returncode == 0 and got.stdout.strip() == "", (user, got.stdout, got.stderr)
