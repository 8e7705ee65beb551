"""Deactivate, activate and migrate objects: Legion's inert objects, in the Scheduler.

An object's *active* state runs on a host; its *persistent* state rests in a
vault.  :class:`Mobility` moves an object between the two, over the
Scheduler core (its request book, planner and enactor) and a
:class:`StatePort` (the hosts' ``save_object`` / ``restore_object`` and the
vaults' ``put_state`` / ``get_state`` / ``delete_state``):

* :meth:`Mobility.deactivate`: the running copy saves its state, the state
  goes to a vault that serves its host (the copy's own vault when it has
  one), then the copy stops; the object stays known, ``inert``, with the
  vault and the size of its state;
* :meth:`Mobility.activate` (also what ``scheduleObjects(activate=[id])`` does
  for an inert object): a new copy is placed through the planner and the
  Enactor like any instance of its class (the original object request's
  resources, constraint and arguments), preferring hosts the vault holding
  its state serves; when none can take it, anywhere else, the state then
  copied to a vault that serves the new host; the new copy restores the
  state, and the vault lets it go;
* :meth:`Mobility.migrate`: the new place is reserved and its copy started
  *before* the old copy is deactivated (so the object is never without a
  place), then the state moves through a vault and the old copy's
  reservation is released as it stops.

Write first, then act: the book is written before the world is told.  A
deactivation stops the running copy only once the book says it is inert (in
its vault); an activation or migration keeps the state in its vault until
the book says the new copy runs (the old copy and the new one in one
write).  A write that fails (:class:`~legionrm.state.StoreFault`) is undone
outside the book (the new copy stopped, the state copied for it deleted) and
answered as a refusal with the store's code (``state.disk_full``,
``state.io_error``), the book as it was.

Every change of status (deactivated, activated, migrated) is recorded in one
place, :meth:`Mobility.record`: its :attr:`~Mobility.changes` and each
listener of :attr:`~Mobility.listeners` (what triggers hook).  An object keeps
the id of its first instance across moves; any id it ever had finds it.
Refusals carry dotted codes: ``object.unknown``, ``object.not_running``,
``object.not_inert``, ``object.no_place``, ``vault.none``, and the hosts' and
vaults' own (``state.*``, ``capacity``, ``vault.incompatible``).  Owner
checks are the Scheduler door's.  Pure: no Ray.
"""

from __future__ import annotations

import collections
import contextlib
import fnmatch
import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from legionrm import codes
from legionrm.models import (
    InstanceInfo,
    InstanceRef,
    ObjectRequest,
    ObjectStatus,
    PlacementFailure,
    Refusal,
    SchedulingRequest,
    StatusChange,
    StatusKind,
)
from legionrm.objstate.shelf import GB
from legionrm.scheduler.enactment import Enactment
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning.snaptables import vault_table
from legionrm.scheduler.ports import SnapshotSource, Swappable
from legionrm.scheduler.requests import Entry, RequestBook
from legionrm.state import StoreFault

CHANGES_KEPT = 1000

log = logging.getLogger(__name__)


class StatePort(Protocol):
    """How the Scheduler reaches hosts' and vaults' state calls."""

    def save(self, ref: InstanceRef) -> bytes | Refusal: ...

    def restore(self, ref: InstanceRef, data: bytes) -> bool | Refusal: ...

    def put(self, vault: str, object_id: str, data: bytes, user: str, host: str | None) -> int | Refusal: ...

    def get(self, vault: str, object_id: str) -> bytes | Refusal: ...

    def delete(self, vault: str, object_id: str) -> bool: ...


class LocalStatePort:
    """A :class:`StatePort` over in-process cores: ``carrier(host)`` gives the
    host group (or host) carrying ``host``; ``vaults`` maps names to vault objects."""

    def __init__(self, carrier: Callable[[str], Any], vaults: Mapping[str, Any]) -> None:
        self.carrier, self.vaults = carrier, vaults

    def _host(self, name: str) -> Any:
        c = self.carrier(name)
        return c.get(name) if c is not None and hasattr(c, "get") else c

    def _vault(self, name: str) -> Any:
        v = self.vaults.get(name)
        if v is None:
            raise KeyError(f"no vault {name!r}")
        return v

    def save(self, ref: InstanceRef) -> bytes | Refusal:
        h = self._host(ref.host)
        return h.save_object(ref.instance_id) if h is not None else _gone(ref.host)

    def restore(self, ref: InstanceRef, data: bytes) -> bool | Refusal:
        h = self._host(ref.host)
        return h.restore_object(ref.instance_id, data) if h is not None else _gone(ref.host)

    def put(self, vault: str, object_id: str, data: bytes, user: str, host: str | None) -> int | Refusal:
        return self._vault(vault).put_state(object_id, data, user, host)

    def get(self, vault: str, object_id: str) -> bytes | Refusal:
        return self._vault(vault).get_state(object_id)

    def delete(self, vault: str, object_id: str) -> bool:
        return bool(self._vault(vault).delete_state(object_id))


