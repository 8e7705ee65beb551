"""Every name used is defined and every import used, across the package, the
tests, the benchmarks and the examples (ruff's pyflakes rules, ``F``).  The
arch and type tests check structure and the cores' types; this one catches
what a merge most often breaks in the shells they do not type-check: a name
whose import went away with the code around it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_no_undefined_or_unused_names() -> None:
    """ruff's pyflakes rules (``F``) find nothing in legionrm, tests, benchmarks
    and examples: no undefined name, no unused import or variable."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    run = subprocess.run([ruff, "check", "--no-cache", "--select", "F", "--output-format", "concise",
                          "legionrm", "tests", "benchmarks", "examples"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, "pyflakes findings:\n" + run.stdout + run.stderr
