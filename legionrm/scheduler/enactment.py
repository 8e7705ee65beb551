"""The Scheduler's side of enactment: Legion's steps 4 to 6 and the stops.

:class:`Enactment` hands a plan's schedules to the Enactor (an
:class:`~legionrm.models.EnactRequest` in the Scheduler's name), confirms
what the Enactor reports fully reserved (Legion's step 6: it places exactly
the request's instances, :func:`~legionrm.scheduler.confirm.check_proposal`),
and stops instances on their hosts.  The Enactor is built with this
approval (an :data:`~legionrm.scheduler.ports.EnactorFor`), so nothing is
hooked in after construction; ``setEnactor`` swaps it.  Pure: no Ray.
"""

from __future__ import annotations

import threading
from typing import Callable

from legionrm.enactor.after import key_after
from legionrm.models import (
    EnactRequest,
    EnactResult,
    Holder,
    InstanceRef,
    Refusal,
    ScheduleProposal,
    SchedulingRequest,
)
from legionrm.scheduler.confirm import check_proposal
from legionrm.scheduler.planner import Plan
from legionrm.scheduler.ports import EnactorFor, EnactorPort, Stopper, Swappable


class Enactment:
    """Enact plans, approve them, stop instances, for the Scheduler ``name``.
    ``enactor_for`` builds the Enactor from this enactment's :meth:`approve`;
    ``stopper`` stops instances (None: nothing is stopped, as in a dry
    system); ``token_timeout_s`` is how long a reservation's token may wait
    for its start; ``issued`` tells its own reservations from other
    schedulers'.  Thread-safe: each enactment under way is known by its id."""

    def __init__(self, enactor_for: EnactorFor, stopper: Stopper | None = None, *, name: str = "scheduler",
                 token_timeout_s: float = 30.0, issued: Callable[[str], bool] | None = None) -> None:
        self.name = name
        self.issued: Callable[[str], bool] = issued or (lambda issuer: True)
        """Whether a reservation's issuer is this scheduler (it sweeps and audits only those):
        :func:`~legionrm.scheduler.several.issued_by`; without, every one is."""
        self.token_timeout_s = token_timeout_s
        self._stopper = stopper
        self._lock = threading.Lock()
        self._enacting: dict[str, frozenset[str]] = {}  # enactment id -> the placement keys it asked for
        self._enactor: Swappable[EnactorPort] = Swappable(enactor_for(self.approve))

    def enactor(self) -> EnactorPort:
        """The Enactor in use now."""
        return self._enactor.get()

    def set_enactor(self, enactor: EnactorPort) -> EnactorPort:
        """Enact through ``enactor`` from now on; returns the prior one (Legion's ``setEnactor``)."""
        return self._enactor.swap(enactor)

    def enact(self, request: SchedulingRequest, plan: Plan, n: int = 0, ahead: float | None = None,
              timeout_s: float | None = None, attempt: int = 1) -> EnactResult:
        """Enact ``plan``; re-plan ``n`` enacts under its own id (``id~replanN``), and so does
        each later ``attempt`` of a request back from the queue (``id~tN``): a host that
        answered an earlier attempt's reservation must not be asked the same id again;
        ``ahead``: reserve from then and create nothing (an advance reservation);
        ``timeout_s``: its tokens' life (default :attr:`token_timeout_s`)."""
        ident, objs = request.identity, plan.objects
        enact = EnactRequest(
            request_id=request.request_id + (f"~t{attempt}" if attempt > 1 else "") + (f"~replan{n}" if n else ""),
            holder=Holder(user=ident.user, class_name=None, enactor=self.name, groups=ident.groups),
            masters=(), start=ahead, create=ahead is None,
            timeout_s=self.token_timeout_s if timeout_s is None else timeout_s,
            # per placement key: two object requests of one class may differ
            duration_s={k: op.request.walltime_s for op in objs if op.request.walltime_s for k in op.keys},
            args={k: op.request.start_args() for op in objs if op.request.start_args() for k in op.keys},
            after=key_after([op.request for op in objs], [op.keys for op in objs])
        ).replaced(masters=plan.masters)  # the plan's own: a master is made when the Enactor reaches it
        with self._lock:
            self._enacting[enact.request_id] = frozenset(k for op in objs for k in op.keys)
        try:
            return self.enactor().enact_schedule(enact)
        finally:
            with self._lock:
                self._enacting.pop(enact.request_id, None)

    def approve(self, proposal: ScheduleProposal) -> bool | Refusal:
        """Legion's step 6: the Enactor reports a fully reserved schedule and
        the Scheduler confirms it (:func:`~legionrm.scheduler.confirm.check_proposal`)."""
        with self._lock:
            keys = self._enacting.get(proposal.request_id)
        return check_proposal(keys, proposal, self.name)

    def stop(self, ref: InstanceRef, reason: str) -> None:
        """Stop one instance on its host and tell its class (best effort: a
        host that cannot be reached is the watcher's to find)."""
        if self._stopper is None:
            return
        try:
            self._stopper.stop(ref, reason)
        except Exception:  # the host is unreachable; the Scheduler's tick will see it gone
            pass