def _gone(host: str) -> Refusal:
    return Refusal(code=codes.RESOURCE_UNKNOWN, reason=f"host {host!r} cannot be reached", by=host)


class Mobility:
    """Deactivate / activate / migrate over the Scheduler's parts (its request
    ``book``, ``planner``, ``collection`` and ``enactment``) and ``port``; see
    the module doc.  The wiring gives the Scheduler :meth:`activate_for_request`
    as its activator (inert objects in ``scheduleObjects``) and :meth:`forget`
    to its accounts (a finished request's inert objects' states are deleted).
    One move per object at a time."""

    def __init__(self, book: RequestBook, planner: Planner, collection: Swappable[SnapshotSource],
                 enactment: Enactment, port: StatePort, *, clock: Callable[[], float]) -> None:
        self.book, self.planner, self.enactment, self.port = book, planner, enactment, port
        self._collection = collection
        self._clock = clock
        self.changes: collections.deque[StatusChange] = collections.deque(maxlen=CHANGES_KEPT)
        self.listeners: list[Callable[[StatusChange], None]] = [self._tell_triggers]
        self._serial = itertools.count(1)
        self._lock = threading.Lock()
        self._moving: set[str] = set()

    # --- the one place a status change is recorded ----------------------------------------

    def _tell_triggers(self, change: StatusChange) -> None:
        """The Scheduler's triggers hear every move, as an event of the object's request."""
        entry = self.book.owner_of(change.object_id)
        if entry is not None:
            where = f"from {change.from_host} to {change.host}" if change.from_host else (change.host or change.vault)
            self.book.tell(entry, change.kind, change.detail or f"{change.kind} ({where})", change.object_id)

    def record(self, kind: StatusKind, object_id: str, user: str, *, instance: InstanceRef | None = None,
               from_host: str | None = None, vault: str | None = None, detail: str = "") -> StatusChange:
        """Record one status change: kept in :attr:`changes`, then given to each
        listener (a listener that raises is skipped, never undoes the change)."""
        change = StatusChange(at=self._clock(), kind=kind, object_id=object_id, user=user,
                              instance_id=instance.instance_id if instance else None,
                              host=instance.host if instance else None, from_host=from_host, vault=vault,
                              detail=detail)
        self.changes.append(change)
        for listen in list(self.listeners):
            try:
                listen(change)
            except Exception:  # noqa: BLE001 - a trigger's failure is its own
                pass
        return change

    # --- reading ---------------------------------------------------------------------------

    def status(self, object_id: str) -> ObjectStatus | Refusal:
        """Where the object is now (by any id it ever had)."""
        found = self.book.current(object_id)
        if found is None:
            return _refuse(codes.OBJECT_UNKNOWN, f"no object {object_id!r} runs or rests inert here")
        return self._status(*found)

    def owner(self, object_id: str) -> str | None:
        """The user whose request made the object (None: unknown)."""
        entry = self.book.owner_of(object_id)
        return entry.user if entry is not None else None

    # --- deactivate ---------------------------------------------------------------------------

    def deactivate(self, object_id: str, reason: str = "deactivated") -> ObjectStatus | Refusal:
        """Save a running object's state to a vault and stop its active copy."""
        with self._moving_one(object_id) as busy:
            if busy is not None:
                return busy
            found = self._running(object_id)
            if isinstance(found, Refusal):
                return found
            entry, info = found
            ref = entry.refs[info.id]
            oid = info.object_id or info.id
            stashed = self._stash(entry, ref, oid, for_host=ref.host)
            if isinstance(stashed, Refusal):
                return stashed
            vault, size = stashed
            try:
                inert = self._make_inert(entry, info, vault, size, reason)
            except StoreFault as fault:  # it runs on; the state saved for nothing goes
                self.port.delete(vault, oid)
                return _unwritten(fault)
            self.enactment.stop(ref, reason)
            self.record("deactivated", oid, entry.user, from_host=ref.host, vault=vault, detail=f"{size} bytes")
            return self._status(entry, inert)

    # --- activate -----------------------------------------------------------------------------

    def activate(self, object_id: str, constraint: str = "true") -> ObjectStatus | Refusal:
        """Place an inert object anew and restore its state; a running one is
        reported as it is.  ``constraint`` (other than ``"true"``) replaces its
        object request's own for this placement."""
        with self._moving_one(object_id) as busy:
            if busy is not None:
                return busy
            found = self.book.current(object_id)
            if found is None:
                return _refuse(codes.OBJECT_UNKNOWN, f"no object {object_id!r} runs or rests inert here")
            entry, info = found
            if info.state == "running":
                return self._status(entry, info)
            got = self._reactivate(entry, info, constraint)
            return got if isinstance(got, Refusal) else self._status(entry, got)

    def activate_for_request(self, object_id: str) -> InstanceRef | PlacementFailure:
        """The scheduler's activator: the running copy, or the failure (lasting: not retried)."""
        got = self.activate(object_id)
        if isinstance(got, ObjectStatus) and got.instance is not None:
            return got.instance
        refusal = got if isinstance(got, Refusal) else _refuse(codes.OBJECT_NOT_RUNNING, f"{object_id!r} did not start")
        return PlacementFailure(key=object_id, resource=refusal.by or self.enactment.name, code=refusal.code,
                                reason=refusal.reason, stage="plan", lasting=True)

    def _reactivate(self, entry: Entry, info: InstanceInfo, constraint: str) -> InstanceInfo | Refusal:
        oid, vault = info.object_id or info.id, info.vault
        old = entry.refs[info.id]
        if vault is None:
            return _refuse(codes.OBJECT_NOT_INERT, f"object {oid!r} has no state in a vault")
        ref = self._place(entry, old, constraint, (), prefer_vault=vault)
        if isinstance(ref, Refusal):
            return ref
        moved = self._restore(entry, ref, oid, vault)
        if isinstance(moved, Refusal):
            return moved
        new = self._adopt(entry, info, ref, oid, f"activated on {ref.host}", moved)
        if isinstance(new, Refusal):
            return new
        self.record("activated", oid, entry.user, instance=ref, from_host=old.host, vault=vault)
        return new

    # --- migrate ------------------------------------------------------------------------------

    def migrate(self, object_id: str, constraint: str = "true") -> ObjectStatus | Refusal:
        """Move a running object to a host matching ``constraint`` (in place of
        its object request's own constraint; ``"true"``: that one), never the
        one it is on: the new place is reserved and started first, then the
        old copy's state moves through a vault and the old copy stops."""
        with self._moving_one(object_id) as busy:
            if busy is not None:
                return busy
            found = self._running(object_id)
            if isinstance(found, Refusal):
                return found
            entry, info = found
            old, oid = entry.refs[info.id], info.object_id or info.id
            ref = self._place(entry, old, constraint, (old.host,))
            if isinstance(ref, Refusal):
                return ref
            stashed = self._stash(entry, old, oid, for_host=ref.host, prefer=ref.vault)
            if isinstance(stashed, Refusal):
                self.enactment.stop(ref, "migration abandoned: the old copy's state could not be saved")
                return stashed
            vault, size = stashed
            try:
                inert = self._make_inert(entry, info, vault, size, f"migrating to {ref.host}")
            except StoreFault as fault:  # the old copy runs on where it was
                self.enactment.stop(ref, "migration abandoned: the move could not be written")
                self.port.delete(vault, oid)
                return _unwritten(fault)
            self.enactment.stop(old, f"migrated to {ref.host}")  # its reservation is released here, after the new one
            moved = self._restore(entry, ref, oid, vault)
            if isinstance(moved, Refusal):  # the object rests inert in the vault: activate can try again
                return moved
            new = self._adopt(entry, inert, ref, oid, f"migrated to {ref.host}", moved)
            if isinstance(new, Refusal):  # as above: inert in the vault
                return new
            self.record("migrated", oid, entry.user, instance=ref, from_host=old.host, vault=vault,
                        detail=f"{size} bytes")
            return self._status(entry, new)

    # --- a finished request -------------------------------------------------------------------

    def forget(self, entry: Entry) -> int:
        """Delete the vault state of ``entry``'s inert objects (its request
        ended); returns how many.  Idempotent, best effort: each is written
        stopped first (a write that fails keeps it, inert, with its state)."""
        n = 0
        for info in list(entry.instances.values()):
            if info.state == "inert" and info.vault is not None:
                try:
                    self.book.set_instance(entry, info.model_copy(update={"state": "stopped", "reason": "request ended"}))
                except StoreFault as fault:
                    log.warning("object %s keeps its state in %s: %s", info.id, info.vault, fault)
                    continue
                try:
                    self.port.delete(info.vault, info.object_id or info.id)
                except Exception:  # noqa: BLE001 - an unreachable vault keeps it; nothing points to it
                    pass
                n += 1
        return n

    # --- steps --------------------------------------------------------------------------------

    def _running(self, object_id: str) -> tuple[Entry, InstanceInfo] | Refusal:
        found = self.book.current(object_id)
        if found is None:
            return _refuse(codes.OBJECT_UNKNOWN, f"no object {object_id!r} runs or rests inert here")
        if found[1].state != "running" or found[1].id not in found[0].refs:
            return _refuse(codes.OBJECT_NOT_RUNNING, f"object {object_id!r} is {found[1].state}, not running")
        return found

    def _stash(self, entry: Entry, ref: InstanceRef, oid: str, *, for_host: str,
               prefer: str | None = None) -> tuple[str, int] | Refusal:
        """Save ``ref``'s state into a vault that serves ``for_host`` (``prefer``,
        else the copy's own vault, else the freest that serves it): (vault, bytes)."""
        data = self.port.save(ref)
        if isinstance(data, Refusal):
            return data
        vault = self._vault_for(entry, for_host, len(data), prefer or ref.vault)
        if isinstance(vault, Refusal):
            return vault
        size = self.port.put(vault, oid, data, entry.user, for_host)
        return size if isinstance(size, Refusal) else (vault, size)

    def _vault_for(self, entry: Entry, host: str, size: int, prefer: str | None) -> str | Refusal:
        table = vault_table(self._collection.get().snapshot())
        serving = dict(zip(table.names, table.serves))
        if prefer is not None and (prefer not in serving or _serves(serving[prefer], host)):
            return prefer
        req = ObjectRequest(class_name=entry.request.objects[0].class_name if entry.request.objects else "object",
                            storage_gb=max(size, 1) / GB)
        picked = table.pick(host, req, {}, self._collection.get().snapshot(), entry.request.identity)
        if isinstance(picked, str):
            return picked
        return _refuse(codes.VAULT_NONE, f"no vault serving {host} can hold {size} bytes", by="vault_pairing")

    def _place(self, entry: Entry, old: InstanceRef, constraint: str, avoid: tuple[str, ...],
               prefer_vault: str | None = None) -> InstanceRef | Refusal:
        """Plan and enact one new copy of ``old``'s object (its object request's
        resources, arguments and constraint; a ``constraint`` other than
        ``"true"`` replaces the latter; ``avoid`` hosts avoided).
        With ``prefer_vault``, hosts that vault serves are tried first."""
        template = next((o for o in entry.request.objects if o.class_name == old.class_name), None) or \
            ObjectRequest(class_name=old.class_name)
        tries = [avoid]
        if prefer_vault is not None:
            snap = self._collection.get().snapshot()
            table = vault_table(snap)
            pats = dict(zip(table.names, table.serves)).get(prefer_vault)
            hosts = snap.names('$kind == "host"')
            if pats:  # the vault's own hosts first: the state need not move
                tries.insert(0, avoid + tuple(h for h in hosts if not _serves(pats, h)))
        failures: list[PlacementFailure] = []
        for avoided in tries:
            obj = template.model_copy(update={
                "count": 1, "constraint": template.constraint if constraint.strip() == "true" else constraint,
                "avoid_hosts": tuple(dict.fromkeys((*template.avoid_hosts, *avoided)))})
            # unique across restarts too: hosts answer a repeated reservation id with its old token
            rid = f"{entry.id}~move{int(self._clock() * 1000)}-{next(self._serial)}"
            sub = SchedulingRequest(request_id=rid, identity=entry.request.identity,
                                    pool=entry.request.pool, objects=(obj,), wait=False, replans=0)
            plan = self.planner.make_schedules(sub, self._collection.get().snapshot())
            if not plan.ok:
                failures += plan.failures
                continue
            result = self.enactment.enact(sub, plan)
            if result.ok and result.instances:
                return result.instances[0]
            failures += [f for a in result.attempts for f in a.failures]
        if avoid and failures and all(f.code == codes.REPLAN_AVOIDED for f in failures):  # only the hosts it must leave fit
            why = f"no host but {', '.join(avoid)}, where it runs now, matches {constraint!r} and fits it"
        else:
            why = "; ".join(f"{f.resource}: {f.code}" for f in failures[:4]) or "no host fits"
        return _refuse(codes.OBJECT_NO_PLACE, f"no place for a new copy of {old.class_name} ({why})")

    def _restore(self, entry: Entry, ref: InstanceRef, oid: str, vault: str) -> tuple[str, ...] | Refusal:
        """Bring the state from ``vault`` into the new copy ``ref`` (through a
        vault that serves its host: the state is copied there first when
        ``vault`` does not); returns the vaults holding it now (``vault``
        first), to drop it once the move is written.  On a refusal the new
        copy is stopped and the state stays where it was."""
        table = vault_table(self._collection.get().snapshot())
        serving = dict(zip(table.names, table.serves))
        data = self.port.get(vault, oid)
        if isinstance(data, Refusal):
            self.enactment.stop(ref, "activation abandoned: no state")
            return data
        target = vault
        if vault in serving and not _serves(serving[vault], ref.host):
            other = self._vault_for(entry, ref.host, len(data), ref.vault)
            if isinstance(other, str) and other != vault and not isinstance(
                    self.port.put(other, oid, data, entry.user, ref.host), Refusal):
                target = other  # copied to a vault that serves the new host
                data = self.port.get(other, oid)
        done = self.port.restore(ref, data) if not isinstance(data, Refusal) else data
        if isinstance(done, Refusal):
            self.enactment.stop(ref, f"activation abandoned: {done.code}")
            if target != vault:
                self.port.delete(target, oid)
            return done
        return tuple(dict.fromkeys((vault, target)))

    def _make_inert(self, entry: Entry, info: InstanceInfo, vault: str, size: int, reason: str) -> InstanceInfo:
        inert = info.model_copy(update={"state": "inert", "vault": vault, "saved_bytes": size,
                                        "ended_at": self._clock(), "reason": reason})
        self.book.set_instance(entry, inert)
        return inert

    def _adopt(self, entry: Entry, old: InstanceInfo, ref: InstanceRef, oid: str, reason: str,
               vaults: tuple[str, ...]) -> InstanceInfo | Refusal:
        """The object is now ``ref``: the old copy is ``moved``, the new one
        running, in one write; then the ``vaults`` (the one it rested in
        first) drop its state.  A write that fails stops the new copy and
        keeps the state in the first vault only: the object rests inert."""
        new = InstanceInfo(id=ref.instance_id, host=ref.host, started_at=ref.started_at, object_id=oid)
        try:
            self.book.set_instances(entry, (old.model_copy(update={"state": "moved", "reason": reason}), new), (ref,))
        except StoreFault as fault:
            self.enactment.stop(ref, "activation abandoned: the move could not be written")
            for v in vaults[1:]:
                self.port.delete(v, oid)
            return _unwritten(fault)
        for v in vaults:
            self.port.delete(v, oid)
        return new

    def _status(self, entry: Entry, info: InstanceInfo) -> ObjectStatus:
        ref = entry.refs.get(info.id)
        running = info.state == "running"
        return ObjectStatus(
            object_id=info.object_id or info.id, request_id=entry.id, user=entry.user,
            class_name=ref.class_name if ref is not None else "", state="running" if running else "inert",
            instance=ref if running else None, host=info.host if running else None,
            vault=None if running else info.vault, saved_bytes=None if running else info.saved_bytes,
            message=f"{info.id} on {info.host}" if running else f"in {info.vault} ({info.saved_bytes} bytes)")

    @contextlib.contextmanager
    def _moving_one(self, object_id: str) -> Iterator[Refusal | None]:
        """One move per object at a time: yields a refusal when another is under way."""
        found = self.book.current(object_id)
        key = (found[1].object_id or found[1].id) if found is not None else object_id
        with self._lock:
            busy = key in self._moving
            self._moving.add(key)
        if busy:
            yield _refuse(codes.OBJECT_BUSY, f"object {key!r} is being moved already")
            return
        try:
            yield None
        finally:
            with self._lock:
                self._moving.discard(key)


def _serves(patterns: tuple[str, ...], host: str) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(host, p) for p in patterns)


def _unwritten(fault: StoreFault) -> Refusal:
    """A move the store could not write, answered with its code and file."""
    return Refusal(code=fault.code, reason=str(fault), by="state")


def _refuse(code: str, reason: str, by: str = "scheduler") -> Refusal:
    return Refusal(code=code, reason=reason, by=by)
