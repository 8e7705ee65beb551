"""The door of a resource actor (host, host group, vault) and of a class object:
who may stop, cancel, start and create there.  Pure: no Ray.

Issue 15, host level.  A host's token ids and instance ids are not secrets
(they are in logs, listings and every answer), so knowing one must not be
enough to act on it.  Each call on a resource actor that changes someone's
work arrives with a signed call proof (:mod:`legionrm.auth.proof`), checked
with the registry like the Scheduler's, and then:

- ``cancel_reservation(s)``: the Scheduler or Enactor agent, or the user the
  Scheduler *attested* as the reservation's holder (the host's own record,
  never the token's text);
- ``stop_object(s)``: the Scheduler or Enactor agent, a class object's agent
  (it stops what it created), or the attested holder of the reservation the
  instance runs on;
- ``start_object(s)``: only with the Scheduler's approval, i.e. a start
  signed by the Enactor agent (which starts only approved schedules) or by a
  class object's agent (which creates only on an Enactor-signed
  ``create_instance``), and only for the holder the Scheduler attested for
  that reservation: a user, even the token's holder, never starts directly;
- a vault's ``use`` / ``release``: the Enactor or a class object's agent;
- a class object's ``create_instance`` / ``create_instances``: only the Enactor agent;
  ``destroy_instance``: the Scheduler or Enactor agent, or the instance's user.

Codes: ``auth.no_proof`` (none), the proof codes (:mod:`legionrm.codes`),
``auth.forbidden`` (a caller who may never make this call: a user starting,
a host agent cancelling), ``auth.not_owner`` (a user acting on a token or
instance that is not theirs, or that the resource does not know: the answer
does not say which).  ``guard=None``: an open door (in-process systems, tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from legionrm import codes
from legionrm.auth.guard import ENACTOR, SCHEDULER, Guard
from legionrm.auth.proof import VerifiedCaller
from legionrm.models import InstanceRef, Refusal, ReservationToken, StartRequest

ID_SEP = "~"  # token and instance ids are "<resource>~<serial>" (legionrm.hostobj.tokens.TOKEN_ID_SEP)
MANAGERS = (SCHEDULER, ENACTOR)
"""Agents that may cancel and stop anyone's work (they act for the system)."""
STARTERS = (ENACTOR,)
"""Agents that may start, besides class objects' own agents."""

HolderOf = Callable[[str, str], "str | None"]
"""(resource name, token or instance id) -> the attested holder's user name, or None if unknown."""


def token_route(item: Any) -> tuple[str, str]:
    """(issuing resource, token id) of a token, a token id or a (resource, token id) pair."""
    if isinstance(item, ReservationToken):
        return item.issuer, item.token_id
    if isinstance(item, (tuple, list)):
        return str(item[0]), str(item[1])
    head, sep, _ = str(item).rpartition(ID_SEP)
    return (head if sep else ""), str(item)


def instance_route(item: Any) -> tuple[str, str]:
    """(host, instance id) of an InstanceRef, an instance id or a (host, instance id) pair."""
    if isinstance(item, InstanceRef):
        return item.host, item.instance_id
    return token_route(item)


def create_args(host: Any, vault: Any, token: ReservationToken, args: Any, vault_token: ReservationToken | None,
                holder: Any) -> dict[str, Any]:
    """What a class object's ``create_instance`` proof is bound to (the Enactor signs the same)."""
    return {"host": host, "vault": vault, "token": token, "args": dict(args or {}), "vault_token": vault_token,
            "holder": holder}


def _refuse(code: str, reason: str, by: str) -> Refusal:
    return Refusal(code=code, reason=reason, by=by)


