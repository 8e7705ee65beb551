"""Job arrays on the Scheduler: one submit, many tasks, one line.

An array request ``ID`` with ``array = "0-99%10"`` becomes 100 requests, its
tasks, ``ID_0`` .. ``ID_99`` (Slurm's ``JOBID_INDEX``), each the array's
request with ``array_index`` set and ``LEGIONRM_ARRAY_INDEX`` in every
object's environment.  Each task is an ordinary request in the book (so it
is stored, restarted, accounted and shown as any other); at most ``%L`` of
them hold cpus at once (:class:`~legionrm.scheduler.depend.gate.Depend`:
``array.limit``).

The array's own id names all its tasks: ``show ID`` gives a summary (its
state from its tasks', its tasks' count per state), ``cancel ID`` cancels
every task that has not ended, ``hold ID`` / ``release ID`` every task that
waits, ``list`` shows the tasks it lists of one array as one line with their
counts; ``show ID_I`` / ``cancel ID_I`` / ``hold ID_I`` act on one task.  Dependencies may name the array (all its tasks) or one task.  Pure: no Ray.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from legionrm.errors import SchedulingError
from legionrm.models import RequestInfo, SchedulerResponse, SchedulingRequest
from legionrm.models.arrays import ARRAY_ENV, parse_array, task_id
from legionrm.scheduler.depend.gate import Depend, array_of, array_state
from legionrm.scheduler.requests import Entry, RequestBook

TRY_NOW = 100
"""How many of an array's first tasks are tried at submit; the rest wait for the next pass (a
10,000-task submit does not run the queue's gate 10,000 times)."""


def tasks(request: SchedulingRequest) -> Iterator[SchedulingRequest]:
    """The tasks of array ``request``, in index order."""
    assert request.array is not None
    for i in parse_array(request.array).indices:
        objects = tuple(o.model_copy(update={"env": {**o.env, ARRAY_ENV: str(i)}}) for o in request.objects)
        yield request.model_copy(update={"request_id": task_id(request.request_id, i), "array_index": i,
                                         "objects": objects})


class Arrays:
    """The arrays of ``book`` (``depend`` knows their specs)."""

    def __init__(self, book: RequestBook, depend: Depend) -> None:
        self.book, self.depend = book, depend

    def submit(self, request: SchedulingRequest,
               schedule: Callable[[SchedulingRequest, bool], SchedulerResponse]) -> SchedulerResponse:
        """Submit every task of ``request`` through ``schedule(task, try_now)``; one answer for the array
        (ok when a task started; refused when its first task was).  SchedulingError for an id in use."""
        aid = request.request_id
        if self.book.find(aid) is not None or self.depend.spec_of(aid) is not None:
            raise SchedulingError(f"request id {aid!r} was already scheduled")
        assert request.array is not None
        self.depend.specs[aid] = request.array
        answers: list[SchedulerResponse] = []
        for n, task in enumerate(tasks(request)):
            r = schedule(task, n < TRY_NOW)
            if r.state == "refused" and not answers:  # refused at submit: so would every task be
                del self.depend.specs[aid]
                return r.model_copy(update={"request_id": aid})
            answers.append(r)
        started = [r for r in answers if r.ok]
        spec = parse_array(request.array)
        limit = f", at most {spec.limit} at once" if spec.limit is not None else ""
        message = (f"array {aid}: {len(answers)} tasks {answers[0].request_id} .. {answers[-1].request_id}{limit}; "
                   f"{len(started)} started")
        failures = next((r.failures for r in answers if r.failures), ())
        return SchedulerResponse(request_id=aid, ok=bool(started), instances=tuple(i for r in started for i in r.instances),
                                 failures=failures, message=message, state=array_state([r.state for r in answers]))

    def task_entries(self, array_id: str) -> list[Entry] | None:
        """The tasks of ``array_id`` the book or its history knows, in index order (None: no such array)."""
        if self.book.get(array_id) is not None:
            return None
        spec = self.depend.spec_of(array_id)
        if spec is None:
            return None
        return [e for i in parse_array(spec).indices if (e := self.book.find(task_id(array_id, i))) is not None]

    def info(self, array_id: str) -> RequestInfo | None:
        """The summary of array ``array_id`` (``show ID``); None: no such array."""
        entries = self.task_entries(array_id)
        return summary(array_id, [e.info() for e in entries]) if entries else None

    def cancel(self, array_id: str, cancel: Callable[[str], object]) -> RequestInfo | None:
        """Cancel (``cancel(task id)``) every task of ``array_id`` that has not ended, the waiting ones
        first (so none starts meanwhile); its summary after, or None when there is no such array."""
        entries = self.task_entries(array_id)
        if not entries:
            return None
        for e in sorted(entries, key=lambda e: e.state != "pending"):
            if not e.final:
                cancel(e.id)
        return self.info(array_id)


def summary(array_id: str, infos: list[RequestInfo]) -> RequestInfo:
    """One line for the tasks ``infos`` of array ``array_id``: their one state, their count per state."""
    first = infos[0]
    counts = Counter(i.state for i in infos)
    codes = [i.exit_code for i in infos if i.exit_code is not None]
    said = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return RequestInfo(
        id=array_id, user=first.user, state=array_state([i.state for i in infos]),  # type: ignore[arg-type]
        reason=f"array of {len(infos)} tasks: {said}", classes=first.classes, count=len(infos), pool=first.pool,
        submitted=min(i.submitted for i in infos), qos=first.qos, array=first.array, array_counts=dict(counts),
        exit_code=next((c for c in codes if c != 0), 0) if codes else None, after_ok=first.after_ok,
        after_any=first.after_any, after_not_ok=first.after_not_ok, begin_at=first.begin_at, requeue=first.requeue,
        instances=tuple(x for i in infos for x in i.instances if x.state == "running"),
        archived=all(i.archived for i in infos))


def task_ids(info: RequestInfo) -> list[str]:
    """The ids of the tasks of the array ``info`` sums up (none: ``info`` is not an array's own id)."""
    if info.array is None or info.array_index is not None:
        return []
    return [task_id(info.id, i) for i in parse_array(info.array).indices]


def each_task(info_of: Callable[[str], RequestInfo], request_id: str,
              act: Callable[[str], RequestInfo], info: RequestInfo | None = None) -> RequestInfo:
    """``act(request_id)`` (``hold``, ``release``, ``update``, ``top``); on an array's id, ``act`` on each
    of its tasks that waits (one that started or ended meanwhile is left as it is), then the array's summary.
    ``info``: ``request_id``'s info when the caller has just read it (else it is read here)."""
    info = info if info is not None else info_of(request_id)
    tasks = task_ids(info)
    if not tasks:
        return act(request_id)
    for task in tasks:
        if info_of(task).state == "pending":
            try:
                act(task)
            except SchedulingError:  # it no longer waits (queue.not_pending): nothing to hold or release
                pass
    return info_of(request_id)


def grouped(infos: list[RequestInfo]) -> list[RequestInfo]:
    """``infos`` with the tasks of each array replaced by one summary (``list``), where its first task was."""
    tasks_of: dict[str, list[RequestInfo]] = {}
    for i in infos:
        if i.array_index is not None:
            tasks_of.setdefault(i.id.rsplit("_", 1)[0], []).append(i)
    out = []
    for i in infos:
        if i.array_index is None:
            out.append(i)
        elif (aid := i.id.rsplit("_", 1)[0]) in tasks_of:
            out.append(summary(aid, tasks_of.pop(aid)))
    return out


__all__ = ["Arrays", "array_of", "each_task", "grouped", "summary", "tasks"]
