"""Starting what an advance reservation holds (issue 18).

A request with a future start is enacted with ``create=False`` and a
``start``: every host (and vault) is reserved for its window and the tokens
go back to the Scheduler.  At the start time the Scheduler hands the
placements and their tokens back (:class:`~legionrm.models.ReservedStart`)
and :func:`start_reserved` has the class objects create every instance with
them, all or nothing: when one is refused (a veto, an expired token, a dead
host) the instances started are stopped, every token is cancelled and the
result says which placement failed and why.  With ``release`` it only
cancels the tokens (the request was cancelled).  Pure; talks to resources
only through the port.
"""

from __future__ import annotations

from legionrm import codes
from legionrm.enactor.ports import CreateItem, ResourcePort
from legionrm.models import (
    EnactResult,
    InstanceRef,
    PlacementFailure,
    Refusal,
    ReservedStart,
    ScheduleAttempt,
)


def start_reserved(port: ResourcePort, held: ReservedStart) -> EnactResult:
    """Create every instance of ``held`` with its tokens, or none (see the module)."""
    tokens = [*held.host_tokens.values(), *held.vault_tokens.values()]
    if held.release:
        port.cancel(tokens)
        return EnactResult(ok=False, reservations_released=len(tokens))
    failures: list[PlacementFailure] = []
    items: list[CreateItem] = []
    for p in held.placements:
        token = held.host_tokens.get(p.key)
        if token is None:
            failures.append(PlacementFailure(key=p.key, resource=p.host, code=codes.TOKEN_MISSING, stage="start",
                                             reason="the advance reservation holds no token for it"))
            continue
        items.append(CreateItem(request_id=f"{held.request_id}/{p.key}/start/ahead", key=p.key,
                                class_name=p.class_name, host=p.host, vault=p.vault, host_token=token,
                                vault_token=held.vault_tokens.get(p.key), holder=held.holder,
                                args=held.args.get(p.key, {}), group=p.group))
    answers = port.create_instances(items) if items and not failures else []
    started: list[InstanceRef] = []
    for item, ans in zip(items, answers):
        if isinstance(ans, InstanceRef):
            started.append(ans)
        else:
            r = ans if isinstance(ans, Refusal) else Refusal(code=codes.RESOURCE_DEAD, reason=repr(ans))
            failures.append(PlacementFailure(key=item.key, resource=r.by or item.host, code=r.code, reason=r.reason,
                                             stage="start", lasting=r.lasting))
    if failures:
        if started:
            port.stop_instances(started)
        port.cancel(tokens)
        return EnactResult(ok=False, placements=held.placements, reservations_released=len(tokens), attempts=(
            ScheduleAttempt(master=0, deltas_tried=0, failures=tuple(failures), succeeded=False),))
    return EnactResult(ok=True, master=0, placements=held.placements, host_tokens=dict(held.host_tokens),
                       vault_tokens=dict(held.vault_tokens), instances=tuple(started),
                       attempts=(ScheduleAttempt(master=0, deltas_tried=0, failures=(), succeeded=True),))
