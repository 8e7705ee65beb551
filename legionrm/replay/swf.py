"""The Standard Workload Format (the Parallel Workloads Archive's traces).

One job per line, 18 whitespace-separated fields, ``-1`` for a missing one;
lines starting with ``;`` are comments (the header).  The fields read here:
1 job number, 2 submit time, 4 run time, 5 allocated processors, 8
requested processors, 9 requested time, 12 user id, 13 group id.  A job's
processors are its requested ones, else its allocated ones; a missing
requested time is its run time; a missing user is one user (``0``).  Jobs
without processors or without a run time are skipped (the archive's
cancelled-before-start jobs), and counted.  Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from legionrm.errors import ConfigError

FIELDS = 18


@dataclass(frozen=True)
class Job:
    """One job of a trace (times in seconds from the trace's start)."""

    number: int
    submit: float
    run: float
    procs: int
    requested: float
    user: str
    group: str


@dataclass(frozen=True)
class Trace:
    jobs: tuple[Job, ...]
    skipped: int = 0


def parse(lines: Iterable[str], *, file: str = "<trace>", limit: int | None = None) -> Trace:
    """The jobs of an SWF text, in submit order (at most ``limit``).
    Raises ConfigError naming the file and line of a malformed job."""
    jobs: list[Job] = []
    skipped = 0
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith(";"):
            continue
        if limit is not None and len(jobs) >= limit:
            break
        parts = text.split()
        if len(parts) < 13:
            raise ConfigError(f"line {n}: a job has {FIELDS} fields, this line {len(parts)}", file=file)
        try:
            v = [float(p) for p in parts[:13]]
        except ValueError:
            raise ConfigError(f"line {n}: fields must be numbers: {text[:80]!r}", file=file) from None
        number, submit, run, alloc, req_procs, req_time, user, group = (
            int(v[0]), v[1], v[3], v[4], v[7], v[8], v[11], v[12])
        procs = int(req_procs if req_procs > 0 else alloc)
        if procs <= 0 or run < 0 or submit < 0:
            skipped += 1
            continue
        jobs.append(Job(number, submit, run, procs, req_time if req_time > 0 else run,
                        str(int(user)) if user >= 0 else "0", str(int(group)) if group >= 0 else "0"))
    jobs.sort(key=lambda j: (j.submit, j.number))
    return Trace(tuple(jobs), skipped)


def read(path: str | Path, limit: int | None = None) -> Trace:
    """The trace in the file at ``path`` (ConfigError when unreadable or malformed)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse(f, file=str(path), limit=limit)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(path)) from None


def write(jobs: Iterable[Job], path: str | Path, header: str = "") -> None:
    """An SWF file of ``jobs`` (the fields not kept are -1)."""
    lines = [f"; {h}" for h in header.splitlines()]
    for j in jobs:
        f = [-1] * FIELDS
        f[0], f[1], f[3], f[4], f[7], f[8], f[11], f[12] = (
            j.number, round(j.submit), round(j.run), j.procs, j.procs, round(j.requested), j.user, j.group)
        lines.append(" ".join(str(x) for x in f))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
