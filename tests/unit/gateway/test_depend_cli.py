"""Issue 26 item 5 through the gateway and the CLI: ``submit --after-ok/--after-any/--after-not-ok
ID``, ``--array SPEC``, ``--begin-at T``, ``--requeue``; an array is one line in ``list`` and one
summary in ``show``; ``cancel`` of one task or the whole array; a bad spec is refused in one line
naming the field; a user holds and releases their own requests, not another's; the Python Client
types the new fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from legionrm import codes

from .test_queue_cli import cli, request, site  # noqa: F401  (site: the fixture)


def show(gw: Any, user: str, rid: str, capsys: Any) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(gw, user, "show", rid, "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_an_array_through_the_cli_is_one_line_and_cancels_by_task_or_whole(site, tmp_path, capsys) -> None:  # noqa: F811 (site: the imported fixture)
    gw, _ = site
    one = request(tmp_path, "one")
    Path(one).write_text('[[object]]\nclass_name = "W"\ncpus = 1\nwalltime_s = 50\n')
    assert cli(gw, "ann", "submit", one, "--id", "arr", "--array", "0-4%2") == 0
    assert capsys.readouterr().out.startswith("arr: array arr: 5 tasks arr_0 .. arr_4, at most 2 at once; 2 started")
    assert cli(gw, "ann", "list") == 0
    rows = [r for r in capsys.readouterr().out.splitlines()[1:] if r.strip()]
    assert len(rows) == 1 and rows[0].startswith("arr ") and "2 pending" not in rows[0] and "3 pending" in rows[0]
    info = show(gw, "ann", "arr", capsys)
    assert (info["array"], info["array_counts"]) == ("0-4%2", {"pending": 3, "running": 2})
    assert show(gw, "ann", "arr_4", capsys)["array_index"] == 4
    assert cli(gw, "ann", "cancel", "arr_4") == 0
    assert show(gw, "ann", "arr", capsys)["array_counts"] == {"cancelled": 1, "pending": 2, "running": 2}
    assert cli(gw, "ann", "cancel", "arr") == 0
    assert show(gw, "ann", "arr", capsys)["array_counts"] == {"cancelled": 5}
    capsys.readouterr()
    assert cli(gw, "ann", "show", "arr") == 0
    assert "array 0-4%2: tasks arr_INDEX: 5 cancelled" in capsys.readouterr().out


@pytest.mark.parametrize("flags, field", [
    (("--array", "0-"), "array"), (("--array", "5-2"), "array"), (("--array", "%0"), "array"),
    (("--begin-at", "soon"), "begin_at"),
], ids=["array-open", "array-backwards", "array-limit-0", "begin_at-words"])
def test_a_bad_value_is_refused_in_one_line_naming_the_field(site, tmp_path, capsys, flags, field) -> None:  # noqa: F811 (site: the imported fixture)
    gw, _ = site
    capsys.readouterr()
    assert cli(gw, "ann", "submit", request(tmp_path, "bad"), "--id", "bad", *flags) != 0
    captured = capsys.readouterr()
    said = (captured.out + captured.err).strip()
    assert f"{field}:" in said and "\n" not in said and "Traceback" not in said


def test_dependencies_begin_at_and_requeue_from_the_cli(site, tmp_path, capsys) -> None:  # noqa: F811 (site: the imported fixture)
    gw, clock = site
    assert cli(gw, "ann", "submit", request(tmp_path, "a"), "--id", "a") == 0
    assert cli(gw, "ann", "submit", request(tmp_path, "b"), "--id", "b", "--after-ok", "a", "--requeue") == 0
    assert cli(gw, "ann", "submit", request(tmp_path, "c"), "--id", "c", "--after-not-ok", "a") == 0
    assert cli(gw, "ann", "submit", request(tmp_path, "d"), "--id", "d", "--after-any", "c",
               "--begin-at", str(clock() + 1000)) == 0
    b = show(gw, "ann", "b", capsys)
    assert (b["state"], b["after_ok"], b["requeue"]) == ("pending", ["a"], True)
    assert b["reason"].startswith(codes.DEPEND_WAITING)
    clock.advance(51)
    gw.system.tick()
    gw.system.tick()
    assert show(gw, "ann", "b", capsys)["state"] == "running"
    assert show(gw, "ann", "c", capsys)["reason"].startswith(codes.DEPEND_NEVER)
    d = show(gw, "ann", "d", capsys)
    assert d["state"] == "pending" and d["reason"].startswith(codes.DEPEND_BEGIN_AT)
    capsys.readouterr()
    assert cli(gw, "ann", "show", "d") == 0
    out = capsys.readouterr().out
    assert "after_any c" in out and "begin_at " in out


def test_a_user_holds_and_releases_their_own_not_anothers(site, tmp_path, capsys) -> None:  # noqa: F811 (site: the imported fixture)
    gw, _ = site
    assert cli(gw, "ann", "submit", request(tmp_path, "f"), "--id", "fill") == 0
    assert cli(gw, "ann", "submit", request(tmp_path, "x"), "--id", "x") == 0
    capsys.readouterr()
    assert cli(gw, "bob", "hold", "x") != 0
    said = capsys.readouterr()
    assert codes.AUTH_NOT_OWNER in said.out + said.err
    assert cli(gw, "ann", "hold", "x") == 0
    assert show(gw, "ann", "x", capsys)["hold"] == "user"
    assert cli(gw, "bob", "release", "x") != 0
    assert cli(gw, "ann", "release", "x") == 0
    assert show(gw, "ann", "x", capsys)["hold"] is None


def test_the_python_client_types_the_new_fields(site) -> None:  # noqa: F811 (site: the imported fixture)
    gw, _ = site
    c = gw.client("ann")
    r = c.submit({"object": [{"class_name": "W", "cpus": 1}], "array": "0-2%1", "requeue": True}, id="py")
    assert r.id == "py" and r.response.message.startswith("array py: 3 tasks")
    info = c.show("py")
    assert (info.array, info.array_counts, info.requeue) == ("0-2%1", {"pending": 2, "running": 1}, True)
    task = c.show("py_0")
    assert (task.array_index, task.state) == (0, "running")


def test_submit_qos_and_hold_flags_set_the_files_keys(site, tmp_path, capsys) -> None:  # noqa: F811 (site: the imported fixture)
    gw, _ = site
    assert cli(gw, "ann", "submit", request(tmp_path, "q"), "--id", "q", "--qos", "high", "--hold") == 0
    q = show(gw, "ann", "q", capsys)
    assert (q["state"], q["qos"], q["hold"]) == ("pending", "high", "user")
    assert q["reason"].startswith(codes.QUEUE_HELD)
    capsys.readouterr()
    assert cli(gw, "ann", "submit", request(tmp_path, "n"), "--id", "n", "--qos", "gold") != 0
    said = capsys.readouterr()
    assert codes.QOS_UNKNOWN in said.out + said.err and "Traceback" not in said.out + said.err
