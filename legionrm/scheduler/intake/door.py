"""Who may make each call of a group: the door of :mod:`legionrm.scheduler.intake`.

The gateway verified each user's own signed HTTP call; it sends the calls
that arrived together as one group, signed once by the gateway agent
(``submit_batch`` / ``cancel_batch``, each item naming its user).  The
group's proof must verify and be the gateway agent's (else the whole call
is refused, as any call with a bad proof is); each item's user must be a
user of the registry (else that item alone is refused, ``auth.unknown_user``,
as a proof acting for them would be).  Then every rule of a single call
applies to each item as that user's
(:meth:`~legionrm.scheduler.door.SchedulerDoor.admit` for a submit, owner or
administrator for a cancel).  An open door (no guard) takes the items as
they are, as it takes single calls.

Replies cross Ray in a list, one per item: an answer, or the exception
that item met (made picklable: one that is not becomes a
:class:`~legionrm.errors.SchedulingError` with its text).
"""

from __future__ import annotations

import pickle
from typing import Any

from legionrm import codes
from legionrm.auth import VerifiedCaller, may_act_on
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import raise_if_refused
from legionrm.auth.proof import DELEGATE_KIND
from legionrm.errors import SchedulingError
from legionrm.models import Refusal, SchedulingRequest
from legionrm.scheduler.confirm import refused_at_door


def submit_batch(door: Any, items: list[tuple[str, SchedulingRequest]], proof: Any = None) -> list[Any]:
    """Each ``(user, request)`` of ``items`` submitted as ``user``'s; one reply per item, in order."""
    callers = _callers(door, proof, "submit_batch", {"items": items}, [u for u, _ in items])
    out: list[Any] = [None] * len(items)
    todo: list[tuple[int, SchedulingRequest]] = []
    for i, ((_, request), who) in enumerate(zip(items, callers)):
        if isinstance(who, Refusal):
            out[i] = refused_at_door(request, who)
            continue
        got = request if who is None else door.admit(who, request)
        if isinstance(got, SchedulingRequest):
            todo.append((i, got))
        else:
            out[i] = got
    for (i, _), reply in zip(todo, door.core.queue.intake.submit([r for _, r in todo])):
        out[i] = reply
    return [_portable(r) for r in out]


def cancel_batch(door: Any, items: list[tuple[str, str, str]], proof: Any = None) -> list[Any]:
    """Each ``(user, request_id, reason)`` of ``items`` cancelled as ``user``'s (its owner or an
    administrator); one reply per item, in order: the request's info, or the error it met."""
    callers = _callers(door, proof, "cancel_batch", {"items": items}, [u for u, _, _ in items])
    out: list[Any] = [None] * len(items)
    todo: list[tuple[int, tuple[str, str]]] = []
    for i, ((_, rid, reason), who) in enumerate(zip(items, callers)):
        try:
            if isinstance(who, Refusal):
                raise AuthRefusedError(who.code, who.reason, who.by)
            if who is not None:
                raise_if_refused(may_act_on(who, door.core.queue.intake.owner(rid), admin_may=True))
            todo.append((i, (rid, reason)))
        except Exception as exc:  # noqa: BLE001 -- each item answers for itself
            out[i] = exc
    for (i, _), reply in zip(todo, door.core.queue.intake.cancel([x for _, x in todo])):
        out[i] = reply
    return [_portable(r) for r in out]


def _callers(door: Any, proof: Any, call: str, args: dict[str, Any], users: list[str]
             ) -> list[VerifiedCaller | Refusal | None]:
    """Each item's caller (None on an open door); AuthRefusedError when the group's proof is not the gateway's."""
    if door.guard is None:
        return [None] * len(users)
    signer = door.guard.require(proof, call, args)
    if signer.kind != DELEGATE_KIND:
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"{signer.name!r} may not send calls of other users", "scheduler")
    registry, known = door.guard.verifier.registry, {}
    out: list[VerifiedCaller | Refusal | None] = []
    for user in users:
        if user not in known:
            p = registry.principal(user) if isinstance(user, str) else None
            known[user] = (VerifiedCaller.of(p, call) if p is not None and p.is_user else
                           Refusal(code=codes.AUTH_UNKNOWN_USER, by="scheduler", reason=f"no user {user!r} in the registry"))
        out.append(known[user])
    return out


def _portable(reply: Any) -> Any:
    """``reply`` as it can cross Ray: an exception that does not pickle becomes a SchedulingError of its text."""
    if isinstance(reply, BaseException):
        try:
            pickle.loads(pickle.dumps(reply))
        except Exception:  # noqa: BLE001
            return SchedulingError(f"{type(reply).__name__}: {reply}")
    return reply


class IntakeCalls:
    """The Scheduler actor's group calls (a mixin of :class:`~legionrm.scheduler.actor.SchedulerActor`)."""

    door: Any

    def submit_batch(self, items: list[tuple[str, SchedulingRequest]], proof: Any = None) -> list[Any]:
        """Many users' submits, one durable write (:func:`submit_batch`)."""
        return self.door.submit_batch(items, proof)  # type: ignore[no-any-return]

    def cancel_batch(self, items: list[tuple[str, str, str]], proof: Any = None) -> list[Any]:
        """Many users' cancels, one durable write (:func:`cancel_batch`)."""
        return self.door.cancel_batch(items, proof)  # type: ignore[no-any-return]
