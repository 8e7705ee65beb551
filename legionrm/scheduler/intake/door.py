"""Who may make each call of a group: the door of :mod:`legionrm.scheduler.intake`.

The gateway verified each user's own signed HTTP call; it sends the calls
that arrived together as one group, signed once by the gateway agent
(``intake_batch``: submits and cancels, each item naming its user, in the
compact form of :mod:`legionrm.models.intake`).  The
group's proof must verify and be the gateway agent's (else the whole call
is refused, as any call with a bad proof is); each item's user must be a
user of the registry (else that item alone is refused, ``auth.unknown_user``,
as a proof acting for them would be).  Then every rule of a single call
applies to each item as that user's
(:meth:`~legionrm.scheduler.door.SchedulerDoor.admit` for a submit, owner or
administrator for a cancel).  An open door (no guard) takes the items as
they are, as it takes single calls.

Replies cross Ray in a list, one per item: an answer in its compact form,
or the exception that item met (made picklable: one that is not becomes a
:class:`~legionrm.errors.SchedulingError` with its text).
"""

from __future__ import annotations

import pickle
from typing import Any

from pydantic import ValidationError

from legionrm import codes
from legionrm.auth import VerifiedCaller, may_act_on
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import ReloadingRegistry, raise_if_refused
from legionrm.auth.proof import DELEGATE_KIND
from legionrm.errors import SchedulingError
from legionrm.models import RequestInfo, Refusal, SchedulerResponse, SchedulingRequest
from legionrm.models.intake import Cancel, Cancelled, Submit, Submitted, pack_replies, unpack_items
from legionrm.scheduler.confirm import refused_at_door


def intake_batch(door: Any, items: list[Submit | Cancel] | str, proof: Any = None) -> list[Any] | bytes:
    """Each :class:`Submit` of ``items`` submitted as its user's, each :class:`Cancel` cancelled as its
    user's (the request's owner or an administrator), all in one group (the submits first, one durable
    write); one reply per item, in order: :class:`Submitted`, :class:`Cancelled`, or the error it met.
    ``items`` packed (:func:`~legionrm.models.intake.pack_items`' text, as the gateway sends them): the
    proof is checked over the text, then its items read, and the replies come packed
    (:func:`~legionrm.models.intake.pack_replies`)."""
    _from_gateway(door, proof, "intake_batch", {"items": items})  # the proof covers the items as they came
    packed = isinstance(items, str)
    group = unpack_items(items) if packed else items
    callers = _callers(door, "intake_batch", group)
    out: list[Any] = [None] * len(callers)
    submits: list[tuple[int, SchedulingRequest]] = []
    cancels: list[tuple[int, tuple[str, str]]] = []
    intake = door.core.queue.intake
    for i, (item, who) in enumerate(zip(group, callers)):
        try:
            if isinstance(item, Submit):
                try:
                    request = SchedulingRequest.model_validate_json(item.request)
                except ValidationError as exc:  # the gateway sends what it validated: never, short of a bug
                    raise SchedulingError(f"a submit's request is not a valid SchedulingRequest: "
                                          f"{exc.error_count()} bad field(s)") from None
                got = (refused_at_door(request, who) if isinstance(who, Refusal) else
                       request if who is None else door.admit(who, request))
                if isinstance(got, SchedulingRequest):
                    submits.append((i, got))
                else:
                    out[i] = got
                continue
            if isinstance(who, Refusal):
                raise AuthRefusedError(who.code, who.reason, who.by)
            if who is not None:
                raise_if_refused(may_act_on(who, intake.owner(item.request_id), admin_may=True))
            cancels.append((i, (item.request_id, item.reason)))
        except Exception as exc:  # noqa: BLE001 -- each item answers for itself
            out[i] = exc
    done, gone = intake.take([r for _, r in submits], [c for _, c in cancels])
    for (i, _), reply in zip(submits, done):
        out[i] = reply
    for (i, _), reply in zip(cancels, gone):
        out[i] = reply
    replies = [_compact(r) for r in out]
    return pack_replies(replies) if packed else replies


def _from_gateway(door: Any, proof: Any, call: str, args: dict[str, Any]) -> None:
    """Nothing on an open door or when ``proof`` is the gateway agent's over ``args``; else AuthRefusedError."""
    signer = None if door.guard is None else door.guard.require(proof, call, args)
    if signer is not None and signer.kind != DELEGATE_KIND:
        raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"{signer.name!r} may not send calls of other users", "scheduler")


def _callers(door: Any, call: str, items: Any) -> list[VerifiedCaller | Refusal | None]:
    """Each item's caller (None on an open door); SchedulingError when ``items`` is not a list of Submit
    and Cancel items."""
    if not isinstance(items, list) or not all(isinstance(it, (Submit, Cancel)) for it in items):
        raise SchedulingError(f"{call} takes a list of Submit and Cancel items")
    if door.guard is None:
        return [None] * len(items)
    registry, known = door.guard.verifier.registry, {}
    if isinstance(registry, ReloadingRegistry):  # one look at the registry's file for the whole group
        registry = registry.fresh()
    out: list[VerifiedCaller | Refusal | None] = []
    for user in (it.user if isinstance(it.user, str) else "" for it in items):
        if user not in known:
            p = registry.principal(user)
            known[user] = (VerifiedCaller.of(p, call) if p is not None and p.is_user else
                           Refusal(code=codes.AUTH_UNKNOWN_USER, by="scheduler", reason=f"no user {user!r} in the registry"))
        out.append(known[user])
    return out


def _compact(reply: Any) -> Any:
    """``reply`` as it crosses Ray: an answer as its compact form, an exception that does not pickle as a
    SchedulingError of its text."""
    if isinstance(reply, SchedulerResponse):
        return Submitted(reply.request_id, reply.ok, reply.state, reply.model_dump_json())
    if isinstance(reply, RequestInfo):
        return Cancelled(reply.model_dump_json())
    if isinstance(reply, BaseException):
        try:
            pickle.loads(pickle.dumps(reply))
        except Exception:  # noqa: BLE001
            return SchedulingError(f"{type(reply).__name__}: {reply}")
    return reply


class IntakeCalls:
    """The Scheduler actor's group call (a mixin of :class:`~legionrm.scheduler.actor.SchedulerActor`)."""

    door: Any

    def intake_batch(self, items: list[Submit | Cancel] | str, proof: Any = None) -> list[Any] | bytes:
        """Many users' submits and cancels, one durable write (:func:`intake_batch`)."""
        return self.door.intake_batch(items, proof)  # type: ignore[no-any-return]
