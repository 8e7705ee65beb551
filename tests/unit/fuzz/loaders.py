"""Each file command's whole offline path, from a file on disk: load, check,
and run what the command runs (a few cycles, one placement cycle, one
admission cycle), returning what it computed.  Used by the fuzz tests and the
table of known bad files.  Files are written under the directory
:func:`use_dir` names (``conftest.py`` gives it one under pytest's tmp path)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from legionrm.cli.pools import is_cluster_file, run_cluster
from legionrm.config import load_cluster
from legionrm.request_file import load_request
from legionrm.scheduler import fairshare, placement
from legionrm.scheduler.pools import run_file

_dir: list[Path] = []  # the one directory files are written to, once use_dir has named it


def use_dir(path: Path) -> None:
    """Write every later file under ``path``."""
    _dir[:] = [path]


def write(text: str, name: str = "f.toml") -> str:
    if not _dir:
        raise RuntimeError("no directory for fuzz files: call loaders.use_dir first (conftest.py does)")
    p = _dir[0] / name
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(p)


def simulate(path: str) -> list[fairshare.CycleResult]:
    return fairshare.run(fairshare.load_scenario(path), 3)


def place(path: str) -> dict[str, placement.PlacementResult]:
    return placement.run_scenario(placement.load_scenario(path))[1]


def pools(path: str) -> dict[str, object]:
    return run_cluster(path) if is_cluster_file(path) else run_file(path)


LOADERS: dict[str, Callable[[str], object]] = {
    "cluster": load_cluster,
    "request": load_request,
    "simulate": simulate,
    "place": place,
    "pools": pools,
}
