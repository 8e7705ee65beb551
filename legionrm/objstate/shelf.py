"""Where a vault keeps objects' persistent representations: bytes by object id.

:class:`StateShelf` is the contract (``put`` / ``get`` / ``delete`` /
``size`` / ``list``); :class:`DirectoryShelf` keeps one file per object
under a directory (the default shelf of a vault: a directory on its node),
written atomically (a temporary file in the same directory, flushed and
``fsync``-ed, then renamed over the old one), so a crash leaves either the
old state or the new one, never half of one (a full disk raises OSError and
leaves the old one); :class:`MemoryShelf` keeps
them in a dict (tests, in-process systems).  Any blob service can stand
behind the same five methods.  Shelves do no accounting: capacity, quotas
and pairing are the vault's (:class:`~legionrm.hostobj.vault.VaultObject`).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Protocol

from legionrm.homefs import private_dir
from legionrm.faults import hit

GB = 1024**3
"""Bytes in one ``storage_gb`` unit."""

MAX_ID = 200
_ID = re.compile(r"^[A-Za-z0-9_.~:@+=-]+$")
_SUFFIX = ".state"


def check_object_id(object_id: str) -> str:
    """``object_id`` when it is a usable file name (1-200 characters of letters,
    digits and ``_ . ~ : @ + = -``, not starting with ``.``); ValueError naming it otherwise."""
    if not isinstance(object_id, str) or not 0 < len(object_id) <= MAX_ID or not _ID.match(object_id) \
            or object_id.startswith("."):
        raise ValueError(f"object id {object_id!r} is not 1-{MAX_ID} characters of letters, digits and _.~:@+=-")
    return object_id


class StateShelf(Protocol):
    """Bytes by object id.  Every method raises ValueError for a bad id."""

    def put(self, object_id: str, data: bytes) -> int:
        """Put ``data`` as ``object_id``'s state (replacing any); returns its size."""
        ...

    def get(self, object_id: str) -> bytes | None:
        """The stored state, or None when there is none."""
        ...

    def delete(self, object_id: str) -> bool:
        """Forget ``object_id``'s state; False when there was none (idempotent)."""
        ...

    def size(self, object_id: str) -> int | None:
        """The stored state's size in bytes, or None."""
        ...

    def list(self) -> dict[str, int]:
        """Every stored object id and its size in bytes."""
        ...


class MemoryShelf:
    """A :class:`StateShelf` in a dict.  Thread-safe."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, object_id: str, data: bytes) -> int:
        check_object_id(object_id)
        with self._lock:
            self._data[object_id] = bytes(data)
        return len(data)

    def get(self, object_id: str) -> bytes | None:
        check_object_id(object_id)
        return self._data.get(object_id)

    def delete(self, object_id: str) -> bool:
        check_object_id(object_id)
        with self._lock:
            return self._data.pop(object_id, None) is not None

    def size(self, object_id: str) -> int | None:
        data = self.get(object_id)
        return None if data is None else len(data)

    def list(self) -> dict[str, int]:
        with self._lock:
            return {k: len(v) for k, v in self._data.items()}


class DirectoryShelf:
    """A :class:`StateShelf` of files ``<root>/<object id>.state``.  The
    directory is created (mode 0700) when missing.  Thread-safe (one lock)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        private_dir(self.root)
        self._lock = threading.Lock()

    def _path(self, object_id: str) -> Path:
        return self.root / (check_object_id(object_id) + _SUFFIX)

    def put(self, object_id: str, data: bytes) -> int:
        path = self._path(object_id)
        with self._lock:
            fd, tmp = tempfile.mkstemp(prefix=".put-", dir=self.root)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                hit(str(path), "write", file=True)  # the fault tests' full disk or I/O error
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        hit(str(path), "applied")  # the fault tests' crash: written, not yet booked
        return len(data)

    def get(self, object_id: str) -> bytes | None:
        try:
            return self._path(object_id).read_bytes()
        except FileNotFoundError:
            return None

    def delete(self, object_id: str) -> bool:
        path = self._path(object_id)
        with self._lock:
            try:
                path.unlink()
                return True
            except FileNotFoundError:
                return False

    def size(self, object_id: str) -> int | None:
        try:
            return self._path(object_id).stat().st_size
        except FileNotFoundError:
            return None

    def list(self) -> dict[str, int]:
        with self._lock:
            return {p.name[: -len(_SUFFIX)]: p.stat().st_size for p in self.root.glob("*" + _SUFFIX)}
