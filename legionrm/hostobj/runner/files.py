"""A run's files: its stdout and stderr (capped, their tail kept), the result
it left, and the processes of its session (what a stop must leave none of).
Pure functions over paths and /proc; what ``legionrm logs`` reads."""

from __future__ import annotations

import os
from pathlib import Path

from legionrm.models import WorkResult

OUTPUT_CAP = 1 << 20
"""Bytes kept of each of stdout and stderr (the tail)."""
STREAMS = ("stdout", "stderr")


def session_members(sid: int) -> list[int]:
    """Pids of the live processes in session ``sid`` (from /proc)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(rest) > 3 and int(rest[3]) == sid and rest[0] != b"Z":
            out.append(int(entry.name))
    return out


def trim(path: Path, cap: int) -> None:
    """Keep the last ``cap // 2`` bytes of ``path`` once it passes ``cap``
    (the writer appends, so it goes on at the new end)."""
    try:
        size = path.stat().st_size
        if size <= cap:
            return
        with open(path, "r+b") as f:
            f.seek(size - cap // 2)
            tail = f.read()
            f.seek(0)
            f.write(tail)
            f.truncate(len(tail))
    except OSError:
        pass


def read_output(log_dir: str | os.PathLike[str], instance_id: str, stream: str = "stdout", offset: int = 0,
                limit: int = OUTPUT_CAP) -> tuple[bytes, int]:
    """Up to ``limit`` bytes of an instance's ``stream`` from ``offset``, and
    the offset to read on from.  An offset past the end (the file was trimmed
    meanwhile) reads from the start again.  No output (yet): ``(b"", 0)``."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {', '.join(STREAMS)}, not {stream!r}")
    if "/" in instance_id or instance_id in ("", ".", ".."):
        raise ValueError(f"instance id {instance_id!r} cannot name a directory")
    try:
        with open(Path(log_dir) / instance_id / stream, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = offset if 0 <= offset <= size else 0
            f.seek(start)
            data = f.read(max(0, limit))
    except FileNotFoundError:
        return b"", 0
    return data, start + len(data)


def kept_result(log_dir: str | os.PathLike[str], instance_id: str) -> WorkResult | None:
    """The result a run left in its output directory (None: none, or unreadable)."""
    try:
        return WorkResult.model_validate_json((Path(log_dir) / instance_id / "result.json").read_text())
    except (OSError, ValueError):
        return None
