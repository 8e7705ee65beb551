"""Preemption and ``after`` through the gateway, as users see them (issue 26): a request
file's ``on_preempt``, ``show`` saying who preempted whom and why, ``list --state
preempted``, and a cycle of ``after`` refused at submit in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from legionrm.auth.guard import auth_home, ensure_home
from legionrm.auth.registry import Registry
from legionrm.cli import main
from legionrm.config import parse_cluster
from legionrm.gateway.app import make_app
from legionrm.gateway.local import LocalPlane
from legionrm.gateway.serve import in_thread
from legionrm.inprocess import LocalSystem
from legionrm.testing import FakeClock

from .conftest import ADMIN, Gateway

CLUSTER = {"host": [{"name": "h0", "attributes": {"cpus": 4, "memory_gb": 16}}], "class": [{"name": "W"}],
           "qos": [{"name": "normal", "default": True}, {"name": "scavenger", "preemptable": True},
                   {"name": "urgent", "priority": 10}]}


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    home = tmp_path / "home"
    ensure_home(home, operator=ADMIN)
    system = LocalSystem(parse_cluster(CLUSTER), clock=FakeClock())
    with in_thread(make_app(LocalPlane(system, home), home)) as url:
        yield Gateway(home=home, url=url, registry=Registry(auth_home(home)), system=system)


def cli(gw: Gateway, user: str, *argv: str) -> int:
    return main([*argv, "--credentials", str(gw.credentials(user))])


def request(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


W = '[[object]]\nclass_name = "W"\ncpus = 4\nwalltime_s = 50\n'


@pytest.mark.parametrize("on_preempt, state", [("cancel", "preempted"), ("requeue", "pending")])
def test_show_says_who_preempted_whom_and_why(gw, tmp_path, capsys, on_preempt: str, state: str) -> None:
    assert cli(gw, "ann", "submit", request(tmp_path, "s", f'qos = "scavenger"\non_preempt = "{on_preempt}"\n' + W),
               "--id", "s") == 0
    assert cli(gw, "bob", "submit", request(tmp_path, "u", 'qos = "urgent"\n' + W), "--id", "u") == 0
    capsys.readouterr()
    gw.system.scheduler.tick()
    assert cli(gw, "ann", "show", "s") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"s {state}") and f"if preempted: {on_preempt}" in out
    assert "preempted  queue.preempted: preempted by u (QoS urgent is not preemptable and QoS scavenger is)" in out
    assert cli(gw, "bob", "show", "u") == 0
    assert "preempted s to make room (QoS urgent: not preemptable)" in capsys.readouterr().out
    assert cli(gw, "ann", "list", "--state", state) == 0
    assert "s " in capsys.readouterr().out


def test_a_cycle_of_after_is_refused_at_submit_in_one_line(gw, tmp_path, capsys) -> None:
    text = '[[object]]\nclass_name = "W"\nname = "a"\nafter = ["b"]\n[[object]]\nclass_name = "W"\nname = "b"\nafter = ["a"]\n'
    assert cli(gw, "ann", "submit", request(tmp_path, "c", text), "--id", "c") == 1
    out = capsys.readouterr().out.strip()
    assert out == "c: refused by scheduler: request.after: objects a -> b -> a follow each other in a cycle"
