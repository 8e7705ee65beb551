"""``legionrm examples DIR``: copy the bundled examples out of the package.

The examples (a user program, an owner policy, a request file, a MIL
session, the scenarios of simulate/place/pools) ship inside the wheel as
package data under ``legionrm/data/examples`` (in a checkout, a link to
``examples/``), so ``legionrm submit examples/requests/workers.toml`` works
for a pip user too after ``legionrm examples .``."""

from __future__ import annotations

import argparse
import json
import shutil
from importlib.resources import as_file, files
from pathlib import Path

from legionrm.cli.output import counted


def copy_examples(dest: str | Path) -> tuple[list[str], list[str]]:
    """Copy every example file into ``dest/examples``; (copied, kept) relative paths.
    An existing file is kept, never overwritten."""
    copied: list[str] = []
    kept: list[str] = []
    target = Path(dest) / "examples"
    with as_file(files("legionrm") / "data" / "examples") as src:
        for f in sorted(Path(src).rglob("*")):
            if not f.is_file() or "__pycache__" in f.parts:
                continue
            rel = f.relative_to(src)
            out = target / rel
            if out.exists():
                kept.append(str(Path("examples") / rel))
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, out)
            copied.append(str(Path("examples") / rel))
    return copied, kept


def cli_main(args: argparse.Namespace) -> int:
    copied, kept = copy_examples(args.dir)
    if args.json:
        print(json.dumps({"dir": str(Path(args.dir) / "examples"), "copied": copied, "kept": kept}, indent=2))
        return 0
    print(f"{counted(len(copied), 'example file')} copied to {Path(args.dir) / 'examples'}"
          + (f" ({len(kept)} already there, kept)" if kept else ""))
    print(f"try:  cd {args.dir} && legionrm simulate examples/scenarios/ducc_s10_doubling.toml --summary")
    return 0
