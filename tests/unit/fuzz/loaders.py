"""Each file command's whole offline path, from a file on disk: load, check,
and run what the command runs (a few cycles, one placement cycle, one
admission cycle).  Used by the fuzz tests and the table of known bad files."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from legionrm.cli.pools import is_cluster_file, run_cluster
from legionrm.config import load_cluster
from legionrm.request_file import load_request
from legionrm.scheduler import fairshare, placement
from legionrm.scheduler.pools import run_file

_DIR = Path(tempfile.mkdtemp(prefix="legionrm-fuzz-"))


def write(text: str, name: str = "f.toml") -> str:
    p = _DIR / name
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(p)


def simulate(path: str) -> None:
    sc = fairshare.load_scenario(path)
    fairshare.run(sc, 3)


def place(path: str) -> None:
    placement.run_scenario(placement.load_scenario(path))


def pools(path: str) -> None:
    run_cluster(path) if is_cluster_file(path) else run_file(path)


LOADERS: dict[str, Callable[[str], object]] = {
    "cluster": load_cluster,
    "request": load_request,
    "simulate": simulate,
    "place": place,
    "pools": pools,
}
