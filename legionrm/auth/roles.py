"""Who may do what: small pure checks on a verified caller.

Each check returns :class:`Allowed` (truthy) or a
:class:`~legionrm.models.Refusal` (falsy) with an :mod:`~legionrm.codes`
code, so a call site reads ``if not (ok := may_act_on(caller, owner)): return ok``.

The rules:

- a user acts only on their own requests, instances and reservations
  (``auth.not_owner``); an administrator may act on anyone's only where the
  call site says so (``admin_may=True``), never by default;
- an owner changes only the policy of the hosts the registry says they own
  (``auth.forbidden`` without the owner role, ``auth.not_owner`` for a host
  that is not theirs);
- only an administrator varies hosts, sets the Collection or Enactor, adds
  users or stops the system (``auth.forbidden``);
- a resource record in the Collection is written only by that resource's own
  agent (``auth.wrong_resource``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from legionrm import codes
from legionrm.auth.principals import RESOURCE_KINDS
from legionrm.auth.proof import VerifiedCaller
from legionrm.models import Refusal

ADMIN_ACTIONS = ("vary_hosts", "set_collection", "set_enactor", "add_user", "remove_user", "stop_system")


class Allowed(BaseModel):
    """A typed "yes", with what allowed it (always truthy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = ""

    def __bool__(self) -> bool:
        return True


Outcome = Allowed | Refusal

_OWN, _ADMIN = Allowed(reason="own"), Allowed(reason="admin")  # (frozen: every check may hand out the same one)


def _refuse(code: str, reason: str) -> Refusal:
    return Refusal(code=code, reason=reason, by="auth")


def may_act_on(caller: VerifiedCaller, owner_user: str, *, admin_may: bool = False) -> Outcome:
    """May ``caller`` act on something that belongs to ``owner_user``?"""
    if caller.is_user and caller.name == owner_user:
        return _OWN
    if admin_may and caller.is_admin:
        return _ADMIN
    return _refuse(codes.AUTH_NOT_OWNER, f"{caller.name!r} may not act on what belongs to {owner_user!r}")


def require_admin(caller: VerifiedCaller, action: str = "this") -> Outcome:
    """Is ``caller`` an administrator (for ``action``, named in the refusal)?"""
    if caller.is_admin:
        return _ADMIN
    return _refuse(codes.AUTH_FORBIDDEN, f"only an administrator may {action.replace('_', ' ')}; {caller.name!r} is not one")


def may_change_policy(caller: VerifiedCaller, host: str) -> Outcome:
    """May ``caller`` change the owner policy of ``host``?  Only its registered owner."""
    if not caller.is_user or "owner" not in caller.roles:
        return _refuse(codes.AUTH_FORBIDDEN, f"{caller.name!r} is not a resource owner")
    if host not in caller.owns:
        return _refuse(codes.AUTH_NOT_OWNER, f"{caller.name!r} does not own host {host!r}")
    return Allowed(reason="owner")


def may_write_record(caller: VerifiedCaller, resource: str, kind: str | None = None) -> Outcome:
    """May ``caller`` join, update or leave the Collection record of ``resource``
    (of ``kind``, when known)?  Only that resource's own agent."""
    if caller.kind not in RESOURCE_KINDS:
        return _refuse(codes.AUTH_WRONG_RESOURCE, f"{caller.name!r} is not a resource; only {resource!r} writes its record")
    if caller.local_name != resource or (kind is not None and caller.kind != kind):
        return _refuse(codes.AUTH_WRONG_RESOURCE, f"{caller.name!r} may write only its own record, not {resource!r}")
    return Allowed(reason="self")
