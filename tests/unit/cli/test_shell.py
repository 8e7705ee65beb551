"""The operator's shell (``legionrm shell``) and ``legionrm query --cluster``,
driven without a terminal through ShellSession and cli.main."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from legionrm.cli import main
from legionrm.cli.shell import LocalBackend, ShellSession
from legionrm.config import default_cluster_path, load_cluster


@pytest.fixture(scope="module")
def backend() -> LocalBackend:
    return LocalBackend(load_cluster())


@pytest.fixture
def session(backend: LocalBackend) -> ShellSession:
    return ShellSession(backend)


# (id, text before the cursor, the word being completed, some completions, none of these)
COMPLETIONS = [
    ("attr-at-start", "$cp", "$cp", ["$cpus"], ["$arch"]),
    ("attr-after-paren", "max($cp", "$cp", ["$cpus"], []),  # was nothing: the word was "max($cp"
    ("attr-after-operator", "$gpus>$cp", "$cp", ["$cpus"], []),
    ("attr-after-not-paren", "not($ar", "$ar", ["$arch"], []),
    ("bare-dollar", "$cpus > 4 and $", "$", ["$cpus", "$arch", "$gpus"], ["and"]),
    ("keyword", "$a an", "an", ["and"], ["$arch"]),
    ("function", "$a > ma", "ma", ["match(", "max("], ["min("]),
    ("function-after-paren", "(mi", "mi", ["min("], []),
    ("command", "\\ex", "\\ex", ["\\explain"], []),
    ("command-only-at-start", "$a > 1 \\ex", "\\ex", [], ["\\explain"]),
    ("attr-in-explain", "\\explain gpu1 $gp", "$gp", ["$gpus"], []),
    ("nothing-after-space", "$a > ", "", [], ["and"]),
]


@pytest.mark.parametrize(
    "before,word,some,none", [c[1:] for c in COMPLETIONS], ids=[c[0] for c in COMPLETIONS]
)
def test_completion_of_the_word_at_the_cursor(
    session: ShellSession, before: str, word: str, some: list[str], none: list[str]
) -> None:
    got_word, words = session.complete(before)
    assert got_word == word
    assert set(some) <= set(words), words
    assert not set(none) & set(words), words


def test_completion_sees_attributes_exported_since(backend: LocalBackend) -> None:
    s = ShellSession(LocalBackend(load_cluster()))
    assert s.complete("$fresh")[1] == []
    s.backend.collection.update("batch1", {"fresh_attr": 1})  # type: ignore[attr-defined]
    s.handle("true")  # any line typed refreshes what completion knows
    assert s.complete("$fresh")[1] == ["$fresh_attr"]


# (id, line, text the answer must contain)
LINES = [
    ("query", '$cpus >= 32 and $arch == "x86_64"', "bigmem1"),
    ("bad-query-caret", "$cpus >= ", "line 1, column 9: query ends too early"),
    ("bad-query-caret-line", "$a AND $b", "\n   ^"),
    ("type-error", '"a" + 1 > 0', "'+' cannot take a string"),
    ("attrs", "\\attrs", "cpus\n"),
    ("explain-match", "\\explain gpu1 $gpus > 0 and $cpus > 8", "gpu1: MATCHES"),
    ("explain-clauses", "\\explain gpu1 $gpus > 0 and not $busy", "  no   not $busy  =>  undefined"),
    ("explain-no-match", "\\explain batch1 $gpus > 0", "batch1: does not match"),
    ("explain-unknown", "\\explain nope true", "error: no resource named 'nope'"),
    ("explain-bad-query", "\\explain gpu1 $x +", "query ends too early"),
    ("explain-usage", "\\explain gpu1", "usage"),
    ("unknown-command", "\\nope", "unknown command"),
]


@pytest.mark.parametrize("line,text", [c[1:] for c in LINES], ids=[c[0] for c in LINES])
def test_shell_lines(session: ShellSession, line: str, text: str) -> None:
    assert text in session.handle(line)


def test_as_a_caller_filters_and_explain_says_why(session: ShellSession) -> None:
    everyone = session.handle("$gpus > 0")
    assert "gpu1" in everyone
    assert session.handle("\\as visitor").startswith("querying as user visitor")
    assert "gpu1" not in session.handle("$gpus > 0")
    assert "does not accept user 'visitor'" in session.handle("\\explain gpu1 $gpus > 0")
    session.handle("\\as")
    assert "gpu1" in session.handle("$gpus > 0")


def test_query_command_offline(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = str(default_cluster_path())
    assert main(["query", "$cpus >= 32", "--cluster", cluster, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in out] == ["bigmem1", "bigmem2"]
    assert all("attributes" in r and not any(k.startswith("@") for k in r["attributes"]) for r in out)
    assert main(["query", "$cpus >= ", "--cluster", cluster]) == 2
    err = capsys.readouterr().err
    assert "line 1, column 9: query ends too early" in err and "\n$cpus >= \n        ^" in err


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_query_into_a_closed_pipe_is_quiet(unbuffered: bool) -> None:
    """`legionrm query ... | head -0`: the reader goes away; nothing on stderr,
    status 141 -- whether the output is still buffered at exit (the default)
    or written at once (PYTHONUNBUFFERED, which the environment may set)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "legionrm.cli", "query", "true", "--cluster", str(default_cluster_path())],
            stdout=w, stderr=subprocess.PIPE, timeout=60, env=env,
        )
    finally:
        os.close(w)
    assert (proc.returncode, proc.stderr.decode()) == (141, "")
