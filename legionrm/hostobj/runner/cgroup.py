"""Each run in a cgroup (v2) of its own, where the node lets the service make one.

A process that calls ``setsid`` (or double-forks into a new session) leaves
its run's session and process group, so a stop that signals only those
misses it.  Its cgroup it cannot leave (moving a process needs write access
to the ``cgroup.procs`` of a common ancestor, which is the service's), and
``cgroup.kill`` (Linux 5.14) ends every process in a cgroup at once.

Where: ``<cgroup2 mount><this process's cgroup>/legionrm-runs/<run>``
(:func:`cgroup_root`); nowhere (None, and a run is ended through its session
alone) when cgroup v2 is not mounted, not writable by this process, or has
no ``cgroup.kill``.  A run joins its cgroup before its first instruction:
the service opens the cgroup's ``cgroup.procs`` and the child, already as
the user's account, writes ``0`` (itself) to that descriptor in its
``preexec_fn``; the kernel judges the write by the credentials the file was
opened with (the service's).

Pure: files under /sys/fs/cgroup and /proc, no Ray.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

CGROUP_DIR = "legionrm-runs"
"""The cgroup under this process's own that holds one cgroup per run."""


def cgroup_root() -> Path | None:
    """Where this process may make its runs' cgroups (made if need be), or None (see the module)."""
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
        mount = next(parts[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                     if "-" in (parts := line.split()) and parts[parts.index("-") + 1:][:1] == ["cgroup2"])
    except (OSError, StopIteration):
        return None
    root = Path(mount) / own.strip().lstrip("/") / CGROUP_DIR
    try:
        root.mkdir(exist_ok=True)
    except OSError:
        return None
    return root if (root / "cgroup.kill").exists() and os.access(root / "cgroup.procs", os.W_OK) else None


class Cgroup:
    """One run's cgroup at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.join_fd: int | None = None
        """Open on ``cgroup.procs`` until the child started: it writes ``0`` there to join."""

    @classmethod
    def make(cls, root: Path, name: str) -> Cgroup | None:
        """A fresh cgroup ``root/name`` with :attr:`join_fd` open (one left there by an earlier
        process is ended first); None when it cannot be made."""
        cg = cls(root / name)
        if cg.path.exists():
            cg.remove()
        try:
            cg.path.mkdir()
            cg.join_fd = os.open(cg.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            cg.remove(0)
            return None
        return cg

    def joined(self) -> None:
        """The child started (or could not): :attr:`join_fd` is closed."""
        if self.join_fd is not None:
            os.close(self.join_fd)
            self.join_fd = None

    def members(self) -> list[int]:
        """Pids of the processes in it (none once it is gone)."""
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL every process in it, and every one they fork meanwhile."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            pass

    def remove(self, wait_s: float = 5.0) -> bool:
        """Kill what is in it and remove it; False when it is still there after ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while True:
            if self.members():
                self.kill()
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:  # its processes are still dying
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.02)
