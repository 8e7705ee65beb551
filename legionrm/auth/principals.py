"""Who can be proven: principals, their kinds and roles, and the naming rules.

A :class:`Principal` is a user (``kind="user"``) or an agent: a part of the
system acting in its own name, such as a host, vault or class object, or the
Scheduler.  Users and agents share one namespace without clashing, because an
agent's principal name is ``"<kind>:<name>"`` (``"host:h1"``) and a user name
may not contain ``:``.

Groups, roles and owned hosts are facts of the registry; a caller never
supplies them.  Every user has the role ``user``; ``owner`` lets a user change
the policy of the hosts listed in ``owns``; ``admin`` lets a user vary hosts,
set the Collection or Enactor, add users and stop the system.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from legionrm.auth.errors import InvalidNameError
from legionrm.auth.keys import decode_public_key

Role = Literal["user", "owner", "admin"]
ROLES: tuple[str, ...] = get_args(Role)
AgentKind = Literal["host", "vault", "class", "scheduler", "collection", "enactor", "dashboard", "gateway"]
AGENT_KINDS: tuple[str, ...] = get_args(AgentKind)
RESOURCE_KINDS: tuple[str, ...] = ("host", "vault", "class")  # agents that write their own Collection record
Kind = Literal["user", "host", "vault", "class", "scheduler", "collection", "enactor", "dashboard", "gateway"]

USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
GROUP_NAME = USER_NAME
AGENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,127}")  # host names: "node-01.example"
OS_USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")  # a POSIX login name (useradd's own rule)
AGENT_SEP = ":"


def check_name(name: object, what: str, pattern: re.Pattern[str] = USER_NAME) -> str:
    """``name`` if it is a valid ``what`` (user, group, host ...), else ``InvalidNameError``
    saying what is wrong and what is allowed."""
    if not isinstance(name, str):
        raise InvalidNameError(f"{what} name must be a string, not {type(name).__name__}")
    if not pattern.fullmatch(name):
        raise InvalidNameError(
            f"{what} name {name!r} is not valid: it must match {pattern.pattern} "
            f"(at most {_max_len(pattern)} characters, no '/', ':' or spaces)"
        )
    return name


def _max_len(pattern: re.Pattern[str]) -> int:
    m = re.search(r"\{0,(\d+)\}", pattern.pattern)
    return 1 + int(m.group(1)) if m else 0


def agent_principal(kind: str, name: str) -> str:
    """The principal name of agent ``name`` of ``kind`` (``host``, ``h1`` -> ``host:h1``)."""
    if kind not in AGENT_KINDS:
        raise InvalidNameError(f"agent kind {kind!r} is not one of {', '.join(AGENT_KINDS)}")
    return f"{kind}{AGENT_SEP}{check_name(name, kind, AGENT_NAME)}"


def normal_roles(roles: Iterable[str]) -> tuple[str, ...]:
    """Sorted unique roles, always including ``user``; ``InvalidNameError`` for an unknown role."""
    if isinstance(roles, str):
        roles = (roles,)
    out = {"user"}
    for role in roles:
        if role not in ROLES:
            raise InvalidNameError(f"role {role!r} is not one of {', '.join(ROLES)}")
        out.add(role)
    return tuple(sorted(out))


def normal_names(names: Iterable[str], what: str, pattern: re.Pattern[str] = GROUP_NAME) -> tuple[str, ...]:
    """Sorted unique valid names (groups, owned hosts)."""
    if isinstance(names, str):
        names = (names,)
    return tuple(sorted({check_name(n, what, pattern) for n in names}))


class Principal(BaseModel):
    """One registered principal: its name, kind, public key and, for users,
    groups, roles and owned hosts.  Validated on every load, so a hand-edited
    registry file cannot smuggle in a bad name or role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Kind = "user"
    public_key: str
    groups: tuple[str, ...] = ()
    roles: tuple[Role, ...] = ()
    owns: tuple[str, ...] = ()
    os_user: str | None = None
    """The OS account this user's work runs as (None: the account of the user's
    own name); see :mod:`legionrm.hostobj.runner.owner`."""

    @field_validator("os_user")
    @classmethod
    def _os_user(cls, v: str | None) -> str | None:
        return None if v is None else check_name(v, "OS account", OS_USER_NAME)

    @field_validator("groups")
    @classmethod
    def _groups(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return normal_names(v, "group")

    @field_validator("owns")
    @classmethod
    def _owns(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return normal_names(v, "host", AGENT_NAME)

    @model_validator(mode="after")
    def _shape(self) -> Principal:
        decode_public_key(self.public_key)  # ValueError (pydantic: ValidationError) if not a key
        if self.kind == "user":
            check_name(self.name, "user")
            object.__setattr__(self, "roles", normal_roles(self.roles))
        else:
            kind, _, rest = self.name.partition(AGENT_SEP)
            if kind != self.kind or agent_principal(kind, rest) != self.name:
                raise InvalidNameError(f"agent principal {self.name!r} must be named '{self.kind}:<name>'")
            if self.groups or self.roles or self.owns or self.os_user:
                raise InvalidNameError(f"agent {self.name!r} has no groups, roles, owned hosts or OS account")
        return self

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    @property
    def local_name(self) -> str:
        """The name without the agent kind (``host:h1`` -> ``h1``; a user: the user)."""
        return self.name if self.is_user else self.name.partition(AGENT_SEP)[2]
