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


def test_history_through_the_gateway(ann, gateway, capsys) -> None:
    """``history`` holds only a credentials file: the record of the cancelled instance, as a table,
    JSON and CSV; with ``--state`` that matches none, says so."""
    run, request = ann
    assert run("submit", request, "--id", "h-1")[0] == 0 and run("cancel", "h-1")[0] == 0
    for _ in range(2):  # the Scheduler writes the records of ended instances every other tick
        gateway.system.tick()
    capsys.readouterr()
    assert run("history")[0] == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:3] == ["instance", "request", "user"] and rows[1].split()[1:3] == ["h-1", "ann"]
    assert run("history", "--json")[0] == 0
    assert [(r["request_id"], r["state"]) for r in json.loads(capsys.readouterr().out)["records"]] == [("h-1", "cancelled")]
    assert run("history", "--csv", "--since", "1h")[0] == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("instance_id,request_id,user") and ",h-1,ann," in lines[1]
    assert run("history", "--state", "completed")[0] == 0
    assert capsys.readouterr().out.strip() == "no finished instances in state completed"


@pytest.mark.parametrize("verb", ["hosts", "pools", "status"])
def test_views(ann, capsys, verb) -> None:
    run, _ = ann
    assert run(verb)[0] == 0 and capsys.readouterr().out.strip()
    assert run(verb, "--json")[0] == 0 and json.loads(capsys.readouterr().out)


def test_errors_are_one_line(ann, capsys) -> None:
    run, request = ann
    assert run("show", "nope")[0] == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("legionrm show: request.unknown") and "\n" not in err
    assert run("show", "nope", "--as", ADMIN)[0] == 2
    assert "auth.forbidden" in capsys.readouterr().err
    assert run("logs", "nope", "--json")[0] == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "request.unknown"
    assert run("submit", request, "--id", "one")[0] == 0
    capsys.readouterr()
    assert run("logs", "one", "--instance", "5")[0] == 2  # its one instance is number 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("legionrm logs: request.no_instance: ") and "--instance 0 to 0" in err, err


