"""The vault object: reservations of storage space, paired with the hosts it serves.

A Legion vault keeps the persistent state of objects; a placement maps an
object to a host *and* a vault the host can use.  A :class:`VaultObject`
reserves space with the same token rules as a host (signed, expiring, one-shot
or reusable, holder-bound), knows the hosts it serves (shell patterns, Legion's
host-vault pairing) and has its own veto of a host (:meth:`admit_host`).

Space that is *used* (an object's state stored there) stays taken until
:meth:`release` frees it: storage outlives the instance that wrote it.

A vault also *keeps* objects' persistent representations, as bytes in a
:class:`~legionrm.objstate.StateShelf` (a directory on the vault's node by
default; memory in-process): :meth:`put_state` / :meth:`get_state` /
:meth:`delete_state`.  Stored bytes are booked in the vault's calendar like a
reservation with no end (``state:<object id>``), so capacity, free space,
the Collection's ``free_storage_gb`` and every later reservation see them;
``put_state`` checks, in order, the object id, the host pairing (the host
the state comes from must be one the vault serves), the user's quota
(``quota_gb`` of stored state per user; None: none), then the capacity.
State found on the shelf when the vault starts is booked again (its owner
then unknown, ``"?"``).
"""

from __future__ import annotations

import fnmatch
import itertools
from typing import Any, Iterable

from legionrm import codes
from legionrm.hostobj.owners.policy import ADMIT, Admission, Verdict
from legionrm.hostobj.records import public
from legionrm.hostobj.resource import ResourceObject
from legionrm.models import (
    AttrValue,
    Holder,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)
from legionrm.objstate import GB, MemoryShelf, StateShelf, check_object_id
from legionrm.state.sqlite import fault_of


