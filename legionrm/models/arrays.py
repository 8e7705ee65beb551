"""Job arrays: the ``array`` spec of a request and the names of its tasks.

A spec is a comma-separated list of indices and ranges, optionally followed by
``%L``, the most tasks that may hold cpus at once::

    "0-99%10"      100 tasks, 0 to 99, at most 10 at once
    "1,3,10-20:2"  tasks 1, 3, 10, 12, ..., 20 (a range's step after ':'), no limit
    "7"            one task

Task ``I`` of request ``ID`` is the request ``ID_I`` (as Slurm names
``JOBID_INDEX``); its work sees ``LEGIONRM_ARRAY_INDEX=I``.  Pure: no Ray.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

MAX_ARRAY_TASKS = 10_000
"""The most tasks one array may have."""
MAX_ARRAY_INDEX = 1_000_000
"""The largest task index."""
ARRAY_ENV = "LEGIONRM_ARRAY_INDEX"
"""The environment variable each task's work sees: its index."""

_PART = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


class ArraySpec(NamedTuple):
    """A parsed ``array`` spec: its task indices (ascending, distinct) and its
    limit on tasks at once (None: no limit)."""

    indices: tuple[int, ...]
    limit: int | None


@lru_cache(maxsize=1024)  # read on every pass for every waiting task: parsed once per spec
def parse_array(spec: str) -> ArraySpec:
    """The indices and limit ``spec`` names; ValueError saying what is wrong (one line)."""
    text = spec.strip()
    body, pct, lim = text.partition("%")
    limit = None
    if pct:
        if not lim.isdigit() or int(lim) < 1:
            raise ValueError(f"{spec!r}: the limit after % must be a whole number of at least 1 (e.g. 0-99%10)")
        limit = int(lim)
    if not body:
        raise ValueError(f"{spec!r}: give the task indices before any % (e.g. 0-99%10)")
    seen: set[int] = set()
    for part in body.split(","):
        m = _PART.fullmatch(part.strip())
        if m is None:
            raise ValueError(f"{spec!r}: {part.strip()!r} is not an index, a range A-B, or A-B:STEP (e.g. 0-99%10)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        step = int(m.group(3)) if m.group(3) is not None else 1
        if hi < lo:
            raise ValueError(f"{spec!r}: range {part.strip()!r} ends before it starts")
        if step < 1:
            raise ValueError(f"{spec!r}: the step of {part.strip()!r} must be at least 1")
        if hi > MAX_ARRAY_INDEX:
            raise ValueError(f"{spec!r}: an index is at most {MAX_ARRAY_INDEX}")
        if (hi - lo) // step + 1 + len(seen) > MAX_ARRAY_TASKS:
            raise ValueError(f"{spec!r}: an array has at most {MAX_ARRAY_TASKS} tasks")
        seen.update(range(lo, hi + 1, step))
    return ArraySpec(tuple(sorted(seen)), limit)


def task_id(array_id: str, index: int) -> str:
    """The request id of task ``index`` of array ``array_id``."""
    return f"{array_id}_{index}"
