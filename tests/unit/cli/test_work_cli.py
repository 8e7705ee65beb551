"""``wait`` / ``submit --wait`` exit statuses, ``history``'s times and states,
and the exit code in ``list`` / ``show --json``."""

from __future__ import annotations

import argparse
import json
import time
from typing import get_args

import pytest

from legionrm.cli import END_STATES, when
from legionrm.cli.front import exit_status, request_json, request_rows
from legionrm.models import InstanceInfo, RequestInfo, WorkEnd, WorkResult
from legionrm.models.api import LogsResult


def info(state: str, code: int | None) -> dict:
    """A request as the gateway sends it: a ``RequestInfo`` document."""
    return typed(state, code).model_dump(mode="json")


def typed(state: str, code: int | None) -> RequestInfo:
    result = None if code is None else WorkResult(instance_id="h~i1", state="completed" if code == 0 else "failed",
                                                  exit_code=code, started_at=1.0, ended_at=2.0)
    return RequestInfo(id="r1", user="alice", state=state, exit_code=code,
                       instances=(InstanceInfo(id="h~i1", host="h", state="ended", result=result),))


@pytest.mark.parametrize("state, code, status", [
    ("completed", 0, 0), ("failed", 3, 3), ("failed", 137, 137), ("failed", 300, 255),
    ("completed", None, 0), ("failed", None, 1), ("cancelled", None, 1),
], ids=["ok", "exit-3", "killed", "clamped", "no-run-ok", "no-run-failed", "cancelled"])
def test_wait_exits_with_the_works_exit_code(state: str, code: int | None, status: int) -> None:
    assert exit_status(info(state, code)) == status


def test_list_and_show_carry_the_exit_code() -> None:
    got = request_json(info("failed", 3))
    assert got["exit_code"] == 3 and got["instances"][0]["exit_code"] == 3
    assert json.loads(typed("failed", 3).model_dump_json(indent=2))["exit_code"] == 3  # show --json
    text = request_rows([info("failed", 3)], time.time())
    assert text.splitlines()[0].split()[:3] == ["id", "state", "exit"] and text.splitlines()[1].split()[:3] == [
        "r1", "failed", "3"]


@pytest.mark.parametrize("text, ago", [("90s", 90), ("2h", 7200), ("1.5d", 1.5 * 86400)], ids=["s", "h", "d"])
def test_an_age_is_that_long_ago(text: str, ago: float) -> None:
    assert abs(time.time() - ago - when(text)) < 60


def test_epoch_and_iso_times_are_read_and_a_bad_one_says_what_is_accepted() -> None:
    assert when("1700000000") == 1700000000.0
    assert when("2026-01-31T09:00") == when("2026-01-31 09:00")
    with pytest.raises(argparse.ArgumentTypeError, match="ISO date"):
        when("yesterday")


def test_history_offers_every_end_state() -> None:
    assert END_STATES == get_args(WorkEnd)


class FakeLogs:
    """Output that grows by one line a call; the request ends on the third."""

    def __init__(self) -> None:
        self.calls: list[object] = []

    def logs(self, request_id: str, instance: object = None) -> dict:
        """As the gateway answers (the CLI's Wire returns the JSON, checked here against the model)."""
        self.calls.append(instance)
        n = len(self.calls)
        return LogsResult(id=request_id, stdout="".join(f"out{i}\n" for i in range(n)),
                          stderr="".join(f"err{i}\n" for i in range(1, n + 1))).model_dump(mode="json")

    def show(self, request_id: str) -> dict:
        state = "completed" if len(self.calls) >= 3 else "running"
        return RequestInfo(id=request_id, user="alice", state=state).model_dump(mode="json")


@pytest.mark.parametrize("argv, out, err, instances", [
    (["logs", "r1"], "out0\n", "err1\n", [None]),
    (["logs", "r1", "--stderr", "--instance", "2"], "err1\n", "", [2]),
    (["logs", "r1", "--follow", "--instance", "h~i1"], "out0\nout1\nout2\n", "err1\nerr2\nerr3\n", ["h~i1"] * 3),
], ids=["once", "stderr-of-instance-2", "follow-until-it-ends"])
def test_logs_prints_each_stream_once_and_follows_until_the_end(monkeypatch, capsys, argv, out, err, instances) -> None:
    from legionrm.cli import main
    from legionrm.cli.front import requests as front

    fake = FakeLogs()
    monkeypatch.setattr(front, "client", lambda args: fake)
    monkeypatch.setattr(front.time, "sleep", lambda s: None)
    assert main(argv) == 0
    got = capsys.readouterr()
    assert (got.out, got.err, fake.calls) == (out, err, instances)


class FakeStages(FakeLogs):
    """A request of three instances: two ran work, the middle one runs none."""

    def logs(self, request_id: str, instance: object = None) -> dict:
        from legionrm.client.errors import GatewayError

        self.calls.append(instance)
        if instance == "h~i2":
            raise GatewayError("SchedulingError", "h~i2 (Worker) runs no command: it has no output to show")
        return LogsResult(id=request_id, stdout=f"out of {instance}\n", stderr=f"err of {instance}\n").model_dump(mode="json")

    def show(self, request_id: str) -> dict:
        return RequestInfo(id=request_id, user="alice", state="failed", instances=tuple(
            InstanceInfo(id=f"h~i{k}", host="h", state="ended") for k in (1, 2, 3))).model_dump(mode="json")


def test_logs_of_several_instances_prints_each_under_its_name(monkeypatch, capsys) -> None:
    from legionrm.cli import main
    from legionrm.cli.front import requests as front

    fake = FakeStages()
    monkeypatch.setattr(front, "client", lambda args: fake)
    assert main(["logs", "r1"]) == 0
    got = capsys.readouterr()
    assert got.out == ("==> r1 instance 0: h~i1 <==\nout of h~i1\n\n==> r1 instance 1: h~i2 <==\n"
                       "(SchedulingError: h~i2 (Worker) runs no command: it has no output to show)\n\n"
                       "==> r1 instance 2: h~i3 <==\nout of h~i3\n")
    assert got.err == "err of h~i1\nerr of h~i3\n" and fake.calls == ["h~i1", "h~i2", "h~i3"]
