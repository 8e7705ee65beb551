"""What the work runner gives back: one instance's end and its figures."""

from __future__ import annotations

from typing import Any, Literal

from legionrm.models.base import Frozen

WorkEnd = Literal["completed", "failed", "cancelled", "preempted", "timed_out", "node_lost"]
"""How a run ended: ``completed`` (rc 0), ``failed`` (rc != 0, a signal, or it
could not start), ``cancelled``, ``preempted``, ``timed_out`` (its walltime),
``node_lost`` (its host went away)."""

FAILED_ENDS: tuple[WorkEnd, ...] = ("failed", "node_lost")
"""Ends that make their request ``failed`` (a walltime end is its own: ``timed_out``)."""


class WorkResult(Frozen):
    """One run of a ``Command`` instance as its OS account, once it ended.

    ``exit_code`` is the process's exit status, or ``128 + signal`` when a
    signal ended it (the shell's convention; ``signal`` says which); None when
    it never started.  ``cpu_s`` is user + system time of the whole process
    tree the runner reaped; ``max_rss_kb`` the largest resident set among them."""

    instance_id: str
    request_id: str = ""
    account: str = ""
    state: WorkEnd
    exit_code: int | None = None
    signal: int | None = None
    started_at: float
    ended_at: float
    cpu_s: float = 0.0
    max_rss_kb: int = 0
    value: Any = None
    """A function's return value, as JSON data (function form only)."""
    error: str = ""
    """One line: why it failed to start, or the exception a function raised."""


class AccountRecord(Frozen):
    """One finished instance, as ``legionrm history`` lists it (as ``sacct`` does):
    who ran it (``user``, their first ``group``), where (``pool``, ``class_name``,
    the ``scheduler``, the ``host``), what it held (``cpus``, ``memory_gb``), when
    (``start``, ``end``), how it ended (``state``, ``exit_code``) and what it used
    (``cpu_s``, ``max_rss_kb``: known for runner work, else 0)."""

    instance_id: str
    request_id: str
    user: str
    group: str = ""
    pool: str = "/"
    class_name: str = ""
    scheduler: str = ""
    host: str = ""
    cpus: float = 0.0
    memory_gb: float = 0.0
    start: float
    end: float
    state: WorkEnd
    exit_code: int | None = None
    cpu_s: float = 0.0
    max_rss_kb: int = 0
