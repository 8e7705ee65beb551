"""Starting a running request's later stages (issue 26, item 6): :class:`Stages`.

A request whose ``after`` graph follows work that ends starts in stages
(:mod:`legionrm.enactor.after`): its first attempt places only the first stage
(:meth:`Stages.first`), and each tick :meth:`Stages.advance` places the
objects whose turn has come, through the same planner and Enactor as any
attempt (the hosts may still refuse: the request keeps running, its reason
says what its next stage waits for, and the next tick tries again).  Each
instance is written with the object it is of (:meth:`Stages.names`), so
the stage is read back from the book, a restart included.  The request's
pool charge, taken for all its objects at its first admission, covers every
stage.  Pure: no Ray.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from legionrm.hostobj.runner.instances import names_work
from legionrm.enactor.after import name_of, ready, stalled, this_run
from legionrm.models import ClassSpec, EnactResult, InstanceRef, ObjectRequest, SchedulingRequest
from legionrm.scheduler.enactment import Enactment
from legionrm.scheduler.planner import Plan, Planner
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.ports import SnapshotSource, Swappable
from legionrm.scheduler.requests import Entry, RequestBook
from legionrm.state import StoreFault

log = logging.getLogger(__name__)


def work_classes(classes: Sequence[ClassSpec]) -> frozenset[str]:
    """The classes whose instances are runner work (they end: a ``Command``)."""
    return frozenset(c.name for c in classes if any(
        names_work(path) for path in (c.implementation, *(i.entry for i in c.implementations)) if path))


class Stages:
    """The stages of requests that follow ending work (see the module)."""

    def __init__(self, work: frozenset[str], book: RequestBook, planner: Planner,
                 collection: Swappable[SnapshotSource], enactment: Enactment,
                 claim: Callable[[str], AbstractContextManager[bool]], holds: Callable[[Entry], Sequence[Hold]]) -> None:
        self._work, self._book, self._planner, self._collection = work, book, planner, collection
        self._enactment, self._claim, self._holds = enactment, claim, holds

    def ends(self, obj: ObjectRequest) -> bool:
        return obj.class_name in self._work

    def first(self, request: SchedulingRequest) -> SchedulingRequest:
        """``request`` with only its first stage's objects (unchanged when it has no later stage)."""
        idx = ready(request.objects, (), self.ends)
        if len(idx) == len(request.objects):
            return request
        return request.model_copy(update={"objects": tuple(request.objects[k] for k in idx)})

    @staticmethod
    def names(result: EnactResult, plan: Plan) -> dict[str, str]:
        """The object each started instance is of, by instance id (its host token names its placement key)."""
        key_name = {k: name_of(op.request) for op in plan.objects for k in op.keys}
        by_token = {t.token_id: k for k, t in result.host_tokens.items()}
        return {i.instance_id: key_name[by_token[i.token_id]] for i in result.instances
                if by_token.get(i.token_id) in key_name}

    def advance_all(self) -> int:
        """:meth:`advance` every running request; returns how many started a stage."""
        return sum(self.advance(e) for e in self._book.in_state("running"))

    def advance(self, entry: Entry) -> bool:
        """Place ``entry``'s objects whose stage has come, under its claim; True when some started."""
        if entry.state != "running" or not any(o.after for o in entry.request.objects):
            return False
        with self._claim(entry.id) as claimed:
            if not claimed or entry.state != "running":
                return False
            run = this_run(entry.history, entry.instances.values())
            idx = [] if stalled(run) else ready(entry.request.objects, run, self.ends)
            if not idx:
                return False
            objs = tuple(entry.request.objects[k] for k in idx)
            names = ", ".join(name_of(o) for o in objs)
            stage = entry.request.model_copy(update={
                "objects": objs, "request_id": f"{entry.id}~s{len(entry.instances)}"})
            plan = self._planner.make_schedules(stage, self._collection.get().snapshot(), self._holds(entry))
            result = self._enactment.enact(stage, plan) if plan.ok else None
            if result is None or not result.ok:
                failures = plan.failures if result is None else [f for a in result.attempts for f in a.failures]
                why = f"{failures[0].code}: {failures[0].reason}" if failures else "no schedule"
                self._book.move(entry, "running", f"{names} wait(s) for room: {why}"[:500])
                return False
            try:
                self._book.attach(entry, result.instances, names=self.names(result, plan))
                self._book.move(entry, "running", f"started {names}: what they follow ended well")
            except StoreFault as fault:  # nothing the book does not know keeps running
                self._stop(result.instances, fault)
                return False
            return True

    def _stop(self, instances: Sequence[InstanceRef], fault: StoreFault) -> None:
        log.warning("a stage's instances are stopped, the store did not take them: %s", fault)
        for ref in instances:
            self._enactment.stop(ref, "its request could not be written")
