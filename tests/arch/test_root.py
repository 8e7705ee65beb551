"""The repository's root holds only what a project's root holds: the packaging
and the four documents a reader looks for first, the CI script, and the
project's top directories.  Anything else there -- a probe file from a
session, a file a test wrote to its working directory -- fails this test.
Build and tool output that ``.gitignore`` names (``.venv/``, caches) may lie
there too; the ignore list is checked by the same rule, so an entry added
there to hide a stray file is visible in review."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FILES = {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "Makefile", ".gitignore"}
DIRS = {".ci", "docs", "examples", "benchmarks", "legionrm", "tests"}
VCS = {".git"}  # a checkout's own (a worktree's .git is a file)


def ignored_patterns(root: Path) -> list[str]:
    """The name patterns of ``root``'s .gitignore (a trailing ``/``: directories only)."""
    path = root / ".gitignore"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def strays(root: Path) -> list[str]:
    """Names at ``root`` that are neither expected nor ignored build/tool output."""
    patterns = ignored_patterns(root)
    out = []
    for entry in sorted(root.iterdir()):
        name = entry.name
        if name in VCS or (name in DIRS and entry.is_dir()) or (name in FILES and entry.is_file()):
            continue
        if any(fnmatch.fnmatch(name, p.rstrip("/")) and (entry.is_dir() or not p.endswith("/")) for p in patterns):
            continue
        out.append(name + ("/" if entry.is_dir() else ""))
    return out


def test_the_root_holds_only_what_a_project_root_holds() -> None:
    assert strays(ROOT) == [], "move these out of the repository's root (or delete them)"
    assert {p.name for p in ROOT.iterdir()} >= FILES | DIRS, "a document or directory every root has is missing"


IGNORABLE = {".venv/", "__pycache__/", "*.egg-info/", "build/", ".hypothesis/", ".pytest_cache/", ".mypy_cache/",
             ".ruff_cache/", "*.sqlite", "*.sqlite-wal", "*.sqlite-shm"}


def test_gitignore_names_only_build_and_tool_output() -> None:
    assert set(ignored_patterns(ROOT)) <= IGNORABLE, "a new ignore pattern: is it hiding a stray file?"


@pytest.mark.parametrize("made, stray", [
    ("hugeint.toml", ["hugeint.toml"]),  # a probe file, as eleven once were
    ("scratch/", ["scratch/"]),
    ("notes.sqlite", []),  # ignored output: a database left by a local run
    ("build/", []),
    ("build", ["build"]),  # "build/" ignores a directory, not a file of that name
    ("README.md", []),
])
def test_rule_bites(tmp_path: Path, made: str, stray: list[str]) -> None:
    (tmp_path / ".gitignore").write_text("build/\n*.sqlite\n# a comment\n")
    for name in ("docs", "tests"):
        (tmp_path / name).mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    if made.endswith("/"):
        (tmp_path / made).mkdir()
    else:
        (tmp_path / made).write_text("")
    assert strays(tmp_path) == stray


def test_make_test_runs_every_test_folder_once() -> None:
    """``make test`` runs the suite in two parts (the cores' tests on both cores, then the Ray and fault
    tests in the one session cluster): every folder of tests/ is in exactly one of them, so a new folder
    is never left out, and nothing runs twice."""
    recipe, lines = False, []
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith("test:"):
            recipe = True
        elif recipe and line.startswith("\t"):
            lines.append(line)
        elif recipe:
            break
    named = [word for line in lines for word in line.split() if word.startswith("tests/")]
    folders = sorted(p.name for p in (ROOT / "tests").iterdir()
                     if p.is_dir() and any(p.rglob("test_*.py")))
    assert sorted(w.removeprefix("tests/").rstrip("/") for w in named) == folders, lines
    assert all("pytest" in line for line in lines) and len(lines) == 2
