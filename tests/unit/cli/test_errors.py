"""Every failure becomes one clean line (or a JSON object) and exit 2: the
one function that unwraps Ray's errors, table-driven.  Ray's classes are
recognised by name, so stand-ins with the same names are enough here (the
real ones are checked in tests/ray/test_cli_ray.py)."""

from __future__ import annotations

import json

import pytest

from legionrm.cli import main
from legionrm.cli.errors import describe, unwrap
from legionrm.errors import (
    ConfigError,
    MILSyntaxError,
    SchedulingError,
    UnknownResourceError,
)


class RayError(Exception):
    pass


class RayTaskError(RayError):
    def __init__(self, cause: BaseException) -> None:
        super().__init__("\x1b[36mray::CollectionActor.query()\x1b[39m (pid=1)\n  File ...\nTraceback")
        self.cause = cause


class RayActorError(RayError):
    pass


class ActorDiedError(RayActorError):
    pass


class GetTimeoutError(RayError, TimeoutError):
    pass


def mil_error() -> MILSyntaxError:
    return MILSyntaxError("query ends too early", text="$cpus >=", line=1, column=9)


CASES = [
    ("a LegionError", SchedulingError("request id 'w' was already scheduled"), "SchedulingError",
     "request id 'w' was already scheduled"),
    ("a LegionError an actor raised", RayTaskError(SchedulingError("already scheduled")), "SchedulingError",
     "already scheduled"),
    ("nested task errors", RayTaskError(RayTaskError(UnknownResourceError("no resource named 'x'"))),
     "UnknownResourceError", "no resource named 'x'"),
    ("a MIL error from the live Collection keeps its caret", RayTaskError(mil_error()), "MILSyntaxError",
     "line 1, column 9: query ends too early\n$cpus >=\n        ^"),
    ("a dead actor", ActorDiedError("The actor died unexpectedly before finishing this task.\n\tclass_name: X"),
     "actor_died", "a legionrm actor died: The actor died unexpectedly before finishing this task."),
    ("a timeout", GetTimeoutError("Get timed out: some object(s) not ready."), "timeout",
     "the running system did not answer in time: Get timed out: some object(s) not ready."),
    ("a bug in an actor", RayTaskError(ZeroDivisionError("division by zero")), "internal",
     "ZeroDivisionError in the running system: division by zero"),
    ("no Ray there", ConnectionError("\x1b[31mno cluster\x1b[0m"), "not_running", "cannot reach the system: no cluster"),
]


@pytest.mark.parametrize("why,exc,code,message", CASES, ids=[c[0] for c in CASES])
def test_describe(why: str, exc: BaseException, code: str, message: str) -> None:
    f = describe(exc)
    assert f is not None
    assert (f.code, f.message) == (code, message)
    assert "\x1b" not in f.line("x") and "Traceback" not in f.message
    assert json.loads(f.json("submit")) == {"error": {"command": "submit", "code": code, "message": message}}


def test_a_plain_bug_is_not_hidden() -> None:
    assert describe(ValueError("bug")) is None
    assert unwrap(ValueError("bug")).args == ("bug",)


def test_json_errors_on_stdout(tmp_path, capsys) -> None:
    assert main(["place", str(tmp_path / "nope.toml"), "--json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["error"]["command"] == "place" and "no such file" in doc["error"]["message"] and err == ""


def test_plain_errors_one_line_on_stderr(tmp_path, capsys) -> None:
    assert main(["pools", str(tmp_path / "nope.toml")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("legionrm pools: ") and err.count("\n") == 1


def test_config_error_code() -> None:
    assert describe(ConfigError("bad")).code == "ConfigError"
