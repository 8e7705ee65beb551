"""What a request's work leaves behind: its runs' results in the book, its
output on request, and one accounting record per finished instance.

A run's result (:class:`~legionrm.models.WorkResult`) stays with the node's
host; :class:`Results` fetches it through the instance watch: at once for
an instance that ended by itself (so the request ends ``failed`` when its
work failed), later for one the Scheduler stopped (a cancel, a walltime).
Every instance that ended gets one :class:`~legionrm.models.AccountRecord`
in the :class:`~legionrm.state.AccountingStore`, once its result is known
(or it runs no work, or its host never answered within
:data:`RESULT_WAIT_S`).  Pure: the watch and the store are collaborators.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from legionrm import codes
from legionrm.errors import SchedulingError
from legionrm.hostobj.runner.process import stop_state
from legionrm.models import AccountRecord, InstanceInfo, InstanceRef, WorkEnd, WorkResult
from legionrm.scheduler.requests import Entry, RequestBook
from legionrm.state import AccountingStore

RESULT_WAIT_S = 120.0
"""How long after an instance ended its host may take to give its run's result."""

log = logging.getLogger(__name__)


def end_state(info: InstanceInfo) -> WorkEnd:
    """How an ended instance ended: its run's own end, else as the book saw it."""
    if info.result is not None:
        return info.result.state
    if info.state == "lost":
        return "node_lost"
    if info.state == "stopped" or info.reason == "walltime":
        return stop_state(info.reason)
    return "completed"


def end_reason(instance_id: str, result: WorkResult | None, reason: str) -> str:
    """What the book says of an instance that ended with ``result``."""
    if result is None:
        return reason
    code = f" (exit code {result.exit_code})" if result.exit_code is not None else ""
    why = f": {result.error}" if result.error else ""
    return f"{instance_id} {result.state}{code}{why}"[:500]


def record_of(entry: Entry, info: InstanceInfo, scheduler: str) -> AccountRecord:
    """The accounting record of ``entry``'s ended instance ``info``."""
    ref = entry.refs.get(info.id)
    obj = next((o for o in entry.request.objects if ref is not None and o.class_name == ref.class_name), None)
    r = info.result
    return AccountRecord(
        instance_id=info.id, request_id=entry.id, user=entry.user, group=next(iter(entry.request.identity.groups), ""),
        pool=entry.request.pool, class_name=ref.class_name if ref is not None else "", scheduler=scheduler,
        host=info.host, cpus=obj.cpus if obj else 0.0, memory_gb=obj.memory_gb if obj else 0.0,
        start=r.started_at if r else info.started_at, end=r.ended_at if r else (info.ended_at or info.started_at),
        state=end_state(info), exit_code=r.exit_code if r else None, cpu_s=r.cpu_s if r else 0.0,
        max_rss_kb=r.max_rss_kb if r else 0)


class Results:
    """Results and records of one Scheduler's book (see the module); ``watch()``
    is the Scheduler's instance watch now (one with ``results`` and ``output``
    reaches the hosts' runners)."""

    def __init__(self, book: RequestBook, watch: Callable[[], Any], store: AccountingStore | None,
                 scheduler: str, clock: Callable[[], float]) -> None:
        self.book, self.watch, self.scheduler, self.clock = book, watch, scheduler, clock
        self.store = store if store is not None else AccountingStore()
        # the recorded instances of the live book only: a settled request's leave with it (bounded memory)
        live = {iid for e in book.entries() for iid in e.instances}
        self._accounted = self.store.ids() & live

    def fetch(self, refs: list[InstanceRef]) -> dict[str, WorkResult]:
        """The results the hosts hold of these instances' runs (none asked for what runs no work)."""
        work = [r for r in refs if r.work]
        ask = getattr(self.watch(), "results", None)
        if not work or ask is None:
            return {}
        try:
            return dict(ask(work))
        except Exception:  # noqa: BLE001 - a host that cannot answer now is asked at the next sweep
            log.exception("fetching run results failed")
            return {}

    def sweep(self) -> int:
        """Book the results that came since, and write the record of every
        instance that ended and has none yet; returns how many were written."""
        now = self.clock()
        waiting: list[tuple[Entry, InstanceRef]] = []
        done: list[tuple[Entry, str]] = []
        for entry in self.book.entries():
            for iid, info in list(entry.instances.items()):
                if info.state == "running" or iid in self._accounted:
                    continue
                ref = entry.refs.get(iid)
                if ref is not None and ref.work and info.result is None and now - (info.ended_at or now) < RESULT_WAIT_S:
                    waiting.append((entry, ref))
                else:
                    done.append((entry, iid))
        got = self.fetch([ref for _, ref in waiting])
        for entry, ref in waiting:
            if ref.instance_id in got:
                self.book.set_result(entry, ref.instance_id, got[ref.instance_id])
                done.append((entry, ref.instance_id))
        records = [record_of(entry, entry.instances[iid], self.scheduler) for entry, iid in done]
        self.store.add(records)
        self._accounted.update(r.instance_id for r in records)
        return len(records)

    def settled(self) -> list[Entry]:
        """The finished requests of the book whose every instance has its
        accounting record: they may leave the live book (then :meth:`forget` them)."""
        return [e for e in self.book.entries() if e.final and all(i in self._accounted for i in e.instances)]

    def forget(self, entries: Iterable[Entry]) -> None:
        """Forget the instances of ``entries``, which left the live book (it will not show them again)."""
        for e in entries:
            self._accounted.difference_update(e.instances)

    def history(self, *, user: str | None = None, since: float | None = None, until: float | None = None,
                state: str | None = None, limit: int = 100_000) -> list[AccountRecord]:
        """The records (``legionrm history``), by end time."""
        return self.store.query(user=user, since=since, until=until, state=state, limit=limit)

    def instance(self, request_id: str, instance: int | str | None = None) -> tuple[Entry, InstanceRef]:
        """A request's instance by its number (0 first, in start order), its
        id, or the only one it has.  SchedulingError when there is none such."""
        entry = self.book.find(request_id)
        if entry is None:
            raise SchedulingError(f"no request {request_id!r} is known to scheduler {self.scheduler!r}",
                                  code=codes.REQUEST_UNKNOWN)
        refs = list(entry.refs.values())
        if isinstance(instance, str) and instance in entry.refs:
            return entry, entry.refs[instance]
        if instance is None and len(refs) == 1:
            return entry, refs[0]
        if isinstance(instance, int) and 0 <= instance < len(refs):
            return entry, refs[instance]
        which = "it has none yet" if not refs else f"give --instance 0 to {len(refs) - 1}"
        raise SchedulingError(f"request {request_id!r} has {len(refs)} instance(s): {which}",
                              code=codes.REQUEST_NO_INSTANCE)

    def output(self, request_id: str, instance: int | str | None = None, stream: str = "stdout", offset: int = 0,
               limit: int = 1 << 20) -> tuple[bytes, int, bool]:
        """A run's ``stream`` from ``offset``: the bytes, the offset to read on
        from, and whether the run still goes (more may come)."""
        entry, ref = self.instance(request_id, instance)
        if not ref.work:
            raise SchedulingError(f"{ref.instance_id} ({ref.class_name}) runs no command: it has no output to show",
                                  code=codes.REQUEST_NO_OUTPUT)
        read = getattr(self.watch(), "output", None)
        if read is None:
            raise SchedulingError(f"scheduler {self.scheduler!r} cannot reach its hosts' outputs",
                                  code=codes.REQUEST_NO_OUTPUT)
        data, at = read(ref, stream, offset, limit)
        return data, at, entry.instances[ref.instance_id].state == "running"
