"""What the Scheduler confirms itself: the objects a request asks to
activate (which run already, which it cannot find), and Legion's step 6,
the Enactor's fully reserved schedule.  Pure."""

from __future__ import annotations

from typing import Iterable, Mapping

from legionrm.models import InstanceRef, PlacementFailure, Refusal, ScheduleProposal

ACTIVATE_UNKNOWN = "activate.unknown"


def activation(names: Iterable[str], running: Mapping[str, InstanceRef], by: str
               ) -> tuple[list[InstanceRef], list[PlacementFailure]]:
    """The objects ``names`` asks to activate: those ``running`` already
    (activating one is a no-op and the response lists it), and an
    ``activate.unknown`` failure for every other name (by scheduler ``by``).
    Any failure sinks the whole request before anything is admitted,
    planned or reserved."""
    names = list(names)
    active = [running[n] for n in names if n in running]
    unknown = [
        PlacementFailure(key=n, resource=by, code=ACTIVATE_UNKNOWN, stage="plan",
                         reason=f"no running object {n!r} is known to scheduler {by!r}; "
                                "inert objects cannot be re-activated here: request a new instance")
        for n in names if n not in running
    ]
    return active, unknown


def check_proposal(keys: frozenset[str] | None, proposal: ScheduleProposal, scheduler: str) -> bool | Refusal:
    """True when ``proposal`` places exactly ``keys`` (the placement keys of
    the request this scheduler is enacting); a Refusal by ``scheduler`` when
    no such request is being enacted (``approval.unknown_request``: a stale or
    foreign enactment) or the placements differ (``approval.keys``).  Pool
    admission was charged before planning."""
    if keys is None:
        return Refusal(code="approval.unknown_request", by="scheduler",
                       reason=f"scheduler {scheduler!r} is not scheduling request {proposal.request_id!r}")
    got = frozenset(p.key for p in proposal.placements)
    if got != keys or len(got) != len(proposal.placements):
        missing, extra = sorted(keys - got), sorted(got - keys)
        return Refusal(code="approval.keys", by="scheduler",
                       reason=f"the schedule does not place exactly the request's instances "
                              f"(missing {missing}, not asked for {extra})")
    return True
