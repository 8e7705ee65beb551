"""The Scheduler's intake in groups: many submits (or cancels) that arrived
together, admitted with one durable write of the request book (a group
commit), each answered only once that write is on disk.

:mod:`~legionrm.scheduler.intake.group` is the core, held by the
:class:`~legionrm.scheduler.scheduler.Scheduler` (``scheduler.queue.intake``: requests enter the queue through it);
:mod:`~legionrm.scheduler.intake.door` checks who may make each call of a
group (the gateway agent signs the group, naming each call's user) and
:class:`~legionrm.scheduler.intake.door.IntakeCalls` is the actor's side.
Pure: no Ray here.
"""

from legionrm.scheduler.intake.group import GroupIntake, Steps

__all__ = ["GroupIntake", "Steps"]
