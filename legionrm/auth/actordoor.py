"""The door of every actor call that is not a user's request: views and housekeeping.

Issue 15, "every view respects access" and "only the system runs the
system".  The work-changing calls of a resource actor have their own door
(:mod:`legionrm.auth.hostdoor`); this one covers the rest, with one signed
proof per call (:mod:`legionrm.auth.proof`) checked by a
:class:`~legionrm.auth.guard.Guard`:

- **views** (:meth:`ActorDoor.viewer`): ``list_instances``,
  ``reservations``, ``check_reservation(s)``, ``record(s)``, ``names``,
  ``state``, a pool's ``report``...  The Scheduler, Enactor and dashboard
  agents and administrators see everything (:data:`SEE_ALL`); a user sees
  only their own instances and reservations (:func:`own`), and only the
  resources their access allows (:func:`visible`, ``auth.forbidden`` for a
  single one they may not see); any other agent sees no one's work.
- **housekeeping** (:meth:`ActorDoor.require_system`): ``audit_views``,
  ``heartbeat``, ``expire``, ``cancel_requests``, ``instance_stopped``,
  ``add_resources``, a pool's ``admit`` / ``release``, the Enactor's routing
  tables, ``shutdown``: only the Scheduler or Enactor agent (and, where the
  call site says so, an administrator); anyone else gets ``auth.forbidden``.

Refusals are raised as :class:`~legionrm.auth.errors.AuthRefusedError`
(``auth.no_proof``, a proof code, ``auth.forbidden`` or ``auth.not_owner``),
except where an answer has a slot per item (``check_reservations``), which
holds the refusal.  ``guard=None``: an open door (in-process systems, tests).
Pure: no Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from legionrm import codes
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import DASHBOARD, ENACTOR, SCHEDULER, Guard
from legionrm.auth.proof import VerifiedCaller
from legionrm.models import Identity, Refusal

T = TypeVar("T")

SYSTEM = (SCHEDULER, ENACTOR)
"""Agents that run the system: they may do its housekeeping."""
SEE_ALL = (SCHEDULER, ENACTOR, DASHBOARD)
"""Agents that see every resource and everyone's work (the dashboard filters for its users itself)."""


class ActorDoor:
    """Checks the proof of a view or housekeeping call on one actor (``by`` names it in refusals)."""

    def __init__(self, guard: Guard | None, by: str) -> None:
        self.guard, self.by = guard, by

    @property
    def open(self) -> bool:
        return self.guard is None

    def caller(self, proof: Any, call: str, args: Any) -> VerifiedCaller | None:
        """The verified caller (None on an open door); raises AuthRefusedError."""
        if self.guard is None:
            return None
        got = self.guard.check(proof, call, args)
        if isinstance(got, Refusal):
            raise AuthRefusedError(got.code, got.reason, self.by)
        return got

    def viewer(self, proof: Any, call: str, args: Any) -> VerifiedCaller | None:
        """Whom a view is filtered for: None when the caller sees everything (an
        open door, an administrator, a :data:`SEE_ALL` agent).  Raises AuthRefusedError."""
        who = self.caller(proof, call, args)
        if who is None or who.is_admin or who.name in SEE_ALL:
            return None
        return who

    def require_system(self, proof: Any, call: str, args: Any, *, admin: bool = False,
                       agents: tuple[str, ...] = SYSTEM) -> VerifiedCaller | None:
        """Raise ``auth.forbidden`` unless ``agents`` (default: the Scheduler and
        Enactor agents), or with ``admin`` an administrator, make this call."""
        who = self.caller(proof, call, args)
        if who is None or who.name in agents or (admin and who.is_admin):
            return who
        whom = " or ".join([*agents, *(["an administrator"] if admin else [])])
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"only {whom} may call {call}; {who.name!r} may not", self.by)


def own(who: VerifiedCaller | None, items: Iterable[T], user_of: Callable[[T], str | None]) -> list[T]:
    """``items`` that ``who`` may see: all for None, else those whose user is ``who``."""
    if who is None:
        return list(items)
    return [x for x in items if user_of(x) == who.name]


def identity_of(who: VerifiedCaller) -> Identity:
    """The identity a resource's access list judges (the registry's groups)."""
    return who.identity()


def visible(who: VerifiedCaller | None, items: Iterable[T], admits: Callable[[T, Identity], bool]) -> list[T]:
    """``items`` (resources) that ``who`` may see: all for None, else those whose access admits them."""
    if who is None:
        return list(items)
    ident = identity_of(who)
    return [x for x in items if admits(x, ident)]


def require_visible(who: VerifiedCaller | None, name: str, admitted: Callable[[Identity], bool], by: str) -> None:
    """Raise ``auth.forbidden`` when ``who`` may not see resource ``name``."""
    if who is not None and not admitted(identity_of(who)):
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"{name!r} is not a resource {who.name!r} may use", by)


def own_or_refusal(who: VerifiedCaller | None, item: T, user: str | None, what: str, by: str) -> T | Refusal:
    """``item`` when ``who`` may see it (None: everyone; else its ``user`` is ``who``),
    else an ``auth.not_owner`` refusal (unknown and someone else's read the same)."""
    if who is None or (user is not None and user == who.name):
        return item
    return Refusal(code=codes.AUTH_NOT_OWNER, reason=f"{who.name!r} is not the holder of {what}", by=by)
