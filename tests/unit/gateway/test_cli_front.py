"""The CLI's user verbs through the gateway, holding only a credentials file."""

from __future__ import annotations

import json

import pytest

from legionrm.cli import main

from .conftest import ADMIN

WORKER = '[[object]]\nclass_name = "Worker"\ncount = 1\ncpus = 1\n'


@pytest.fixture
def ann(gateway, tmp_path):
    creds = str(gateway.credentials("ann"))
    request = tmp_path / "w.toml"
    request.write_text(WORKER)

    def run(*argv: str) -> tuple[int, str, str]:
        return main([*argv, "--credentials", creds]), str(request)
    return run, str(request)


def test_submit_list_show_cancel(ann, capsys) -> None:
    run, request = ann
    assert run("submit", request, "--id", "w-1", "--json")[0] == 0
    assert json.loads(capsys.readouterr().out)["id"] == "w-1"
    assert run("list", "--format", "{id} {state} {user}")[0] == 0
    assert capsys.readouterr().out.split() == ["w-1", "running", "ann"]
    assert run("list")[0] == 0 and "w-1" in capsys.readouterr().out
    assert run("show", "w-1")[0] == 0 and "instance" in capsys.readouterr().out
    assert run("cancel", "w-1")[0] == 0 and "w-1: cancelled" in capsys.readouterr().out
    assert run("wait", "w-1")[0] == 1 and "cancelled" in capsys.readouterr().out
    assert run("show", "w-1", "--follow", "--timeout", "5")[0] == 0  # its changes, until it ended
    assert "cancelled" in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["hosts", "pools", "status"])
def test_views(ann, capsys, verb) -> None:
    run, _ = ann
    assert run(verb)[0] == 0 and capsys.readouterr().out.strip()
    assert run(verb, "--json")[0] == 0 and json.loads(capsys.readouterr().out)


def test_errors_are_one_line(ann, capsys) -> None:
    run, _ = ann
    assert run("show", "nope")[0] == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("legionrm show: request.unknown") and "\n" not in err
    assert run("show", "nope", "--as", ADMIN)[0] == 2
    assert "auth.forbidden" in capsys.readouterr().err
    assert run("logs", "nope", "--json")[0] == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "request.unknown"


def test_no_credentials_is_one_line(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LEGIONRM_HOME", str(tmp_path / "h"))
    monkeypatch.delenv("LEGIONRM_CREDENTIALS", raising=False)
    assert main(["list"]) == 2
    assert "no credentials: looked at" in capsys.readouterr().err


def test_the_cli_module_imports_neither_ray_nor_numpy() -> None:
    import os
    import subprocess
    import sys
    code = ("import sys, legionrm.cli, legionrm.cli.front; "
            "print(sorted(m for m in ('ray', 'numpy', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]", out.stderr


def test_show_lists_the_vetoes_a_placed_request_met(ann, capsys) -> None:
    """examples/requests/workers.toml: lab1's owner vetoes the first master schedule, a delta wins;
    ``show`` says so even though the request runs."""
    from pathlib import Path

    run, _ = ann
    example = str(Path(__file__).resolve().parents[3] / "examples" / "requests" / "workers.toml")
    assert run("submit", example, "--id", "big", "--json")[0] == 0
    assert json.loads(capsys.readouterr().out)["ok"]
    assert run("show", "big")[0] == 0
    out = capsys.readouterr().out
    assert "big running" in out and "vetoes and refusals met" in out and "policy." in out, out
