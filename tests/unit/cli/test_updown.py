"""``up`` and ``down`` without starting Ray: a taken --port is refused at
once and leaves nothing behind; a state file whose head is gone is stale and
``down`` forgets it; ``down --force``; an ``up`` over a live one is refused.
(The whole up -> status -> down runs in tests/ray/test_cli_ray.py.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from legionrm.cli import main, updown


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(updown, "STATE_FILE", tmp_path / "up.json")
    monkeypatch.setattr(updown, "LOGS", tmp_path / "logs")
    return tmp_path


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The addresses ``up``/``down`` try to reach Ray at (none is reached: a try fails)."""
    tried: list[str] = []

    def refuse(address: str) -> None:
        tried.append(address)
        raise RuntimeError(f"this test reaches no Ray (asked for {address})")

    monkeypatch.setattr(updown, "init_connect", refuse)
    return tried


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    p.wait()
    return p.pid


def test_taken_port_refused_at_once(home: Path, connects: list[str], capfd: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["up", "--port", str(port)]) == 2
    err = capfd.readouterr().err
    assert f"legionrm up: port {port} is in use" in err and "Traceback" not in err
    # refused in the first step: no Ray head started, nothing connected to, no state written
    assert "✗ choosing ports" in err and "starting a Ray head" not in err and connects == []
    assert not (home / "up.json").exists()


def test_taken_port_refused_as_json(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert main(["up", "--port", str(s.getsockname()[1]), "--json"]) == 2
    doc = json.loads(capfd.readouterr().out)
    assert doc["error"]["code"] == "UpError"


def test_stale_state_is_forgotten_by_down(home: Path, connects: list[str], capfd: pytest.CaptureFixture[str]) -> None:
    (home / "up.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": dead_pid(), "temp_dir": str(home / "t")}))
    (home / "t").mkdir()
    assert main(["down"]) == 0
    assert connects == []  # a system that is gone is not asked to stop its actors
    assert "already gone" in capfd.readouterr().err
    assert not (home / "up.json").exists() and not (home / "t").exists()


def test_unreadable_state_is_stale(home: Path) -> None:
    (home / "up.json").write_text("{not json")
    assert main(["down", "--json"]) == 0
    assert not (home / "up.json").exists()


def test_down_force_stops_the_group(home: Path, connects: list[str]) -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    (home / "up.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": p.pid}))
    try:
        assert main(["down", "--force"]) == 0
        assert not updown._group_alive(p.pid)  # down returns once the group is gone
    finally:
        p.kill()
    assert p.wait() == -signal.SIGTERM  # stopped by the first signal, its grace to end cleanly
    assert connects == []  # --force asks the system nothing
    assert not (home / "up.json").exists()


def test_up_over_a_live_system_refused(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (home / "up.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": os.getpgid(0)}))
    assert main(["up"]) == 2
    assert "already up" in capfd.readouterr().err
    assert (home / "up.json").exists()


def test_nothing_up(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["down"]) == 0
    assert "no system is up" in capfd.readouterr().err


# --- up --gateway-port 0 keeps the address the credentials handed out name ---------------------------------

def _listening() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


@pytest.mark.parametrize(
    "url, host, taken, want",
    [
        ("http://127.0.0.1:{port}", "127.0.0.1", False, "port"),
        ("http://127.0.0.1:{port}", "127.0.0.1", True, 0),  # someone else took it since: any free one
        ("https://10.1.2.3:{port}", "127.0.0.1", False, 0),  # another host's address
        ("http://127.0.0.1", "127.0.0.1", False, 0),  # no port named
        ("http://127.0.0.1:99999", "127.0.0.1", False, 0),  # not a port
    ],
    ids=["free-again", "taken-since", "other-host", "no-port", "bad-port"],
)
def test_a_free_gateway_port_is_the_one_issued_credentials_name_when_it_can_be(url, host, taken, want) -> None:
    s = _listening()
    port = s.getsockname()[1]
    if not taken:
        s.close()
    try:
        assert updown._port_of(url.format(port=port), host) == (port if want == "port" else want)
    finally:
        s.close()


def test_the_issued_url_is_read_from_the_operators_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from legionrm.client.credentials import Credentials
    from legionrm.gateway.routes_users import credentials_path

    monkeypatch.setattr(updown, "HOME", tmp_path)
    monkeypatch.setenv("LEGIONRM_USER", "ops")
    assert updown.issued_url() is None  # no up has written any yet
    path = credentials_path(tmp_path, "ops")
    path.parent.mkdir(parents=True)
    Credentials.of("http://127.0.0.1:8123", "ops", Ed25519PrivateKey.generate()).write(path)
    assert updown.issued_url() == "http://127.0.0.1:8123"
    path.write_text("not a credentials file")
    assert updown.issued_url() is None  # unreadable: any free port, never a traceback
