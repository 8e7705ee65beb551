"""The OS accounts work runs as: :class:`Account` (from the passwd and group
entries), and whether an account may execute a file (:meth:`Account.can_run`:
the function form's interpreter must be one it can run)."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path


class RunError(Exception):
    """A run cannot start; the message is one line saying why."""


@dataclass(frozen=True)
class Account:
    """An OS account work runs as."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    home: str = "/"

    @classmethod
    def named(cls, name: str) -> Account:
        """The account ``name`` on this node; RunError when there is none."""
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            raise RunError(f"there is no OS account {name!r} on this node") from None
        groups = tuple(sorted(g.gr_gid for g in grp.getgrall() if name in g.gr_mem and g.gr_gid != pw.pw_gid))
        return cls(name=pw.pw_name, uid=pw.pw_uid, gid=pw.pw_gid, groups=groups, home=pw.pw_dir)

    @classmethod
    def service(cls) -> Account:
        """The account this process runs as."""
        return cls.named(pwd.getpwuid(os.geteuid()).pw_name)

    @property
    def is_service(self) -> bool:
        return self.uid == os.geteuid()

    def may(self, st: os.stat_result, bit: int) -> bool:
        """May this account do ``bit`` (4 read, 2 write, 1 execute/search) on a file with ``st``?"""
        if self.uid == 0:
            return bit != 1 or bool(st.st_mode & 0o111) or stat.S_ISDIR(st.st_mode)
        if st.st_uid == self.uid:
            return bool(st.st_mode & (bit << 6))
        if st.st_gid == self.gid or st.st_gid in self.groups:
            return bool(st.st_mode & (bit << 3))
        return bool(st.st_mode & bit)

    def can_run(self, path: str | os.PathLike[str]) -> bool:
        """Can this account execute ``path`` (every directory on the way searchable, as
        given and once symlinks are resolved, and the file executable)?"""
        p = Path(path)
        for target in {Path(os.path.abspath(p)), p.resolve()}:
            try:
                if not all(self.may(os.stat(d), 1) for d in reversed(target.parents)) or not self.may(os.stat(target), 1):
                    return False
            except OSError:
                return False
        return True
