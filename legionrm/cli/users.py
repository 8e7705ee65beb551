"""``legionrm user add NAME [--group G]... [--admin] [--os-user ACCOUNT]``, ``user remove NAME``, ``user list``.

Administrators' verbs, through the gateway like every other (:mod:`legionrm.cli.front`'s
credentials, ``--as`` and ``--json``): the gateway checks the admin role, keeps the
registry in the service's home, and for ``add`` writes the user's credentials file
there, ``$LEGIONRM_HOME/auth/users/NAME.credentials`` (mode 0600; see
:mod:`legionrm.client.credentials`): the gateway's URL, the user's name and
private key, and the gateway certificate's fingerprint.  The administrator hands
that one file to the user.  ``remove`` revokes at once: the gateway reads the
registry again on its next call.  ``legionrm up`` makes its caller the home's
first administrator and writes their credentials, which the service account's
CLI finds on the head.
``--os-user`` names the OS account the user's work runs as (default: the
account of the user's own name; see :mod:`legionrm.hostobj.runner.owner`).
"""

from __future__ import annotations

import argparse
import json

from legionrm import codes
from legionrm.auth.errors import AuthRefusedError
from legionrm.cli.front.connect import typed


def cli_user(args: argparse.Namespace) -> int:
    if args.action in ("add", "remove") and not args.name:
        raise AuthRefusedError(codes.CLI_USAGE, f"user {args.action} needs a NAME", "cli")
    c = typed(args)  # administrators: the typed Client (its answers are printed from the models)
    if args.action == "add":
        roles = set(args.role or ("user",)) | ({"admin"} if args.admin else set())
        added = c.add_user(args.name, groups=sorted(set(args.group or ())), roles=sorted(roles), os_user=args.os_user)
        u = added.user
        if args.json:
            print(json.dumps({"user": u.name, "groups": list(u.groups), "roles": list(u.roles),
                              "credentials": added.credentials, "os_user": u.os_user}))
        else:
            print(f"added {u.name}" + (f" (groups {', '.join(u.groups)})" if u.groups else "")
                  + f"; work runs as OS account {u.os_user}"
                  + f"; credentials {added.credentials} (mode 0600: give this one file to {u.name}; it proves every call)")
        return 0
    if args.action == "remove":
        gone = c.remove_user(args.name).removed
        print(json.dumps({"removed": gone}) if args.json else f"removed {gone}: the gateway refuses their next call")
        return 0
    users = c.users()
    if args.json:
        print(json.dumps({"users": [u.model_dump(mode="json") for u in users]}))
    elif not users:
        print("no users")
    else:
        for u in users:
            print(f"{u.name:<16} roles {','.join(u.roles):<18} groups {','.join(u.groups) or '-':<16} os user {u.os_user}")
    return 0
