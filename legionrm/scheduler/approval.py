"""Legion's step 6: the Scheduler confirms the Enactor's fully reserved
schedule before anything starts.  Pure."""

from __future__ import annotations

from legionrm.models import Refusal, ScheduleProposal


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
