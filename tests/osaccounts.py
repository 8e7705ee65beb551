"""Fixtures for tests that act as other OS accounts (reference/notes/os-accounts.md).

* ``os_accounts``: two throwaway accounts, made with ``useradd -M -s /bin/bash``
  and removed at the end of the session; ``{"alice": name, "bob": name}``
  (``lrmtest<pid>-alice``: sessions side by side keep their own).
  Skips (saying why) when the tests do not run as root or ``useradd`` is missing.
* ``work_python``: an interpreter every account can run: a venv made from
  Debian's ``/usr/bin/python3.11`` in a world-readable directory under /tmp,
  with this tree's ``legionrm`` copied into its site-packages (as ``pip install
  --no-deps`` would put it, without pip: the function form needs nothing
  else).  Removed at the end.  Skips when that interpreter is missing.
* ``client_python``: that same venv with what legionrm's client and CLI need
  (httpx, http-message-signatures, pydantic, cryptography and what they
  need), copied from this interpreter's own installs (the same versions;
  offline, in about a second).  The service's venv cannot be run by the
  accounts (os-accounts.md), so a user's CLI runs from here.

tests/conftest.py loads this module as a plugin: any test may ask for them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3.11"
PREFIX = "lrmtest"
"""Accounts are named ``lrmtest<pid>-alice``: sessions running side by side (several
checkouts on one machine) never remove each other's accounts."""


@pytest.fixture(scope="session")
def os_accounts() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("creating OS accounts needs root (these tests run work as other accounts)")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    for name in _left_behind():  # by a session that died before its cleanup
        _account_tool("userdel", name)
    accounts = {who: f"{PREFIX}{os.getpid()}-{who}" for who in ("alice", "bob")}
    for name in accounts.values():
        done = _account_tool("useradd", "-M", "-s", "/bin/bash", name)
        if done.returncode != 0:
            raise RuntimeError(f"useradd {name} failed ({done.returncode}): {done.stderr.strip()}")
    try:
        yield accounts
    finally:
        for name in accounts.values():
            _account_tool("userdel", name)


def _account_tool(*argv: str, tries: int = 50) -> subprocess.CompletedProcess[str]:
    """``useradd``/``userdel`` run, again while another one holds the account files' lock: sessions
    side by side (``make test``'s parallel workers) make their accounts at the same moment, and the
    second is refused at once ("cannot lock /etc/passwd; try again later"), not made to wait."""
    for _ in range(tries - 1):
        done = subprocess.run(list(argv), capture_output=True, text=True)
        if done.returncode == 0 or "lock" not in done.stderr:
            return done
        time.sleep(0.1)
    return subprocess.run(list(argv), capture_output=True, text=True)


def _left_behind() -> list[str]:
    """Test accounts whose session (the pid in their name) is gone."""
    out = []
    for line in Path("/etc/passwd").read_text().splitlines():
        name = line.split(":", 1)[0]
        if name.startswith(PREFIX) and "-" in name:
            pid = name[len(PREFIX):].split("-", 1)[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                out.append(name)
    return out


@pytest.fixture(scope="session")
def work_python() -> Iterator[str]:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{SYSTEM_PYTHON} (an interpreter every account can run) is not installed")
    base = Path(tempfile.mkdtemp(prefix="legionrm-osvenv-", dir="/tmp"))
    try:
        base.chmod(0o755)
        venv = base / "venv"
        # no pip in it, and legionrm copied in: what `pip install --no-deps` of this tree puts there
        # (legionrm is pure Python), without pip's own install and its wheel build (about 14 s of CPU)
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
        site = next(venv.glob("lib/python3*/site-packages"))
        shutil.copytree(ROOT / "legionrm", site / "legionrm", ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(["chmod", "-R", "a+rX", str(base)], check=True)
        python = str(venv / "bin" / "python")
        got = subprocess.run([python, "-c", "import legionrm"], capture_output=True, text=True)
        if got.returncode != 0:
            pytest.fail(f"legionrm does not import in the test venv: {got.stderr[-2000:]}")
        yield python
    finally:
        shutil.rmtree(base, ignore_errors=True)


CLIENT_NEEDS = ("httpx", "http-message-signatures", "pydantic", "cryptography")
"""What ``legionrm.client`` and the CLI's gateway verbs import beyond legionrm itself."""


def _needed(names: tuple[str, ...]) -> list:  # of importlib.metadata.Distribution
    """The distributions ``names`` need, themselves included (their requirements without extras)."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement

    seen: dict = {}
    todo = list(names)
    while todo:
        dist = distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = dist
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


@pytest.fixture(scope="session")
def client_python(work_python: str) -> str:
    venv = Path(work_python).parent.parent
    site = next(venv.glob("lib/python3*/site-packages"))
    for dist in _needed(CLIENT_NEEDS):
        for f in dist.files or ():
            src = Path(dist.locate_file(f))
            if ".." in f.parts or not src.is_file():  # scripts beside the interpreter: not needed
                continue
            (site / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, site / f)
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    got = subprocess.run([work_python, "-c", "import legionrm.client.client, legionrm.cli.front"],
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.fail(f"the client does not import in the accounts' venv: {got.stderr[-2000:]}")
    return work_python
