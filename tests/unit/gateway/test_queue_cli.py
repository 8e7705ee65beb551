"""The queue through the gateway, as users and an administrator use it: a user's own priority is
refused (one line, exit 1), ``share`` shows finished usage decaying with the half-life, ``hold``,
``release``, ``top``, ``update`` and ``prio``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from legionrm.auth.guard import auth_home, ensure_home
from legionrm.auth.keys import load_private_key
from legionrm.auth.registry import Registry
from legionrm.cli import main
from legionrm.client.credentials import Credentials
from legionrm.config import parse_cluster
from legionrm.gateway.app import make_app
from legionrm.gateway.local import LocalPlane
from legionrm.gateway.serve import in_thread
from legionrm.inprocess import LocalSystem
from legionrm.testing import FakeClock

from .conftest import ADMIN, Gateway

HALF_LIFE_S = 1000.0
CLUSTER = {"host": [{"name": "h0", "attributes": {"cpus": 4, "memory_gb": 16}}], "class": [{"name": "W"}],
           "qos": [{"name": "normal", "default": True}, {"name": "high", "priority": 10}],
           "fairshare": {"half_life_s": HALF_LIFE_S}}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Gateway, FakeClock]]:
    home = tmp_path / "home"
    ensure_home(home, operator=ADMIN)
    clock = FakeClock()
    system = LocalSystem(parse_cluster(CLUSTER), clock=clock)
    with in_thread(make_app(LocalPlane(system, home), home)) as url:
        gw = Gateway(home=home, url=url, registry=Registry(auth_home(home)), system=system)
        gw.admin_path = home / "admin.credentials"
        Credentials.of(url, ADMIN, load_private_key(Registry(auth_home(home)).key_path(ADMIN))).write(gw.admin_path)
        yield gw, clock


def cli(gw: Gateway, user: str, *argv: str) -> int:
    creds = gw.admin_path if user == ADMIN else gw.credentials(user)
    return main([*argv, "--credentials", str(creds)])


def request(tmp_path: Path, name: str, text: str = "") -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(text + '[[object]]\nclass_name = "W"\ncpus = 4\nwalltime_s = 50\n')
    return str(path)


def share_of(gw: Gateway, user: str, capsys: Any) -> dict[str, Any]:
    assert cli(gw, ADMIN, "share", "--json") == 0
    return next(r for r in json.loads(capsys.readouterr().out)["rows"] if r["user"] == user)


def test_a_users_own_priority_is_refused_in_one_line(site, tmp_path, capsys) -> None:
    gw, _ = site
    assert cli(gw, "ann", "submit", request(tmp_path, "p", "priority = 5\n"), "--id", "p") == 1
    out = capsys.readouterr().out.strip()
    assert out.startswith("p: refused by scheduler: request.priority: priority:") and "\n" not in out
    assert cli(gw, "ann", "submit", request(tmp_path, "w"), "--set", "object.0.weight=3", "--id", "w") == 1
    assert "object[0].weight" in capsys.readouterr().out
    assert cli(gw, ADMIN, "submit", request(tmp_path, "p"), "--set", "priority=5", "--id", "p2") == 0


def test_share_shows_finished_usage_decaying(site, tmp_path, capsys) -> None:
    gw, clock = site
    assert cli(gw, "ann", "submit", request(tmp_path, "a"), "--id", "a") == 0
    clock.advance(51)
    gw.system.tick()  # its walltime ends
    gw.system.scheduler.results.sweep()  # its accounting record is written
    capsys.readouterr()
    first = share_of(gw, "ann", capsys)
    assert first["raw_usage"] == pytest.approx(4 * 50, rel=0.05) and first["factor"] < 1.0
    clock.advance(HALF_LIFE_S)
    later = share_of(gw, "ann", capsys)
    assert later["raw_usage"] == first["raw_usage"]  # raw usage is never forgotten
    assert later["decayed_usage"] == pytest.approx(first["decayed_usage"] / 2)  # decayed: halved in one half-life
    clock.advance(2 * HALF_LIFE_S)
    assert share_of(gw, "ann", capsys)["decayed_usage"] == pytest.approx(first["decayed_usage"] / 8)
    assert cli(gw, "ann", "share") == 0
    text = capsys.readouterr().out
    assert "half-life" in text and "ann" in text and "default" in text


def test_hold_release_top_update_and_prio(site, tmp_path, capsys) -> None:
    gw, clock = site
    gw.system.tick()
    assert cli(gw, "bob", "submit", request(tmp_path, "f"), "--id", "fill") == 0  # the one host is busy
    for rid in ("a1", "a2"):
        assert cli(gw, "ann", "submit", request(tmp_path, rid), "--id", rid) == 0
        clock.advance(1)
    capsys.readouterr()
    assert cli(gw, "ann", "hold", "a1") == 0 and "held by user" in capsys.readouterr().out
    assert cli(gw, "ann", "prio", "--json") == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["id"], r["hold"]) for r in rows] == [("a2", None), ("a1", "user")]
    assert cli(gw, "bob", "release", "a1") == 1  # not bob's
    assert "auth.not_owner" in capsys.readouterr().out
    assert cli(gw, "ann", "release", "a1") == 0
    assert cli(gw, "ann", "top", "a2") == 1 and "auth.forbidden" in capsys.readouterr().out
    assert cli(gw, ADMIN, "update", "a1", "--qos", "high") == 0  # a1 goes first: its QoS's priority
    assert cli(gw, ADMIN, "top", "a2") == 0  # a2 above every pending request's priority now
    assert cli(gw, ADMIN, "update", "a1", "--qos", "gold") == 1 and "qos.unknown" in capsys.readouterr().out
    assert cli(gw, ADMIN, "prio") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["id", "user", "qos", "priority"]
    assert [ln.split()[0] for ln in lines[1:]] == ["a2", "a1"] and "*" in lines[1]  # top: a fixed priority
    assert cli(gw, "ann", "hold", "fill") == 1  # neither hers nor pending
