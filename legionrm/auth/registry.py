"""The registry of principals: users and their groups, roles and keys; agents.

One JSON file, ``<home>/registry.json``, holds every principal's *public*
facts (name, kind, public key, groups, roles, owned hosts).  A user's private
key is written once, when the user is added, to ``<home>/users/<name>.key``
with mode 0600, and never kept by the registry.  An agent (a host, vault or
class object, the Scheduler) gets a fresh key at boot from :meth:`add_agent`;
its private key stays in the memory of the process that asked.

The home directory is passed in; the core never reads the environment.  Every
change is a read-modify-write of the file under an exclusive lock
(``<home>/registry.lock``), written to a temporary file and renamed into
place, so two processes adding users at once both land and a crash never
leaves half a file.  ``Registry(None)`` keeps everything in memory (tests,
simulations).

Groups come only from here: :meth:`groups_of` is the one answer to "which
groups is this user in", whatever a caller claims.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from legionrm.auth import keys
from legionrm.auth.errors import KeyFileError, RegistryError, UnknownPrincipalError
from legionrm.auth.keys import Credential
from legionrm.auth.principals import (
    AGENT_NAME,
    Principal,
    agent_principal,
    check_name,
    normal_names,
    normal_roles,
)
from legionrm.homefs import private_dir, write_private

REGISTRY_FILE = "registry.json"
LOCK_FILE = "registry.lock"
USERS_DIR = "users"
FORMAT_VERSION = 1


class Registry:
    """Principals by name, persisted under ``home`` (or only in memory when None).  Thread-safe.

    Mutations reload the file first, so a registry object always acts on the
    latest state on disk; reads use the state as of the last load or change
    (call :meth:`reload` to see another process's changes).
    """

    def __init__(self, home: str | os.PathLike[str] | None) -> None:
        self.home = Path(home) if home is not None else None
        self._lock = threading.RLock()
        self._by_name: dict[str, Principal] = {}
        if self.home is not None:
            private_dir(self.home / USERS_DIR)
            self.reload()

    # --- reading --------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The registry file (None in memory)."""
        return self.home / REGISTRY_FILE if self.home is not None else None

    def key_path(self, user: str) -> Path:
        """Where ``user``'s private key file is (``RegistryError`` in memory)."""
        if self.home is None:
            raise RegistryError("an in-memory registry keeps no key files")
        return self.home / USERS_DIR / f"{check_name(user, 'user')}.key"

    def principal(self, name: str) -> Principal | None:
        """The principal called ``name`` (a user, or an agent as ``kind:name``), or None."""
        with self._lock:
            return self._by_name.get(name) if isinstance(name, str) else None

    def user(self, name: str) -> Principal:
        """The user ``name``; ``UnknownPrincipalError`` if there is none."""
        p = self.principal(name)
        if p is None or not p.is_user:
            raise UnknownPrincipalError(f"no user {name!r} in the registry")
        return p

    def list_users(self) -> list[Principal]:
        """Every user, by name."""
        with self._lock:
            return sorted((p for p in self._by_name.values() if p.is_user), key=lambda p: p.name)

    def list_agents(self) -> list[Principal]:
        """Every agent, by principal name."""
        with self._lock:
            return sorted((p for p in self._by_name.values() if not p.is_user), key=lambda p: p.name)

    def groups_of(self, name: str) -> tuple[str, ...]:
        """The groups the registry says ``name`` is in (``UnknownPrincipalError`` for a stranger)."""
        return self.user(name).groups

    def roles_of(self, name: str) -> tuple[str, ...]:
        """The roles the registry gives ``name``."""
        return self.user(name).roles

    # --- users ------------------------------------------------------------------------------

    def add_user(
        self,
        name: str,
        groups: Iterable[str] = (),
        roles: Iterable[str] = ("user",),
        owns: Iterable[str] = (),
    ) -> Credential:
        """Register a new user and issue their credential.

        With a home directory the private key is written to :meth:`key_path`
        (mode 0600) before the user is registered; the registry never keeps
        it.  ``InvalidNameError`` for a bad name, group, role or host;
        ``RegistryError`` if the user (or their key file) already exists.
        """
        check_name(name, "user")
        grp, rls, own = normal_names(groups, "group"), normal_roles(roles), normal_names(owns, "host", AGENT_NAME)
        private = keys.generate_private_key()
        entry = Principal(name=name, kind="user", public_key=keys.encode_public_key(private.public_key()),
                          groups=grp, roles=rls, owns=own)

        written: list[Path] = []

        def change(table: dict[str, Principal]) -> None:
            if name in table:
                raise RegistryError(f"user {name!r} already exists")
            if self.home is not None:
                try:
                    written.append(keys.save_private_key(self.key_path(name), private))
                except KeyFileError as exc:
                    raise RegistryError(f"cannot issue a key for {name!r}: {exc}") from None
            table[name] = entry

        try:
            self._mutate(change)
        except BaseException:
            for path in written:  # the registry was not written: no key file without its user
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            raise
        return Credential(name=name, private_key=private)

    def update_user(
        self,
        name: str,
        *,
        groups: Iterable[str] | None = None,
        roles: Iterable[str] | None = None,
        owns: Iterable[str] | None = None,
    ) -> Principal:
        """Replace ``name``'s groups, roles or owned hosts (None: keep); the key stays."""
        check_name(name, "user")
        update: dict[str, object] = {}
        if groups is not None:
            update["groups"] = normal_names(groups, "group")
        if roles is not None:
            update["roles"] = normal_roles(roles)
        if owns is not None:
            update["owns"] = normal_names(owns, "host", AGENT_NAME)

        def change(table: dict[str, Principal]) -> None:
            old = table.get(name)
            if old is None or not old.is_user:
                raise UnknownPrincipalError(f"no user {name!r} in the registry")
            table[name] = Principal.model_validate({**old.model_dump(), **update})

        self._mutate(change)
        return self.user(name)

    def remove_user(self, name: str) -> None:
        """Forget ``name`` and delete their key file.  ``UnknownPrincipalError`` if absent."""
        check_name(name, "user")

        def change(table: dict[str, Principal]) -> None:
            old = table.get(name)
            if old is None or not old.is_user:
                raise UnknownPrincipalError(f"no user {name!r} in the registry")
            del table[name]
            if self.home is not None:
                with contextlib.suppress(FileNotFoundError):
                    self.key_path(name).unlink()

        self._mutate(change)

    # --- agents -----------------------------------------------------------------------------

    def add_agent(self, kind: str, name: str) -> Credential:
        """Give agent ``name`` of ``kind`` a fresh key (at boot), replacing any earlier one.

        The returned credential is the only copy of the private key: the agent
        keeps it in memory; a reboot makes a new one.  Its ``name`` is the
        principal name (``host:h1``).
        """
        principal = agent_principal(kind, name)
        private = keys.generate_private_key()
        entry = Principal(name=principal, kind=kind, public_key=keys.encode_public_key(private.public_key()))  # type: ignore[arg-type]
        self._mutate(lambda table: table.__setitem__(principal, entry))
        return Credential(name=principal, private_key=private)

    def add_agents(self, kind: str, names: Iterable[str]) -> dict[str, Credential]:
        """:meth:`add_agent` for many agents of ``kind`` in one write (a host
        group's hosts); local name -> credential."""
        made: dict[str, tuple[str, keys.Ed25519PrivateKey, Principal]] = {}
        for name in names:
            principal = agent_principal(kind, name)
            private = keys.generate_private_key()
            made[name] = (principal, private, Principal(name=principal, kind=kind,  # type: ignore[arg-type]
                                                        public_key=keys.encode_public_key(private.public_key())))

        def change(table: dict[str, Principal]) -> None:
            for principal, _, entry in made.values():
                table[principal] = entry

        self._mutate(change)
        return {name: Credential(name=p, private_key=k) for name, (p, k, _) in made.items()}

    def remove_agent(self, kind: str, name: str) -> bool:
        """Forget an agent; True if it was registered.  Idempotent."""
        principal = agent_principal(kind, name)
        removed: list[bool] = []
        self._mutate(lambda table: removed.append(table.pop(principal, None) is not None))
        return removed[0]

    def forget_agents(self, kinds: Iterable[str]) -> list[str]:
        """Forget every agent of ``kinds`` (a new boot issues each of its own
        agents a fresh key: the earlier boot's, and its Ray nodes that are
        gone, stay out of the registry); returns the principals forgotten."""
        drop = set(kinds)
        gone: list[str] = []

        def change(table: dict[str, Principal]) -> None:
            gone.extend(n for n, p in table.items() if p.kind in drop)
            for n in gone:
                del table[n]

        self._mutate(change)
        return sorted(gone)

    # --- persistence ----------------------------------------------------------------------

    def reload(self) -> None:
        """Read the registry file again (nothing in memory; empty if there is no file yet)."""
        if self.home is None:
            return
        with self._lock:
            self._by_name = self._read()

    def _read(self) -> dict[str, Principal]:
        path = self.path
        assert path is not None
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
                raise ValueError(f"expected an object with version {FORMAT_VERSION}")
            table: dict[str, Principal] = {}
            for item in doc.get("principals", []):
                p = Principal.model_validate(item)
                if p.name in table:
                    raise ValueError(f"principal {p.name!r} appears twice")
                table[p.name] = p
        except (ValueError, ValidationError) as exc:
            raise RegistryError(f"{path}: not a valid registry file: {exc}") from None
        return table

    def _write(self, table: dict[str, Principal]) -> None:
        path = self.path
        assert path is not None
        doc = {"version": FORMAT_VERSION, "principals": [table[n].model_dump(mode="json") for n in sorted(table)]}
        write_private(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")  # 0600: the home is the service's

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        assert self.home is not None
        fd = os.open(self.home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _mutate(self, change: Callable[[dict[str, Principal]], None]) -> None:
        """Apply ``change`` to the latest table and persist it, or leave everything as it was."""
        with self._lock:
            if self.home is None:
                table = dict(self._by_name)
                change(table)
                self._by_name = table
                return
            with self._file_lock():
                table = self._read()
                change(table)
                self._write(table)
                self._by_name = table