class VaultObject(ResourceObject):
    """A vault with ``capacity.storage_gb`` of space serving the hosts matching ``serves``
    (empty: every host)."""

    kind = "vault"
    dims = ("storage_gb",)

    def __init__(self, name: str, capacity: Resources, *, serves: Iterable[str] = (), shelf: StateShelf | None = None,
                 quota_gb: float | None = None, **kw: Any) -> None:
        super().__init__(name, capacity, **kw)
        self.serves = tuple(serves)
        self._uses: dict[str, str] = {}  # use id -> token id
        self._ids = itertools.count(1)
        self.shelf: StateShelf = shelf if shelf is not None else MemoryShelf()
        self.quota_gb = quota_gb
        self._stored: dict[str, tuple[int, str]] = {}  # object id -> (bytes, owner)
        for oid, size in sorted(self.shelf.list().items()):
            try:
                self._book_state(oid, size, "?")
            except ValueError:  # more than the vault holds now (its capacity shrank): kept, not booked
                self._stored[oid] = (size, "?")

    # --- owner hook ------------------------------------------------------------------------

    def admit_host(self, host: str) -> Verdict:
        """Owner's veto of a host this vault would serve (after the pairing check).
        Default: admit."""
        return ADMIT

    # --- pairing -------------------------------------------------------------------------

    def serves_host(self, host: str) -> bool:
        return not self.serves or any(fnmatch.fnmatchcase(host, p) for p in self.serves)

    def check_host(self, host: str) -> Admission | Refusal:
        """Would this vault serve ``host``?  Pairing first, then the owner's veto."""
        if not self.serves_host(host):
            return self._refuse(codes.VAULT_INCOMPATIBLE, f"vault {self.name} does not serve host {host!r} ({', '.join(self.serves)})")
        verdict = self._ask_owner("admit_host", self.admit_host, host)
        return verdict if isinstance(verdict, Refusal) else ADMIT

    # --- space --------------------------------------------------------------------------------

    def make_reservation(self, request: ReservationRequest, for_host: str | None = None) -> ReservationToken | Refusal:
        """Reserve space (``request.resources.storage_gb``).  With ``for_host``,
        the vault first checks it serves that host.  Idempotent by request id."""
        if for_host is not None:
            ok = self.check_host(for_host)
            if isinstance(ok, Refusal):
                return ok
        return super().make_reservation(request)

    @public
    def use(self, token: ReservationToken, host: str, holder: Holder) -> str | Refusal:
        """Take the reserved space for an object placed on ``host``.  Every token
        rule applies, then the host check.  Returns a use id for :meth:`release`."""
        res = self._validate(token, holder, None)
        if isinstance(res, Refusal):
            return res
        ok = self.check_host(host)
        if isinstance(ok, Refusal):
            return ok
        use_id = f"{self.name}~u{next(self._ids)}"
        self._uses[use_id] = token.token_id
        self._use(res, use_id)
        return use_id

    @public
    def release(self, use_id: str, *, rollback: bool = False) -> Resources | Refusal:
        """Free the space a use took (the object's state was deleted or moved).
        With ``rollback`` (the host refused the start that needed the space) the
        use is undone instead: the reservation is active again and its token can
        be used for another host before it expires.  An unknown use id is
        ``instance.unknown``."""
        tid = self._uses.pop(use_id, None)
        res = self._by_token.get(tid) if tid is not None else None
        if res is None:
            return self._refuse(codes.INSTANCE_UNKNOWN, f"no use {use_id!r} on vault {self.name}")
        if rollback and res.uses == 1 and res.closed_at is None and res.status in ("used", "active"):
            res.let_go(use_id)
            res.uses, res.status = 0, "active"
            self._next_deadline = min(self._next_deadline, res.token.expires_at)
            return Resources()
        self._unuse(res, use_id)
        return res.token.resources if res.closed_at is not None else Resources()

    @public
    def list_uses(self) -> dict[str, str]:
        """Use id -> token id of the space in use."""
        return dict(self._uses)

    # --- objects' persistent state --------------------------------------------------------

    @public
    def put_state(self, object_id: str, data: bytes, user: str, host: str | None = None) -> int | Refusal:
        """Keep ``data`` as ``object_id``'s persistent state for ``user``
        (replacing what was stored for it), written by an instance on
        ``host``.  Returns the bytes stored, or the refusal (see the module
        doc for the order of checks)."""
        try:
            check_object_id(object_id)
        except ValueError as exc:
            return self._refuse(codes.STATE_INVALID, str(exc))
        if not isinstance(data, (bytes, bytearray)):
            return self._refuse(codes.STATE_INVALID, f"state of {object_id!r} is a {type(data).__name__}, not bytes")
        if host is not None:
            ok = self.check_host(host)
            if isinstance(ok, Refusal):
                return ok
        size = len(data)
        if self.quota_gb is not None:
            mine = sum(n for oid, (n, who) in self._stored.items() if who == user and oid != object_id)
            if mine + size > self.quota_gb * GB:
                return self._refuse(codes.STATE_QUOTA, f"{user} stores {mine} bytes here; {size} more would pass the "
                                    f"quota of {self.quota_gb:g} GB")
        old = self._stored.pop(object_id, None)
        self.calendar.remove(_state_key(object_id))
        # in whole bytes (the calendar's tolerance is finer than a GB but coarser than a byte)
        free = float(self.calendar.capacity[0] - self.calendar.peak(self.now(), None)[0]) * GB
        try:
            if size > free + 0.5:
                raise ValueError("does not fit")
            self._book_state(object_id, size, user)
        except ValueError:
            if old is not None:
                self._book_state(object_id, *old)
            return self._refuse(codes.CAPACITY, f"state of {object_id!r} is {size} bytes; {max(free, 0):.0f} bytes are free")
        try:
            self.shelf.put(object_id, bytes(data))
        except OSError as exc:  # the old state (if any) is still on the shelf: booked again, as it was
            self._unbook_state(object_id)
            if old is not None:
                self._book_state(object_id, *old)
            fault = fault_of(exc, f"shelf of vault {self.name}", getattr(exc, "filename", None) or getattr(self.shelf, "root", object_id))
            return self._refuse(fault.code, str(fault))
        return size

    @public
    def get_state(self, object_id: str) -> bytes | Refusal:
        """The stored state of ``object_id``, or ``state.unknown``."""
        data = self.shelf.get(object_id) if object_id in self._stored else None
        if data is None:
            return self._refuse(codes.STATE_UNKNOWN, f"vault {self.name} holds no state for {object_id!r}")
        return data

    @public
    def delete_state(self, object_id: str) -> bool:
        """Forget ``object_id``'s state and give its bytes back.  Idempotent:
        False when there was none."""
        if object_id not in self._stored:
            return False
        self.shelf.delete(object_id)
        self._unbook_state(object_id)
        return True

    @public
    def stored(self) -> dict[str, int]:
        """Object id -> bytes of every state stored here."""
        return {oid: n for oid, (n, _) in self._stored.items()}

    @public
    def state_owner(self, object_id: str) -> str | None:
        """The user who stored ``object_id``'s state (``"?"`` when it was found at start), or None."""
        item = self._stored.get(object_id)
        return item[1] if item is not None else None

    @public
    def dynamic_attributes(self) -> dict[str, AttrValue]:
        attrs = super().dynamic_attributes()
        attrs["stored_objects"] = len(self._stored)
        attrs["stored_bytes"] = sum(n for n, _ in self._stored.values())
        return attrs

    def _book_state(self, object_id: str, size: int, owner: str) -> None:
        """Book ``size`` bytes for ``object_id`` from now on; ValueError when they do not fit."""
        self.calendar.add(_state_key(object_id), [size / GB], self.now(), None)
        self._stored[object_id] = (size, owner)

    def _unbook_state(self, object_id: str) -> None:
        self.calendar.remove(_state_key(object_id))
        self._stored.pop(object_id, None)


def _state_key(object_id: str) -> str:
    return f"state:{object_id}"
