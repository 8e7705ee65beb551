"""The README's map of the package (its ``legionrm/`` tree) is the real tree:
every name it draws exists where it is drawn, and it draws every package and
module directly under ``legionrm/`` and every sub-package one level below."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "legionrm"

ENTRY = re.compile(r"^( {2}| {4})([A-Za-z_][\w.]*(?:/|\.py))\s")


def drawn() -> set[str]:
    """The paths the README's tree names, relative to ``legionrm/`` (``scheduler/ahead``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("```\nlegionrm/\n") + 4:]
    block = block[:block.index("```")]
    out: set[str] = set()
    parent = ""
    for line in block.splitlines()[1:]:
        if not line.startswith(" "):
            break  # the tree of the package ends where the next top-level name (tests/) begins
        if not (m := ENTRY.match(line)):
            continue
        name = m.group(2).rstrip("/")
        if len(m.group(1)) == 2:
            parent = name
            out.add(name)
        else:
            out.add(f"{parent}/{name}")
    return out


def real() -> set[str]:
    """The entries directly under ``legionrm/`` (``__init__.py`` and ``py.typed``
    aside) and the sub-packages of its packages."""
    top = {p.name for p in PKG.iterdir()
           if p.name not in ("__init__.py", "py.typed", "__pycache__")
           and (p.suffix == ".py" or p.is_dir())}
    subs = {f"{p.parent.name}/{p.name}" for p in PKG.glob("*/*") if (p / "__init__.py").is_file()}
    return top | subs


def test_readme_tree_names_only_what_exists() -> None:
    """Every name in the README's tree is a file or folder at that place."""
    assert {d for d in drawn() if not (PKG / d).exists()} == set()


def test_readme_tree_names_every_top_entry_and_sub_package() -> None:
    """Every module and folder directly under ``legionrm/``, and every
    sub-package one level below, is in the README's tree."""
    assert real() - drawn() == set()
