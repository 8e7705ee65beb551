"""One output style for every command: plain rich tables (no box, a header
row, titles above) that fit the terminal and never cut a header; JSON with
units in field names.  Piped output is as wide as the table needs."""

from __future__ import annotations

import io
import os
import shutil
import sys
from typing import Any, Iterable, TextIO

from rich.console import Console
from rich.table import Table

NUMERIC = "right"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in the number it takes: ``counted(1, "vault")`` is "1 vault",
    ``counted(2, "class")`` "2 classes", ``counted(0, "host")`` "0 hosts"."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {plural or noun + ('es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's')}"


def table(title: str | None, columns: Iterable[str], *, right: Iterable[str] = ()) -> Table:
    """A table in the house style: a header row, two spaces between columns,
    each column at least as wide as its header (so a header is never cut)."""
    right = set(right)
    t = Table(title=title, title_justify="left", box=None, show_edge=False, pad_edge=False,
              title_style="bold", header_style="bold")
    for c in columns:
        t.add_column(c, justify="right" if c in right else "left", min_width=len(c), overflow="fold")
    return t


def width(file: TextIO | None = None) -> int | None:
    """The terminal's width when ``file`` is one (COLUMNS wins), else None (as wide as needed)."""
    if "COLUMNS" in os.environ:
        try:
            return max(40, int(os.environ["COLUMNS"]))
        except ValueError:
            pass
    f = file or sys.stdout
    try:
        if f.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError):
        pass
    return None


def natural_width(t: Table) -> int:
    """The width ``t`` needs to show every cell unfolded."""
    return int(Console(file=io.StringIO(), width=10_000, color_system=None).measure(t).maximum)


def render(obj: Any, cols: int | None = None) -> str:
    """``obj`` (a table, or text) as plain text, ``cols`` wide (default: the terminal; piped: what it needs)."""
    if isinstance(obj, str):
        return obj
    cols = cols or width()
    if cols is None:
        cols = max(40, natural_width(obj)) if isinstance(obj, Table) else 10_000
    buf = io.StringIO()
    Console(file=buf, width=cols, force_terminal=False, color_system=None, highlight=False).print(obj)
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip("\n").splitlines())


def show(*objs: Any) -> None:
    """Print tables and text to stdout, one after another."""
    for o in objs:
        print(render(o))