class ResourceDoor:
    """Authenticates and authorises the work-changing calls of one resource actor.

    ``token_holder(resource, token_id)`` and ``instance_holder(host, instance_id)``
    answer from the resources' own records (the user the Scheduler attested
    at reservation), or None for what they do not know.
    """

    def __init__(self, guard: Guard | None, *, token_holder: HolderOf, instance_holder: HolderOf | None = None,
                 by: str = "host") -> None:
        self.guard, self.by = guard, by
        self.token_holder = token_holder
        self.instance_holder = instance_holder or (lambda _r, _i: None)

    @property
    def open(self) -> bool:
        return self.guard is None

    def caller(self, proof: Any, call: str, args: Any) -> VerifiedCaller | Refusal | None:
        """The verified caller, its refusal, or None on an open door."""
        if self.guard is None:
            return None
        got = self.guard.check(proof, call, args)
        return got.model_copy(update={"by": self.by}) if isinstance(got, Refusal) else got

    # --- one decision per item ------------------------------------------------------------

    def may_cancel(self, who: VerifiedCaller, item: Any) -> Refusal | None:
        if who.name in MANAGERS:
            return None
        resource, tid = token_route(item)
        return self._own(who, self.token_holder(resource, tid), f"reservation {tid!r}")

    def may_stop(self, who: VerifiedCaller, item: Any) -> Refusal | None:
        if who.name in MANAGERS or who.kind == "class":
            return None
        host, iid = instance_route(item)
        return self._own(who, self.instance_holder(host, iid), f"instance {iid!r}")

    def may_start(self, who: VerifiedCaller, start: StartRequest) -> Refusal | None:
        if who.name not in STARTERS and who.kind != "class":
            return _refuse(codes.AUTH_FORBIDDEN, f"{who.name!r} may not start objects here: a start needs the Scheduler's "
                           f"approval (signed by the Enactor or a class object)", self.by)
        attested = self.token_holder(start.token.issuer, start.token.token_id)
        if attested is not None and attested != start.holder.user:
            return _refuse(codes.AUTH_NOT_OWNER, f"reservation {start.token.token_id!r} was attested for {attested!r}, "
                           f"not {start.holder.user!r}", self.by)
        return None

    def may_use_vault(self, who: VerifiedCaller) -> Refusal | None:
        if who.name in STARTERS or who.kind == "class":
            return None
        return _refuse(codes.AUTH_FORBIDDEN, f"{who.name!r} may not use or release vault space directly", self.by)

    def _own(self, who: VerifiedCaller, holder: str | None, what: str) -> Refusal | None:
        if not who.is_user:
            return _refuse(codes.AUTH_FORBIDDEN, f"agent {who.name!r} may not act on {what}", self.by)
        if holder is None or holder != who.name:  # unknown or someone else's: the same answer
            return _refuse(codes.AUTH_NOT_OWNER, f"{who.name!r} is not the attested holder of {what}", self.by)
        return None

    # --- gating a call ----------------------------------------------------------------------

    def gate(self, proof: Any, call: str, args: Any, items: Sequence[Any],
             decide: Callable[[VerifiedCaller, Any], Refusal | None],
             run: Callable[[list[Any]], list[Any]]) -> list[Any]:
        """Check the proof once for the whole call, decide each item, run the
        allowed ones in one batch and put the answers back in input order
        (a refusal where an item was refused)."""
        if self.guard is None:
            return run(list(items))
        who = self.caller(proof, call, args)
        if isinstance(who, Refusal):
            return [who for _ in items]
        assert who is not None
        verdicts = [decide(who, it) for it in items]
        allowed = [it for it, v in zip(items, verdicts) if v is None]
        answers = iter(run(allowed) if allowed else [])
        return [v if v is not None else next(answers) for v in verdicts]

    def gate_one(self, proof: Any, call: str, args: Any, item: Any,
                 decide: Callable[[VerifiedCaller, Any], Refusal | None], run: Callable[[Any], Any]) -> Any:
        """:meth:`gate` for a single-item call."""
        return self.gate(proof, call, args, [item], decide, lambda xs: [run(x) for x in xs])[0]


class ClassDoor:
    """Authenticates and authorises a class object's ``create_instance`` /
    ``destroy_instance``: see the module doc."""

    def __init__(self, guard: Guard | None, instance_user: Callable[[str], str | None], by: str = "class") -> None:
        self.guard, self.instance_user, self.by = guard, instance_user, by

    def check_create(self, proof: Any, args: Any, call: str = "create_instance") -> Refusal | None:
        """None when the Enactor agent signed ``call`` over ``args`` (``create_instance``, or
        ``create_instances`` over ``{"batch": [...]}``: one proof for the whole batch), else the refusal."""
        if self.guard is None:
            return None
        who = self.guard.check(proof, call, args)
        if isinstance(who, Refusal):
            return who.model_copy(update={"by": self.by})
        if who.name not in STARTERS:
            return _refuse(codes.AUTH_FORBIDDEN, f"only the Enactor creates instances (after the Scheduler approved), "
                           f"not {who.name!r}", self.by)
        return None

    def check_destroy(self, proof: Any, args: Any, instance_id: str) -> Refusal | None:
        if self.guard is None:
            return None
        who = self.guard.check(proof, "destroy_instance", args)
        if isinstance(who, Refusal):
            return who.model_copy(update={"by": self.by})
        if who.name in MANAGERS:
            return None
        if not who.is_user or self.instance_user(instance_id) != who.name:
            return _refuse(codes.AUTH_NOT_OWNER, f"{who.name!r} may not destroy instance {instance_id!r}", self.by)
        return None
