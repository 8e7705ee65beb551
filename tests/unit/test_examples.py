"""The shipped examples keep working: the operator's query session and the request file."""

from __future__ import annotations

import io
from pathlib import Path

from legionrm.cli.shell import LocalBackend, ShellSession, run_lines
from legionrm.config import load_cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_query_session_script_runs_and_answers() -> None:
    out = io.StringIO()
    run_lines(ShellSession(LocalBackend(load_cluster())), (EXAMPLES / "query_session.mil").read_text().splitlines(), out)
    text = out.getvalue()
    assert "error" not in text
    assert "6 of 14 resources match" in text  # x86, >= 64 GB, no GPU
    visitor = text.split("querying as user visitor", 1)[1]
    assert visitor.lstrip().startswith("0 of 14 resources match")  # the GPU hosts deny the visitor
    assert "desk1: does not match" in text


def test_the_example_request_files_leave_request_id_out() -> None:
    """Each submit of an example gets a fresh id (a fixed one would conflict on the second submit)."""
    import tomllib

    files = sorted((EXAMPLES / "requests").glob("*.toml"))
    assert files
    for f in files:
        assert "request_id" not in tomllib.loads(f.read_text()), f.name
