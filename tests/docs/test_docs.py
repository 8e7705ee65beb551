"""The documents name only what exists, and their runnable examples run.

Checked in ``README.md`` and every ``docs/*.md``:

* **Paths.**  A repository path is any run of ``[A-Za-z0-9_./*-]`` starting
  with one of the top directories (``legionrm/``, ``tests/``, ``benchmarks/``,
  ``examples/``, ``docs/``, ``.ci/``) that is not itself the tail of a longer
  word or path (``data/examples/x`` inside ``legionrm/data/examples/x`` is not
  a second mention), in prose, code spans and code blocks alike.  It must
  exist; one with a ``*`` must match at least one file; one with a line
  suffix (``legionrm/mil/values.py:318`` or ``...:318-330``) must have that
  many lines.  Trailing dots and commas end a sentence, not a path.
* **Links.**  The target of every relative Markdown link ``[text](target)``
  exists, relative to the document (``#anchors`` are not checked).
* (The README's package tree, whose entries are bare names, is checked
  against the package by ``tests/arch/test_readme_tree.py``.)
* **Runnable blocks.**  A fenced block whose info string is
  ``python runnable`` is run, on its own, in a fresh namespace, with the
  working directory a tmp path.  Mark a Python example runnable when it
  needs nothing but the package (no Ray, no running system, no names it does
  not define); leave signatures-only sketches and Ray examples plain
  ``python``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOPS = ("legionrm", "tests", "benchmarks", "examples", "docs", ".ci")

PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in TOPS) + r")/[\w./*-]*)(?::(\d+)(?:-(\d+))?)?")
LINK = re.compile(r"\]\(([^()\s]+)\)")
FENCE = re.compile(r"^(```+)(.*)$")


@dataclass(frozen=True)
class Block:
    info: str
    line: int  # of the first line inside the fence
    text: str


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text."""
    out: list[Block] = []
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        m = FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith(m[1])), len(lines))
        out.append(Block(m[2].strip(), k + 2, "\n".join(lines[k + 1:end]) + "\n"))
        k = end + 1
    return out


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def missing(doc: Path, root: Path = ROOT) -> list[str]:
    """Every path and link target in ``doc`` that does not exist, as ``doc:line: what``."""
    text = doc.read_text(encoding="utf-8")
    rel = doc.relative_to(root)
    out: list[str] = []
    for m in PATH.finditer(text):
        path = m[1].rstrip(".,")
        where = f"{rel}:{_line_of(text, m.start())}"
        hits = sorted(root.glob(path)) if "*" in path else [root / path] if (root / path).exists() else []
        if not hits:
            out.append(f"{where}: {path} does not exist")
        elif m[2] is not None:
            last = int(m[3] or m[2])
            lines = len(hits[0].read_text(encoding="utf-8").splitlines()) if hits[0].is_file() else 0
            if not 1 <= int(m[2]) <= last <= lines:
                out.append(f"{where}: {m[0]} is past the end of {path} ({lines} lines)")
    for m in LINK.finditer(text):
        target = m[1].split("#", 1)[0]
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):  # an anchor, or http:, mailto: ...
            continue
        if not (doc.parent / target).exists():
            out.append(f"{rel}:{_line_of(text, m.start())}: link to {target} goes nowhere")
    return list(dict.fromkeys(out))  # a link's text and target often name the same path


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_path_a_document_names_exists(doc: Path) -> None:
    assert missing(doc) == []


RUNNABLE = [(doc, b) for doc in DOCS for b in blocks(doc.read_text(encoding="utf-8")) if b.info == "python runnable"]


@pytest.mark.parametrize("doc, block", RUNNABLE, ids=[f"{d.relative_to(ROOT)}:{b.line}" for d, b in RUNNABLE])
def test_runnable_blocks_run(doc: Path, block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = compile("\n" * (block.line - 1) + block.text, str(doc), "exec")  # tracebacks name the doc's lines
    exec(code, {"__name__": "__doc_example__"})  # noqa: S102 -- the documents' own examples


def test_some_blocks_are_runnable() -> None:
    assert len(RUNNABLE) >= 3, "the convention is in use (a typo in the info string would run nothing)"


# --- the rules bite, on made-up documents -----------------------------------------------

MADE_UP = [
    ("a real path", "see `legionrm/mil/values.py`.", []),
    ("a missing path", "see legionrm/nope.py, then", ["d.md:1: legionrm/nope.py does not exist"]),
    ("a path:line inside", "legionrm/mil/values.py:1", []),
    ("a path:line past the end", "legionrm/mil/values.py:100000",
     ["d.md:1: legionrm/mil/values.py:100000 is past the end of legionrm/mil/values.py"]),
    ("a glob that matches", "benchmarks/bench_*.py", []),
    ("a glob that matches nothing", "benchmarks/nope_*.py", ["d.md:1: benchmarks/nope_*.py does not exist"]),
    ("the tail of a longer path", "legionrm/data/examples/requests", []),
    ("a link", "[x](legionrm/mil/)", []),
    ("a link to nowhere", "text\n[x](nope.md#part)", ["d.md:2: link to nope.md goes nowhere"]),
    ("a web link", "[x](https://example.org/a)", []),
]


@pytest.mark.parametrize("text, want", [m[1:] for m in MADE_UP], ids=[m[0] for m in MADE_UP])
def test_rule_bites(tmp_path: Path, text: str, want: list[str]) -> None:
    for top in TOPS:
        if (ROOT / top).exists():
            (tmp_path / top).symlink_to(ROOT / top)
    (tmp_path / "d.md").write_text(text)
    got = missing(tmp_path / "d.md", root=tmp_path)
    assert [g.split(" (")[0] if "past the end" in g else g for g in got] == want
