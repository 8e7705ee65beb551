"""The home is the service's (issue 24, item 7): everything under
``LEGIONRM_HOME`` is readable by the service account alone.

Files are 0600, directories 0700: the state databases (with SQLite's
``-wal`` and ``-shm`` files), ``auth/registry.json``, the logs, ``up.json``
(which holds the dashboard's admin key) and every key.  The one exception
is what an administrator hands out (:data:`HANDED_OUT`: a user's
credentials file), whose mode its writer chooses.

Everything that writes the home goes through here: :func:`private_dir`,
:func:`write_private`, :func:`open_private`, :func:`private_file` (a file
created empty with mode 0600 before another library opens it: SQLite then
gives its ``-wal`` and ``-shm`` files the same mode).  The service
processes also run with :func:`private_umask` (``up``, and every actor that
writes the home), so a file some library creates on its own is private too.
:func:`exposed` lists what is not (what the tests walk the home for).
"""

from __future__ import annotations

import fnmatch
import getpass
import os
import stat
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

FILE_MODE = 0o600
DIR_MODE = 0o700
UMASK = 0o077
HANDED_OUT = ("auth/users/*.credentials",)
"""Paths under the home (globs) an administrator hands out: their writer sets their mode."""


def private_umask() -> int:
    """Make every file and directory this process creates from now on private
    to its owner; returns the umask it had."""
    return os.umask(UMASK)


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a directory, made with any missing parents, each 0700.  An
    existing directory is left as it is (it may be /tmp: see :func:`tighten`)."""
    p = Path(path)
    missing = []
    for d in (p, *p.parents):
        if d.is_dir():
            break
        missing.append(d)
    for d in reversed(missing):
        with suppress(FileExistsError):  # another process made it first
            d.mkdir(mode=DIR_MODE)
            os.chmod(d, DIR_MODE)  # mkdir's mode is masked by the umask: make it exact
    return p


def private_file(path: str | os.PathLike[str]) -> Path:
    """``path`` exists as a file of mode 0600 (created empty, in a 0700
    directory, when missing; an existing one is made 0600)."""
    p = Path(path)
    private_dir(p.parent)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return p


def open_private(path: str | os.PathLike[str], mode: str = "a", **kw: Any) -> IO[Any]:
    """``open(path, mode)`` for writing (``"a"``, ``"w"``, ``"ab"`` ...), the file created or kept 0600."""
    return open(private_file(path), mode, **kw)  # the caller closes it


def write_private(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` atomically (a 0600 temporary file renamed
    into place), so no reader ever sees a partial or a readable copy."""
    p = Path(path)
    private_dir(p.parent)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), FILE_MODE)
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        with suppress(FileNotFoundError):
            tmp.unlink()
    return p


def handed_out(home: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is one of what an administrator hands out (:data:`HANDED_OUT`)."""
    try:
        rel = Path(path).relative_to(home).as_posix()
    except ValueError:
        return False
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in HANDED_OUT)


def exposed(home: str | os.PathLike[str]) -> Iterator[tuple[Path, int]]:
    """Every path under ``home`` (``home`` too) that group or others may
    read, write or enter, with its mode; what is handed out is left out.
    Symbolic links are not followed."""
    root = Path(home)
    for path in (root, *sorted(root.rglob("*"))):
        try:
            st = path.lstat()
        except FileNotFoundError:  # gone while walking (a SQLite -shm file)
            continue
        if stat.S_ISLNK(st.st_mode) or handed_out(root, path):
            continue
        if stat.S_IMODE(st.st_mode) & 0o077:
            yield path, stat.S_IMODE(st.st_mode)


def tighten(home: str | os.PathLike[str]) -> int:
    """Make what an older version left open under ``home`` private (files keep
    their owner's bits, directories 0700); returns how many paths changed.  A
    home that is not this account's own, or is shared (sticky, as /tmp), is
    left alone."""
    root = Path(home)
    try:
        st = root.stat()
    except FileNotFoundError:
        return 0
    if st.st_uid != os.getuid() or st.st_mode & stat.S_ISVTX:
        return 0
    changed = 0
    for path, mode in list(exposed(root)):
        with suppress(OSError):
            os.chmod(path, DIR_MODE if path.is_dir() else mode & 0o700)
            changed += 1
    return changed


def login_name() -> str:
    """This process's login name (``admin`` where there is none: containers): whose the home's own
    credentials are, for ``up``, ``user`` and a client on the head.  Here, not in :mod:`legionrm.auth`,
    so the client finds it without importing the auth package."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 -- no login name (containers)
        return "admin"
