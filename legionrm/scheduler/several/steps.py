"""All or nothing over many actors: apply a reload's steps in order, undo them on a failure.

A reload changes several actors one after the other (the pool owner, each
scheduler, the actors that carry hosts and vaults), and any one of them may
refuse, raise or die part way.  :func:`all_or_nothing` runs the
:class:`Step`\\ s in order; when one fails it runs the ``undo`` of that step
and of every step before it, latest first.  Each ``undo`` sets back what its
step would change, to what it was before, whatever of it changed: it is
idempotent, so it is run for the failing step too (a step may have changed
some of its actors before it failed) and is harmless for what did not
change.  Pure (no Ray): the steps are coroutines the caller builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Sequence

from legionrm import codes
from legionrm.models import Refusal

Call = Callable[[], Awaitable[Refusal | None]]
"""A step's work: None when done, else the refusal (it may raise too)."""


@dataclass(frozen=True)
class Step:
    """One change (``name`` says what, in the answer) and what sets it back."""

    name: str
    apply: Call
    undo: Call


async def _run(call: Call) -> Refusal | None:
    try:
        return await call()
    except Exception as exc:  # an actor that failed or died: the step failed; the reload says so in one line
        line = (str(exc).strip().splitlines() or [""])[-1]
        return Refusal(code=codes.RELOAD_ROLLED_BACK, by="reload", reason=f"{type(exc).__name__}: {line}")


async def all_or_nothing(steps: Sequence[Step]) -> Refusal | None:
    """Apply ``steps`` in order (see the module).  None when every step applied.  Else the
    first failure: as it is (``reload.refused``...) when the first step refused; else
    ``reload.rolled_back`` naming the step that failed and why, once every undo ran; or
    ``reload.partial`` naming what could not be set back."""
    for i, step in enumerate(steps):
        failed = await _run(step.apply)
        if failed is None:
            continue
        stuck = [f"{s.name} ({why.reason})" for s in reversed(steps[:i + 1]) if (why := await _run(s.undo)) is not None]
        if stuck:
            return Refusal(code=codes.RELOAD_PARTIAL, by=failed.by or "reload",
                           reason=f"{step.name} failed: {failed.reason}; setting back failed for {'; '.join(stuck)}")
        if i == 0:
            return failed
        return Refusal(code=codes.RELOAD_ROLLED_BACK, by=failed.by or "reload",
                       reason=f"{step.name} failed: {failed.reason}; {', '.join(s.name for s in steps[:i])} set back")
    return None
