"""``up`` and ``down`` without starting Ray: a taken --port is refused at
once and leaves nothing behind; a state file whose head is gone is stale and
``down`` forgets it; ``down --force``; an ``up`` over a live one is refused.
(The whole up -> status -> down runs in tests/ray/test_cli_ray.py.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from legionrm.cli import main, updown


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(updown, "STATE_FILE", tmp_path / "up.json")
    monkeypatch.setattr(updown, "LOGS", tmp_path / "logs")
    return tmp_path


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    p.wait()
    return p.pid


def test_taken_port_refused_at_once(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        t = time.monotonic()
        assert main(["up", "--port", str(port)]) == 2
        assert time.monotonic() - t < 5
    err = capfd.readouterr().err
    assert f"legionrm up: port {port} is in use" in err and "Traceback" not in err
    assert not (home / "up.json").exists()


def test_taken_port_refused_as_json(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert main(["up", "--port", str(s.getsockname()[1]), "--json"]) == 2
    doc = json.loads(capfd.readouterr().out)
    assert doc["error"]["code"] == "UpError"


def test_stale_state_is_forgotten_by_down(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (home / "up.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": dead_pid(), "temp_dir": str(home / "t")}))
    (home / "t").mkdir()
    t = time.monotonic()
    assert main(["down"]) == 0
    assert time.monotonic() - t < 3
    assert "already gone" in capfd.readouterr().err
    assert not (home / "up.json").exists() and not (home / "t").exists()


def test_unreadable_state_is_stale(home: Path) -> None:
    (home / "up.json").write_text("{not json")
    assert main(["down", "--json"]) == 0
    assert not (home / "up.json").exists()


def test_down_force_stops_the_group(home: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    (home / "up.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": p.pid}))
    t = time.monotonic()
    assert main(["down", "--force"]) == 0
    assert p.wait(timeout=5) != 0 and time.monotonic() - t < 5
    assert not (home / "up.json").exists()


def test_up_over_a_live_system_refused(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (home / "up.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": os.getpgid(0)}))
    assert main(["up"]) == 2
    assert "already up" in capfd.readouterr().err
    assert (home / "up.json").exists()


def test_nothing_up(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["down"]) == 0
    assert "no system is up" in capfd.readouterr().err


def test_up_makes_the_home_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "auth" / "users").mkdir(parents=True)
    (home / "registry.json").write_text("{}")
    (home / "registry.json").chmod(0o644)
    old = os.umask(0o022)
    try:
        updown.private_home(home)
        (home / "new.db").write_text("x")
        (home / "state").mkdir()
    finally:
        os.umask(old)
    for path in [home, *home.rglob("*")]:
        assert path.stat().st_mode & 0o077 == 0, path
