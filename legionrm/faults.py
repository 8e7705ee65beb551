"""The one seam for storage faults: what a store's write meets, on purpose.

Every write of a state store (:mod:`legionrm.state.sqlite`) and of a vault's
shelf (:mod:`legionrm.objstate.shelf`) passes :func:`hit` twice: at
``"write"``, inside its transaction just before the commit (a full disk or an
I/O error is raised there, as the disk would raise it), and at
``"applied"``, right after the commit and before the caller applies the change
(a :class:`Crash` there is a process that died between the write and the
apply); a durable write passes it a third time, at ``"sync"``, before the
fsync of its log (``"sync"``: that fsync fails with EIO).  The fault tests arm it with :func:`inject`; nothing arms it in a
running system, where :func:`hit` is one empty-list check.

Pure standard library: every layer may use it.
"""

from __future__ import annotations

import errno
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Literal

Fault = Literal["full", "io", "crash", "sync"]
FAULTS: tuple[Fault, ...] = ("full", "io", "crash")


class Crash(BaseException):
    """A fault test's process death right after a write committed: nothing after
    the write runs (a BaseException, so no ``except Exception`` swallows it)."""


@dataclass
class _Rule:
    fault: Fault
    match: str
    times: int | None  # None: every write until the rule is lifted
    after: int = 0  # writes let through first


_STAGE = {"full": "write", "io": "write", "crash": "applied", "sync": "sync"}  # where each fault is met
_rules: list[_Rule] = []
_lock = threading.Lock()


@contextmanager
def inject(fault: Fault, match: str = "", times: int | None = None, after: int = 0) -> Iterator[None]:
    """While the block runs, writes to a path containing ``match`` meet ``fault``
    (the next ``times`` of them, None: all; the first ``after`` of them pass)."""
    rule = _Rule(fault, match, times, after)
    with _lock:
        _rules.append(rule)
    try:
        yield
    finally:
        with _lock:
            if rule in _rules:
                _rules.remove(rule)


def _due(path: str, stage: str) -> Fault | None:
    if not _rules:
        return None
    with _lock:
        for rule in _rules:
            if rule.match in path and _STAGE[rule.fault] == stage:
                if rule.after > 0:
                    rule.after -= 1
                    continue
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        _rules.remove(rule)
                return rule.fault
    return None


def hit(path: str, stage: Literal["write", "applied", "sync"], *, file: bool = False) -> None:
    """Raise the fault armed for a write of ``path`` at ``stage``, as SQLite
    (or, with ``file``, the OS) would raise it; nothing when none is armed."""
    fault = _due(path, stage)
    if fault == "crash":
        raise Crash(f"crashed after writing {path}")
    if fault == "sync":  # the fsync of a durable write's log: the OS's error
        raise OSError(errno.EIO, "Input/output error", path)
    if fault is not None and file:
        code = errno.ENOSPC if fault == "full" else errno.EIO
        raise OSError(code, "No space left on device" if fault == "full" else "Input/output error", path)
    if fault == "full":
        raise sqlite3.OperationalError("database or disk is full")
    if fault == "io":
        raise sqlite3.OperationalError("disk I/O error")
