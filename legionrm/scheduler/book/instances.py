"""The instances a request owns, as the request book records them.

:class:`BookInstances` is :class:`~legionrm.scheduler.requests.RequestBook`'s
base class with the instance side of the book: the instances of a request
that started (attached, in the write that may move the request), the copy an
object is now, one or several instances' records rewritten (an object's old
copy and its new one), instances that ended (idempotent), and a run's result
that came after its end.  Each change is written first and made in memory
after, under the book's lock, and told to the book's listener, as every
change of the book is (``self`` is always a RequestBook: its lock, index,
commit and listener are these methods' own).
"""

from __future__ import annotations

from typing import Iterable

from legionrm.errors import SchedulingError
from legionrm.events.triggers import INSTANCE_STATUS, STATUS_OF
from legionrm.models import InstanceInfo, InstanceRef, RequestState, WorkResult
from legionrm.scheduler.entry import ALLOWED, Entry


class BookInstances:
    """The instances of the book's requests (its base class; see the module doc)."""

    def attach(self, entry: Entry, instances: Iterable[InstanceRef], state: RequestState | None = None,
               reason: str = "", names: dict[str, str] | None = None, **changes: object) -> None:
        """The request's instances started (``names``: the object each is of);
        with ``state``, the request moves there (with ``changes``) in the same write."""
        refs = list(instances)
        with self._lock:
            draft = entry.draft(**changes)
            moved = state is not None and state != entry.state
            if moved:
                assert state is not None
                if state not in ALLOWED[entry.state]:
                    raise SchedulingError(f"request {entry.id!r} cannot go from {entry.state} to {state}")
                draft.state, draft.reason = state, reason
                self._event(draft, state, reason)
            ids = [ref.instance_id for ref in refs]
            draft.refs.update(zip(ids, refs))
            draft.instances.update(zip(ids, InstanceInfo.trusted_many(  # (the refs' own, valid values)
                {}, id=ids, host=[ref.host for ref in refs], started_at=[ref.started_at for ref in refs],
                name=[(names or {}).get(i) for i in ids])))
            self._commit(entry, draft)
            self._by_instance.update({ref.instance_id: entry.id for ref in refs})
            self.tell_many(entry, "started", [(f"on {ref.host}", ref.instance_id) for ref in refs])
            if moved:
                self.tell(entry, STATUS_OF[entry.state], reason)

    def current(self, object_id: str) -> tuple[Entry, InstanceInfo] | None:
        """The copy an object is now (running or inert), found by the object's
        id or the id of any instance it ever was; None when unknown or gone."""
        with self._lock:
            entry = self.owner_of(object_id)
            if entry is None:
                return None
            oid = entry.instances[object_id].object_id or object_id
            return next(((entry, i) for i in entry.instances.values() if (i.object_id or i.id) == oid
                         and i.state in ("running", "inert")), None)

    def set_instance(self, entry: Entry, info: InstanceInfo, ref: InstanceRef | None = None) -> None:
        """Write one instance's info (and its ref: a new copy of an object is attached)."""
        self.set_instances(entry, (info,), () if ref is None else (ref,))

    def set_instances(self, entry: Entry, infos: Iterable[InstanceInfo], refs: Iterable[InstanceRef] = ()) -> None:
        """Write several instances' infos and refs in one write (an object's old copy and its new one)."""
        with self._lock:
            draft = entry.draft()
            refs = list(refs)
            draft.instances.update((i.id, i) for i in infos)
            draft.refs.update((r.instance_id, r) for r in refs)
            self._commit(entry, draft)
            for r in refs:
                self._by_instance[r.instance_id] = entry.id

    def end_instance(self, instance_id: str, state: str, reason: str, result: WorkResult | None = None
                     ) -> Entry | None:
        """Mark one instance ended (with its run's ``result``, when known);
        returns its request, or None when the instance is unknown or had
        already ended (idempotent)."""
        with self._lock:
            entry = self.owner_of(instance_id)
            if entry is None or not self.end_instances(entry, [instance_id], state, reason, result):
                return None
            return entry

    def end_instances(self, entry: Entry, instance_ids: Iterable[str], state: str, reason: str,
                      result: WorkResult | None = None) -> list[str]:
        """Mark ``entry``'s instances ``instance_ids`` ended, in one write; returns those that
        were running (the others, unknown or ended already, are left as they are)."""
        with self._lock:
            ending = [i for i in instance_ids if (info := entry.instances.get(i)) is not None and info.state == "running"]
            if not ending:
                return []
            draft, now = entry.draft(), self.clock()
            for iid in ending:
                draft.instances[iid] = entry.instances[iid].replaced(  # (valid values: no validation)
                    state=state, ended_at=float(now), reason=reason, result=result)
            self._commit(entry, draft)
            for iid in ending:
                self.tell(entry, INSTANCE_STATUS.get(state, "ended"), reason, iid)
            return ending

    def set_result(self, entry: Entry, instance_id: str, result: WorkResult) -> None:
        """Keep an ended instance's run result (it came after the instance ended: a stop)."""
        with self._lock:
            info = entry.instances.get(instance_id)
            if info is not None and info.result is None:
                draft = entry.draft()
                draft.instances[instance_id] = info.model_copy(update={"result": result})
                self._commit(entry, draft)
