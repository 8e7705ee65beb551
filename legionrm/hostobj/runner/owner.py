"""Whose OS account a user's work runs as, and when it may not run at all.

``run_as = "owner"`` (the default): work runs as the OS account the user
maps to (``legionrm user add NAME --os-user ACCOUNT``; none given: the
account of the user's own name).  A service running as root runs work only
as a mapped non-root account; a service that is not root can switch to no
other account, so it runs only the work of users mapped to its own.
``run_as = "service"``: a single-user or test system; every user's work runs
as the service's own account, so every user is trusted with the service's
rights.

The Scheduler asks :func:`owner_refusal` at submit (one clear line,
``auth.no_os_user``); the node's host asks :func:`account_for` again at each
start, on its own node.
"""

from __future__ import annotations

import os
import pwd
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from legionrm import codes
from legionrm.auth import guard
from legionrm.auth.registry import Registry
from legionrm.hostobj.owners.policy import import_object
from legionrm.hostobj.runner.accounts import Account, RunError
from legionrm.hostobj.runner.instances import WorkInstances, is_work
from legionrm.hostobj.runner.process import Runner, RunnerSettings, default_work_root
from legionrm.models import ClassSpec, Refusal, RunnerSpec, SchedulingRequest

RunAs = Literal["owner", "service"]


class NoOsUser(RunError):
    """The user has no OS account their work may run as here (code :data:`~legionrm.codes.AUTH_NO_OS_USER`)."""

    code = codes.AUTH_NO_OS_USER


def account_for(user: str, os_user: str | None, run_as: RunAs = "owner") -> Account:
    """The account ``user``'s work runs as on this node (see the module); NoOsUser when none may."""
    if run_as == "service":
        return Account.service()
    name = os_user or user
    try:
        account = Account.named(name)
    except RunError:
        how = "its mapped" if os_user else "an"
        raise NoOsUser(f"user {user!r} has no OS account to run work as ({how} account {name!r} does not exist "
                       f"here); an admin maps one: legionrm user add {user} --os-user ACCOUNT") from None
    me = os.geteuid()
    if me == 0 and account.uid == 0:
        raise NoOsUser(f"user {user!r} maps to OS account {account.name!r}, which is root; the service runs "
                       "work only as a non-root account")
    if me != 0 and account.uid != me:
        raise NoOsUser(f"the service runs as {pwd.getpwuid(me).pw_name!r} and cannot run work as {account.name!r} "
                       f"(user {user!r}); a single-user system may set run_as = \"service\" in [runner]")
    return account


def work_classes(classes: Iterable[ClassSpec]) -> frozenset[str]:
    """The names of the classes whose instances are runner work (an implementation that does not import is not)."""
    out = set()
    for c in classes:
        for path in [c.implementation, *(i.entry for i in c.implementations)]:
            try:
                if path and is_work(import_object(path, key="implementation")):
                    out.add(c.name)
            except Exception:  # noqa: BLE001 - a class that cannot load fails at its start, not here
                continue
    return frozenset(out)


def owner_refusal(request: SchedulingRequest, work: frozenset[str], run_as: RunAs,
                  os_user_of: Callable[[str], str | None]) -> Refusal | None:
    """None when ``request`` runs no work of ``work``'s classes or its user has
    an account it may run as; else the ``auth.no_os_user`` refusal."""
    if not any(o.class_name in work for o in request.objects):
        return None
    user = request.identity.user
    try:
        account_for(user, os_user_of(user), run_as)
    except NoOsUser as exc:
        return Refusal(code=codes.AUTH_NO_OS_USER, reason=str(exc), by="scheduler")
    return None


def owner_gate(classes: Iterable[ClassSpec], spec: RunnerSpec, auth_home: str | None
               ) -> Callable[[SchedulingRequest], Refusal | None] | None:
    """What the Scheduler asks at submit (:func:`owner_refusal`); None when no class runs work."""
    work = work_classes(classes)
    if not work:
        return None
    os_user_of = _os_users(auth_home)
    return lambda request: owner_refusal(request, work, spec.run_as, os_user_of)


def _os_users(auth_home: str | None) -> Callable[[str], str | None]:
    return registry_os_user(Registry(guard.auth_home(auth_home))) if auth_home else (lambda _u: None)


def registry_os_user(registry: Any) -> Callable[[str], str | None]:
    """``os_user_of`` over an auth registry (re-read each time: an admin may map a user meanwhile)."""

    def os_user_of(user: str) -> str | None:
        registry.reload()
        p = registry.principal(user)
        return getattr(p, "os_user", None) if p is not None and p.is_user else None

    return os_user_of


def build_work(spec: RunnerSpec, log_dir: str | os.PathLike[str] | None, auth_home: str | None) -> WorkInstances:
    """What a Ray-node host runs work with: a runner keeping outputs in
    ``log_dir`` (None: a fresh private temporary directory, made when first used), accounts by
    ``spec.run_as`` and the registry of the legionrm home ``auth_home`` (None: no mapping)."""
    # no state directory: a private one of its own, made (0700) when the first run starts
    log = Path(log_dir) if log_dir is not None else Path(tempfile.gettempdir()) / f"legionrm-runs-{uuid.uuid4().hex}"
    settings = RunnerSettings(log_dir=log, work_root=Path(spec.work_dir) if spec.work_dir else default_work_root(),
                              python=spec.python or sys.executable, kill_grace_s=spec.kill_grace_s,
                              output_cap=int(spec.output_cap_mb * 2**20))
    os_user_of = _os_users(auth_home)
    return WorkInstances(Runner(settings), lambda user: account_for(user, os_user_of(user), spec.run_as))
