"""``legionrm user add NAME [--group G ...] [--role R ...] [--os-user ACCOUNT]`` and ``legionrm user list``.

Users live in the registry under the legionrm home (``$LEGIONRM_HOME/auth``);
``add`` writes the new user's private key to ``auth/users/NAME.key`` (mode
0600: readable only by the account that owns the home; hand it to the user).
Only an administrator adds users: the caller (``LEGIONRM_USER``, else the
login name) must hold an admin credential there.  The very first ``add`` on a
home with no administrator makes the caller one (``legionrm up`` does the same).
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


def _home() -> Path:
    return Path(os.environ.get("LEGIONRM_HOME", str(Path.home() / ".legionrm")))


def _require_admin(registry: Registry, home: Path) -> str:
    me = os.environ.get("LEGIONRM_USER") or login_name()
    if not any("admin" in u.roles for u in registry.list_users()):
        registry.add_user(me, roles=("admin",))  # the home's first administrator
        return me
    load_user(home, me)  # the caller must hold the credential, not just name it
    if "admin" not in registry.user(me).roles:
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"only an administrator may add users; {me!r} is not one", "cli")
    return me


def cli_user(args: argparse.Namespace) -> int:
    home = _home()
    registry = Registry(auth_home(home))
    if args.action == "add":
        if not args.name:
            raise AuthRefusedError(codes.CLI_USAGE, "user add needs a NAME", "cli")
        _require_admin(registry, home)
        os_user = getattr(args, "os_user", None)
        registry.add_user(args.name, groups=args.group or (), roles=args.role or ("user",), os_user=os_user)
        path = registry.key_path(args.name)
        if args.json:
            print(json.dumps({"user": args.name, "groups": sorted(set(args.group or ())), "key": str(path),
                              "os_user": os_user or args.name}))
        else:
            print(f"added {args.name}" + (f" (groups {', '.join(sorted(set(args.group)))})" if args.group else "")
                  + f"; work runs as OS account {os_user or args.name}"
                  + f"; key {path} (mode 0600: give it to {args.name}, it proves every call they make)")
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
