"""Fixtures for tests that act as other OS accounts (reference/notes/os-accounts.md).

* ``os_accounts``: two throwaway accounts, made with ``useradd -M -s /bin/bash``
  and removed at the end of the session; ``{"alice": name, "bob": name}``
  (names with this session's pid: sessions side by side keep their own).
  Skips (saying why) when the tests do not run as root or ``useradd`` is missing.
* ``work_python``: an interpreter every account can run: a venv made from
  Debian's ``/usr/bin/python3.11`` in a world-readable directory under /tmp,
  with this tree's ``legionrm`` installed (``--no-deps``: the function form
  needs nothing else; pip's cache is reused).  Removed at the end.  Skips when
  that interpreter is missing.

tests/conftest.py loads this module as a plugin: any test may ask for them.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3.11"
LEFT = re.compile(r"lrmt(\d+)-(alice|bob)")
"""The accounts' names: this session's pid in them, so that test sessions running side by side on one
machine never remove each other's accounts."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


@pytest.fixture(scope="session")
def os_accounts() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("creating OS accounts needs root (these tests run work as other accounts)")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    for p in pwd.getpwall():  # left by a session that died before its cleanup
        if (m := LEFT.fullmatch(p.pw_name)) and not _alive(int(m.group(1))):
            subprocess.run(["userdel", p.pw_name], capture_output=True)
    accounts = {who: f"lrmt{os.getpid()}-{who}" for who in ("alice", "bob")}
    for name in accounts.values():
        subprocess.run(["useradd", "-M", "-s", "/bin/bash", name], check=True, capture_output=True)
    try:
        yield accounts
    finally:
        for name in accounts.values():
            subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture(scope="session")
def work_python() -> Iterator[str]:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{SYSTEM_PYTHON} (an interpreter every account can run) is not installed")
    base = Path(tempfile.mkdtemp(prefix="legionrm-osvenv-", dir="/tmp"))
    try:
        base.chmod(0o755)
        src = base / "src"
        shutil.copytree(ROOT / "legionrm", src / "legionrm", ignore=shutil.ignore_patterns("__pycache__"))
        for f in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / f, src / f)
        venv = base / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], check=True, capture_output=True)
        got = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(src)],
                             capture_output=True, text=True)
        if got.returncode != 0:
            pytest.fail(f"installing legionrm into the test venv failed: {got.stderr[-2000:]}")
        shutil.rmtree(src)
        subprocess.run(["chmod", "-R", "a+rX", str(base)], check=True)
        yield str(venv / "bin" / "python")
    finally:
        shutil.rmtree(base, ignore_errors=True)
