"""``legionrm user add NAME [--group G]... [--admin] [--os-user ACCOUNT]``, ``user remove NAME``, ``user list``.

Run by the service account on the head: users live in the registry under
the legionrm home (``$LEGIONRM_HOME/auth``).  ``add`` writes the user's
credentials file ``auth/users/NAME.credentials`` (mode 0600; see
:mod:`legionrm.client.credentials`): the gateway's URL (from the running
gateway's ``gateway.json``, else the default address), the user's name and
private key, and the gateway certificate's fingerprint.  The administrator
hands that one file to the user.  ``remove`` revokes at once: the gateway
reads the registry again on its next call.  Only an administrator adds or
removes users: the caller (``LEGIONRM_USER``, else the login name) must hold
an admin key there.  The very first ``add`` on a home with no administrator
makes the caller one (``legionrm up`` does the same).
``--os-user`` names the OS account the user's work runs as (default: the
account of the user's own name; see :mod:`legionrm.hostobj.runner.owner`).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from legionrm import codes
from legionrm.auth import Registry
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import auth_home, load_user, login_name
from legionrm.client.credentials import SUFFIX, Credentials
from legionrm.gateway.serve import DEFAULT_PORT, LOOPBACK, read_gateway
from legionrm.homefs import private_umask


def _home() -> Path:
    return Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm")))


def _require_admin(registry: Registry, home: Path, action: str = "add users") -> str:
    me = os.environ.get("LEGIONRM_USER") or login_name()
    if not any("admin" in u.roles for u in registry.list_users()):
        registry.add_user(me, roles=("admin",))  # the home's first administrator
        return me
    load_user(home, me)  # the caller must hold the credential, not just name it
    if "admin" not in registry.user(me).roles:
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"only an administrator may {action}; {me!r} is not one", "cli")
    return me


def credentials_path(home: str | os.PathLike[str], user: str) -> Path:
    """Where ``user``'s credentials file lives in the home."""
    return auth_home(home) / "users" / f"{user}{SUFFIX}"


def write_credentials(home: str | os.PathLike[str], user: str) -> Path:
    """``user``'s credentials file (0600, replaced if there was one), for the gateway of ``home``:
    its URL and certificate fingerprint from ``gateway.json``, else the default loopback address."""
    gw = read_gateway(home) or {}
    url = str(gw.get("url") or f"http://{LOOPBACK}:{DEFAULT_PORT}")
    cred = load_user(home, user)
    return Credentials.of(url, user, cred.private_key, str(gw.get("fingerprint") or "")).write(
        credentials_path(home, user), overwrite=True)


def cli_user(args: argparse.Namespace) -> int:
    private_umask()  # the home is the service's: what this writes there (the registry) stays 0600
    home = _home()
    registry = Registry(auth_home(home))
    if args.action in ("add", "remove") and not args.name:
        raise AuthRefusedError(codes.CLI_USAGE, f"user {args.action} needs a NAME", "cli")
    if args.action == "add":
        _require_admin(registry, home)
        roles = set(args.role or ("user",)) | ({"admin"} if getattr(args, "admin", False) else set())
        os_user = getattr(args, "os_user", None)
        registry.add_user(args.name, groups=args.group or (), roles=sorted(roles), os_user=os_user)
        path = write_credentials(home, args.name)
        if args.json:
            print(json.dumps({"user": args.name, "groups": sorted(set(args.group or ())), "roles": sorted(roles),
                              "credentials": str(path), "os_user": os_user or args.name}))
        else:
            print(f"added {args.name}" + (f" (groups {', '.join(sorted(set(args.group)))})" if args.group else "")
                  + f"; work runs as OS account {os_user or args.name}"
                  + f"; credentials {path} (mode 0600: give this one file to {args.name}; it proves every call)")
        return 0
    if args.action == "remove":
        me = _require_admin(registry, home, "remove users")
        if args.name == me:
            raise AuthRefusedError(codes.USER_SELF, "an administrator cannot remove themselves", "cli")
        registry.remove_user(args.name)
        credentials_path(home, args.name).unlink(missing_ok=True)
        print(json.dumps({"removed": args.name}) if args.json else
              f"removed {args.name}: the gateway refuses their next call")
        return 0
    users = registry.list_users()
    if args.json:
        print(json.dumps({"users": [{"name": u.name, "groups": list(u.groups), "roles": list(u.roles),
                                     "os_user": u.os_user or u.name} for u in users]}))
    elif not users:
        print(f"no users under {auth_home(home)} (`legionrm up` adds you as admin)")
    else:
        for u in users:
            print(f"{u.name:<16} roles {','.join(u.roles):<18} groups {','.join(u.groups) or '-':<16} "
                  f"os user {u.os_user or u.name}")
    return 0
