"""Objects a scheduler is asked to activate: which run already, which it
cannot find.  Pure; the Scheduler's ``activate=[...]`` goes through here."""

from __future__ import annotations

from typing import Iterable, Mapping

from legionrm.models import InstanceRef, PlacementFailure

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
