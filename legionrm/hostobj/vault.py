"""The vault object: reservations of storage space, paired with the hosts it serves.

A Legion vault keeps the persistent state of objects; a placement maps an
object to a host *and* a vault the host can use.  A :class:`VaultObject`
reserves space with the same token rules as a host (signed, expiring, one-shot
or reusable, holder-bound), knows the hosts it serves (shell patterns, Legion's
host-vault pairing) and has its own veto of a host (:meth:`admit_host`).

Space that is *used* (an object's state stored there) stays taken until
:meth:`release` frees it: storage outlives the instance that wrote it.
"""

from __future__ import annotations

import fnmatch
import itertools
from typing import Any, Iterable

from legionrm.hostobj import codes
from legionrm.hostobj.policies import ADMIT, Admission, Verdict
from legionrm.hostobj.records import public
from legionrm.hostobj.resource import ResourceObject
from legionrm.models import (
    Holder,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)


class VaultObject(ResourceObject):
    """A vault with ``capacity.storage_gb`` of space serving the hosts matching ``serves``
    (empty: every host)."""

    kind = "vault"
    dims = ("storage_gb",)

    def __init__(self, name: str, capacity: Resources, *, serves: Iterable[str] = (), **kw: Any) -> None:
        super().__init__(name, capacity, **kw)
        self.serves = tuple(serves)
        self._uses: dict[str, str] = {}  # use id -> token id
        self._ids = itertools.count(1)

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
            res.holders.discard(use_id)
            res.uses, res.status = 0, "active"
            self._next_deadline = min(self._next_deadline, res.token.expires_at)
            return Resources()
        self._unuse(res, use_id)
        return res.token.resources if res.closed_at is not None else Resources()

    @public
    def list_uses(self) -> dict[str, str]:
        """Use id -> token id of the space in use."""
        return dict(self._uses)
