"""mypy on the pure cores (:data:`CORE`): the MIL engine, the models, state, the
collection's core, the four engines, and objstate's store and hooks.  Settings
are pyproject.toml's ``[tool.mypy]``; the Ray shells, the CLI and the dashboard
are not held to it yet.  mypy's cache (``.mypy_cache`` at the checkout's root)
makes a warm run take a second or two; a cold one about ten."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CORE = (
    "legionrm/mil",
    "legionrm/models",
    "legionrm/state",
    "legionrm/collection/collection.py",
    "legionrm/collection/view.py",
    "legionrm/collection/table.py",
    "legionrm/collection/column.py",
    "legionrm/collection/snapshot.py",
    "legionrm/collection/attrvalues.py",
    "legionrm/scheduler/fairshare",
    "legionrm/scheduler/placement",
    "legionrm/scheduler/pools",
    "legionrm/scheduler/elastic",
    "legionrm/scheduler/priority",
    "legionrm/objstate/shelf.py",
    "legionrm/objstate/hooks.py",
)


def test_pyproject_names_the_same_set() -> None:
    """pyproject.toml's ``[tool.mypy] files`` is :data:`CORE`, in order: a bare
    ``mypy`` at the root checks what this test checks."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert tuple(conf["files"]) == CORE


def test_cores_type_check() -> None:
    """mypy reports no error and no note on any file of :data:`CORE`."""
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (pip install -e '.[test]')")
    stdout, stderr, status = api.run([
        "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(ROOT / ".mypy_cache"),
        *(str(ROOT / p) for p in CORE),
    ])
    problems = [line for line in stdout.splitlines() if ": error:" in line or ": note:" in line]
    assert status == 0 and not problems, "mypy on the cores:\n" + stdout + stderr
