"""The users' routes (administrators only): ``user list``, ``user add``, ``user remove`` over HTTP,
and the credentials files the gateway writes for them.

``POST /api/v1/users`` registers a user in the home's registry and writes their
credentials file there (:func:`write_credentials`, mode 0600): the gateway's URL
and certificate fingerprint, the user's name and private key.  The answer names
the file, never its key: the administrator hands the file to the user.
``DELETE /api/v1/users/NAME`` revokes at once (the door reads the registry again
on the next call) and deletes that file.  The role is checked here, at the
gateway: an administrator acting ``--as`` another user has that user's role.
"""

from __future__ import annotations

import os
from pathlib import Path

from aiohttp import web

from legionrm import codes
from legionrm.auth.errors import InvalidNameError, RegistryError, UnknownPrincipalError
from legionrm.auth.guard import auth_home, load_user
from legionrm.auth.principals import Principal
from legionrm.client.credentials import SUFFIX, Credentials
from legionrm.gateway.door import (
    PRINCIPALS,
    SETTINGS,
    answer,
    body_of,
    caller_of,
    refusal,
    require_admin,
)
from legionrm.gateway.serve import DEFAULT_PORT, LOOPBACK, read_gateway
from legionrm.models.api import UserAddBody, UserAdded, UserList, UserRemoved, UserRow


def credentials_path(home: str | os.PathLike[str], user: str) -> Path:
    """Where ``user``'s credentials file lives in the home."""
    return auth_home(home) / "users" / f"{user}{SUFFIX}"


def write_credentials(home: str | os.PathLike[str], user: str, url: str | None = None) -> Path:
    """``user``'s credentials file (0600, replaced if there was one), for the gateway of ``home``:
    its URL and certificate fingerprint from ``gateway.json``, else ``url``, else the default
    loopback address."""
    gw = read_gateway(home) or {}
    cred = load_user(home, user)
    return Credentials.of(str(gw.get("url") or url or f"http://{LOOPBACK}:{DEFAULT_PORT}"), user, cred.private_key,
                          str(gw.get("fingerprint") or "")).write(credentials_path(home, user), overwrite=True)


def user_row(p: Principal) -> UserRow:
    return UserRow(name=p.name, groups=tuple(p.groups), roles=tuple(p.roles), os_user=p.os_user or p.name)


async def users(request: web.Request) -> web.Response:
    require_admin(request, "list users")
    return answer(UserList(users=tuple(user_row(u) for u in request.app[PRINCIPALS].fresh().list_users())))


async def add_user(request: web.Request) -> web.Response:
    require_admin(request, "add users")
    body: UserAddBody = await body_of(request, UserAddBody)
    home = request.app[SETTINGS]["home"]
    registry = request.app[PRINCIPALS].fresh()
    try:
        registry.add_user(body.name, groups=body.groups, roles=body.roles, os_user=body.os_user)
    except InvalidNameError as exc:
        return refusal(422, codes.REQUEST_INVALID, str(exc))
    except RegistryError as exc:
        return refusal(409, codes.USER_EXISTS, str(exc))
    path = write_credentials(home, body.name, str(request.url.origin()))
    return answer(UserAdded(user=user_row(registry.user(body.name)), credentials=str(path)), 201)


async def remove_user(request: web.Request) -> web.Response:
    require_admin(request, "remove users")
    name = request.match_info["name"]
    if name == caller_of(request).user:
        return refusal(409, codes.USER_SELF, "an administrator cannot remove themselves")
    try:
        request.app[PRINCIPALS].fresh().remove_user(name)
    except UnknownPrincipalError as exc:
        return refusal(404, codes.USER_UNKNOWN, str(exc))
    credentials_path(request.app[SETTINGS]["home"], name).unlink(missing_ok=True)
    return answer(UserRemoved(removed=name))