def test_no_credentials_is_one_line(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LEGIONRM_HOME", str(tmp_path / "h"))
    monkeypatch.delenv("LEGIONRM_CREDENTIALS", raising=False)
    assert main(["list"]) == 2
    assert "no credentials: looked at" in capsys.readouterr().err


LEAN = ("ray", "numpy", "pydantic", "legionrm.models", "httpx", "http_message_signatures", "rich", "lark", "aiohttp",
        "http.client", "email", "ssl", "tomllib", "cryptography.hazmat.primitives", "encodings.idna", "hashlib", "typing",
        "pathlib", "urllib.parse", "threading", "base64", "csv")
"""What a CLI call through an http gateway does without (issue 29 item 2): Ray, numpy, the models, the
gateway's own libraries, http.client and its email parser, TLS, a TOML parser for a credentials file
as ``user add`` writes it, cryptography's public modules (its binding signs), the idna codec, hashlib (and
OpenSSL's libcrypto with it: the body's SHA-256 is CPython's own), typing, pathlib, urllib.parse, threading,
base64 and csv.  The editable install's finder loads pathlib and urllib.parse at start: the probe forgets
them first (an installed legionrm has no such finder)."""
PROBE = """
import json, sys
for name in ("pathlib", "urllib.parse"):
    sys.modules.pop(name, None)
from legionrm.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in %r if m in sys.modules)}))
""" % (LEAN,)


@pytest.mark.parametrize("argv", [["list"], ["list", "--json"], ["show", "w-9"], ["hosts"]], ids=" ".join)
def test_a_call_through_the_gateway_imports_none_of_the_heavy_modules(gateway, argv: list[str]) -> None:
    """A fresh interpreter, as a user's shell starts one, makes the whole call (signed, sent, answered,
    printed), then none of :data:`LEAN` is loaded (the import-time check, tests/arch/test_lean_cli.py,
    stops before the call: this one sees what the call itself imports)."""
    import os
    import subprocess
    import sys
    creds = str(gateway.credentials("ann"))
    with gateway.client("ann") as c:
        c.submit(WORKER, id="w-9")
    out = subprocess.run([sys.executable, "-c", PROBE, *argv, "--credentials", creds], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=False)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 0 and ("w-9" in out.stdout or argv == ["hosts"]), out.stderr
    assert got["loaded"] == []


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


GATEWAY_VERBS = [("submit", "{request}"), ("list",), ("show", "x"), ("wait", "x"), ("logs", "x"), ("cancel", "x"),
                 ("explain", "{request}"), ("query", "true"), ("hosts",), ("pools",), ("status",), ("user", "list"),
                 ("user", "add", "zed"), ("user", "remove", "ann")]
"""Every verb that goes through the gateway (``shell`` is the query's, interactive)."""


@pytest.mark.parametrize("argv", GATEWAY_VERBS, ids=lambda a: " ".join(a[:2]).replace("{request}", "FILE"))
def test_as_is_refused_for_a_user_on_every_verb_never_ignored(ann, capsys, argv) -> None:
    run, request = ann
    argv = tuple(a.format(request=request) for a in argv)
    assert run(*argv, "--as", ADMIN, "--json")[0] == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "auth.forbidden"


def test_as_works_for_an_administrator_and_takes_that_users_role(gateway, tmp_path, capsys) -> None:
    admin = str(gateway.admin_path)
    request = tmp_path / "w.toml"
    request.write_text(WORKER)
    gateway.credentials("ann")
    assert main(["submit", str(request), "--id", "ann-1", "--as", "ann", "--json", "--credentials", admin]) == 0
    capsys.readouterr()
    assert main(["list", "--as", "ann", "--format", "{id} {user}", "--credentials", admin]) == 0
    assert capsys.readouterr().out.split() == ["ann-1", "ann"]
    assert main(["user", "list", "--as", "ann", "--json", "--credentials", admin]) == 2  # ann is no administrator
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "auth.forbidden"
    assert main(["user", "list", "--json", "--credentials", admin]) == 0
    assert "ann" in {u["name"] for u in json.loads(capsys.readouterr().out)["users"]}


def test_every_verb_has_json() -> None:
    from legionrm.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    lacking = sorted(name for name, p in sub.choices.items()
                     if name not in ("shell", "completion", "demo") and "--json" not in p._option_string_actions)
    assert lacking == []


def test_hosts_prints_name_state_cpus_memory_gpus_custom_load_owner_policy_pool(ann, capsys) -> None:
    run, _ = ann
    assert run("hosts")[0] == 0
    lines = capsys.readouterr().out.splitlines()
    assert [h.strip() for h in lines[0].split("  ") if h.strip()] == [
        "name", "state", "cpus free/total", "memory GB", "gpus free/total", "custom", "load", "owner policy", "pool",
        "drained"]
    assert any(line.startswith("gpu1 ") and " 4/4 " in line for line in lines), lines  # the GPU host's gpus
    assert run("hosts", "--json")[0] == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["hosts"]}
    assert {"name", "state", "cpus_free", "cpus_total", "memory_gb", "gpus_free", "gpus_total", "custom", "load",
            "owner_policy", "pool"} <= set(rows["gpu1"])
    assert (rows["gpu1"]["gpus_free"], rows["gpu1"]["gpus_total"]) == (4, 4)


def test_a_hosts_row_carries_its_gpus_and_custom_kinds_as_its_node_reports_them() -> None:
    """A Ray node's custom resources (``tpu``, the test cluster's ``node_a``) are its host's custom
    kinds: the row carries each (free, total), as ``hosts`` prints them compactly."""
    from legionrm.cli.front import host_lines
    from legionrm.gateway.routes_system import host_row
    from legionrm.hostobj.host import HostObject
    from legionrm.models import Holder, ReservationRequest, Resources
    from legionrm.models.reservations import custom_kinds

    host = HostObject("ray-1", Resources(cpus=4, memory_gb=8, gpus=2, custom=custom_kinds({"tpu": 2, "node_a": 1})))
    host.make_reservation(ReservationRequest(request_id="r", resource="ray-1", holder=Holder(user="u"),
                                             resources=Resources(cpus=1, gpus=1, custom=(("tpu", 1.0),))))
    row = host_row(host.record(), {})
    assert (row.gpus_free, row.gpus_total) == (1, 2)
    assert row.custom == {"node_a": (1.0, 1.0), "tpu": (1.0, 2.0)}
    line = host_lines([json.loads(row.model_dump_json())]).splitlines()[1]
    assert " 1/2 " in line and "node_a 1/1 tpu 1/2" in line, line


def test_user_add_os_user_and_list_through_the_gateway(gateway, capsys) -> None:
    admin = ["--credentials", str(gateway.admin_path), "--json"]
    assert main(["user", "add", "ann", "--os-user", "ann_unix", *admin]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["os_user"] == "ann_unix" and added["credentials"].endswith("/auth/users/ann.credentials")
    assert main(["user", "list", *admin]) == 0
    users = {u["name"]: u["os_user"] for u in json.loads(capsys.readouterr().out)["users"]}
    assert users["ann"] == "ann_unix" and users[ADMIN] == ADMIN
    assert main(["user", "remove", "ann", *admin]) == 0 and json.loads(capsys.readouterr().out) == {"removed": "ann"}
