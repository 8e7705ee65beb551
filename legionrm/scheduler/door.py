"""The Scheduler's door: who may call what, in front of the :class:`Scheduler` core.

Every user-facing call arrives with a signed proof (:mod:`legionrm.auth.proof`)
over the call's name and its arguments; the door verifies it with its
:class:`~legionrm.auth.guard.Guard` and then applies the roles
(:mod:`legionrm.auth.roles`):

- ``scheduleObjects``: the request's identity is replaced by the verified
  caller's (their name and the registry's groups, never what the request
  claims); ``activate`` may name only the caller's own instances;
- ``list_requests``: a user sees only their own requests (an admin all);
- ``request_info`` / ``cancel``: only the request's owner (or an admin);
- ``setCollection`` / ``setEnactor``: administrators only;
- ``approve``: only the Enactor agent;
- elastic jobs: submitted in the caller's name; completed or updated only by
  their owner (or an admin).

A refusal of ``scheduleObjects`` is an ordinary not-ok response with one
failure carrying the ``auth.*`` code; other calls raise
:class:`~legionrm.auth.AuthRefusedError` (code on it).  ``guard=None`` means no
authentication: every call passes through unchanged (in-process systems, tests).
Pure: no Ray here.
"""

from __future__ import annotations

from typing import Any

from legionrm.auth import VerifiedCaller, may_act_on, require_admin
from legionrm.auth.guard import ENACTOR, Guard, raise_if_refused
from legionrm.models import (
    ElasticJobRequest,
    PlacementFailure,
    Refusal,
    RequestInfo,
    ScheduleProposal,
    SchedulerResponse,
    SchedulingRequest,
)
from legionrm.scheduler.scheduler import Scheduler


class SchedulerDoor:
    """Authenticates and authorises calls to ``core``; see the module doc."""

    def __init__(self, core: Scheduler, guard: Guard | None = None, enactor: str = ENACTOR) -> None:
        self.core, self.guard, self.enactor = core, guard, enactor

    @property
    def open(self) -> bool:
        return self.guard is None

    def caller(self, proof: Any, call: str, args: Any) -> VerifiedCaller | None:
        """The verified caller (None on an open door); raises AuthRefusedError."""
        return None if self.guard is None else self.guard.require(proof, call, args)

    # --- requests ---------------------------------------------------------------------

    def scheduleObjects(self, request: SchedulingRequest, proof: Any = None) -> SchedulerResponse:
        if self.guard is None:
            return self.core.scheduleObjects(request)
        who = self.guard.check(proof, "scheduleObjects", {"request": request})
        if isinstance(who, Refusal):
            return _refused(request, who)
        request = request.model_copy(update={"identity": who.identity(request.identity.class_name)})
        for iid in request.activate:
            entry = self.core.book.owner_of(iid)
            if entry is not None and not (ok := may_act_on(who, entry.user, admin_may=True)):
                return _refused(request, ok, key=iid)
        return self.core.scheduleObjects(request)

    def list_requests(self, user: str | None = None, state: str | None = None, proof: Any = None) -> list[RequestInfo]:
        who = self.caller(proof, "list_requests", {"user": user, "state": state})
        if who is not None and not who.is_admin:
            if user is not None and user != who.name:
                raise_if_refused(may_act_on(who, user))
            user = who.name
        return self.core.list_requests(user, state)

    def request_info(self, request_id: str, proof: Any = None) -> RequestInfo:
        who = self.caller(proof, "request_info", {"request_id": request_id})
        info = self.core.request_info(request_id)
        if who is not None:
            raise_if_refused(may_act_on(who, info.user, admin_may=True))
        return info

    def cancel(self, request_id: str, reason: str = "cancelled by its user", proof: Any = None) -> RequestInfo:
        who = self.caller(proof, "cancel", {"request_id": request_id, "reason": reason})
        if who is not None:
            raise_if_refused(may_act_on(who, self.core.request_info(request_id).user, admin_may=True))
        return self.core.cancel(request_id, reason)

    # --- administration ----------------------------------------------------------------

    def require_admin(self, proof: Any, call: str, args: Any, action: str) -> None:
        who = self.caller(proof, call, args)
        if who is not None:
            raise_if_refused(require_admin(who, action))

    def approve(self, proposal: ScheduleProposal, proof: Any = None) -> bool | Refusal:
        if self.guard is not None:
            who = self.guard.check(proof, "approve", {"proposal": proposal})
            if isinstance(who, Refusal):
                return who
            if who.name != self.enactor:
                return Refusal(code="auth.forbidden", by="scheduler",
                               reason=f"only the Enactor ({self.enactor}) asks for approval, not {who.name!r}")
        return self.core.approve(proposal)

    # --- elastic jobs --------------------------------------------------------------------

    def elastic_request(self, request: ElasticJobRequest, proof: Any = None) -> ElasticJobRequest:
        """``request`` in the verified caller's name."""
        who = self.caller(proof, "submit_elastic", {"request": request})
        return request if who is None else request.model_copy(update={"user": who.name})

    def elastic_owner_check(self, owner: str | None, call: str, args: Any, proof: Any = None) -> None:
        """Raise unless the caller owns the elastic job of ``owner`` (or is an admin)."""
        who = self.caller(proof, call, args)
        if who is not None and owner is not None:
            raise_if_refused(may_act_on(who, owner, admin_may=True))


def _refused(request: SchedulingRequest, refusal: Refusal, key: str = "*") -> SchedulerResponse:
    fail = PlacementFailure(key=key, resource=refusal.by or "scheduler", code=refusal.code, reason=refusal.reason,
                            stage="plan", lasting=True)
    return SchedulerResponse(request_id=request.request_id, ok=False, failures=(fail,), state="refused",
                             message=f"{refusal.code}: {refusal.reason}")
