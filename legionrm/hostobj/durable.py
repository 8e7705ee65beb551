"""What a host object keeps across a restart of its actor, and what it gives back.

:meth:`Durable.durable_state` is a host object's durable state as JSON-ready data: its
secret (so the tokens it signed still verify), its token serial (so a token
id is never issued twice), its open reservations (each token, request,
status, uses and holders), its running instances (a host) and its uses (a
vault).  :meth:`Durable.restore_durable` puts that state back into a freshly built object
with the same name; a host whose instances live outside its process (a Ray
node's actors) then re-attaches them (its ``reattach``), ending those that
died with the old process.
:class:`Keeper` writes the durable states of a group's hosts to a
:class:`~legionrm.state.HostStore` after every call that may change them
(only the rows that changed) and reloads them on start.  What a call granted
is handed out only once written (:meth:`Keeper.kept`): when the write fails
(a full disk), the grant is taken back and refused with the fault's code,
the hosts are marked degraded (their heartbeats say so and go on), and every
later save tries again until one succeeds.

:meth:`Durable.cancel_requests` cancels the grants a caller gave up on (a reservation call
that timed out, an Enactor that died mid-enactment): a granted reservation
nobody holds is cancelled, not left to expire.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import threading
from typing import Any, Iterable, Mapping

from legionrm.hostobj.records import Reservation, public
from legionrm.models import InstanceRef, OwnerPolicy, Refusal, ReservationRequest, ReservationToken
from legionrm.state import HostStore, StoreFault

FORMAT = 1

log = logging.getLogger(__name__)


class Durable:
    """What a :class:`~legionrm.hostobj.resource.ResourceObject` keeps across a
    restart and gives back, as its methods (the resource's base class, kept in
    this module; ``self`` is always a ResourceObject, whose records these read)."""

    owner_change: OwnerPolicy | None = None
    """The owner's policy and access list a ``legionrm reload`` gave it (None: the cluster
    file's at ``up``), kept with its state so a restarted actor takes it back
    (:func:`~legionrm.hostobj.live.owner.owners_back`)."""
    boot: str = ""
    """The boot of the actor carrying it (its Ray actor id, which Ray keeps when it restarts the
    actor and a new ``up`` does not): an :attr:`owner_change` comes back only in the boot that
    made it, so a new ``up`` starts from the policy its cluster file gives."""

    @public
    def cancel_requests(self, request_ids: list[str] | tuple[str, ...], *, prefix: bool = False) -> list[str]:
        """Cancel the active, unused, unheld reservations granted for
        ``request_ids`` (with ``prefix``: for any request id starting with one of
        them): grants a caller gave up on.  Returns the token ids cancelled."""
        request_ids = tuple(request_ids)
        if prefix:
            found = [r for rid, r in self._by_request.items() if rid.startswith(request_ids)]
        else:
            found = [r for r in (self._by_request.get(rid) for rid in request_ids) if r is not None]
        out = []
        for r in found:
            if r.status == "active" and r.uses == 0 and not r.holders and self.cancel_reservation(r.token.token_id):
                out.append(r.token.token_id)
        return out

    def _serial(self) -> int:
        """The next grant serial (read without using it up)."""
        n = next(self._grants)
        self._grants = itertools.count(n)
        return n

    def durable_state(self) -> dict[str, Any]:
        """This resource's durable state (a host's with its instances, a vault's with its uses)."""
        with self._lock:
            return {
                "format": FORMAT, "name": self.name, "secret": self._secret.hex(), "serial": self._serial(),
                "reservations": [
                    {"token": r.token.model_dump(mode="json"), "request": r.request.model_dump(mode="json"),
                     "status": r.status, "uses": r.uses, "holders": sorted(r.holders)}
                    for r in self._open.values()
                ],
                "instances": [{"ref": ref.model_dump(mode="json"), "token_id": r.token.token_id}
                              for ref, r in getattr(self, "_instances", {}).values()],
                "uses": dict(getattr(self, "_uses", {})),
                "owner": None if self.owner_change is None else self.owner_change.model_dump(mode="json"),
                "owner_boot": self.boot,
            }

    def restore_durable(self, body: Mapping[str, Any]) -> int:
        """Put ``body`` (a :meth:`durable_state` of an object of the same name)
        back into this fresh object: the same secret, a serial never below the
        stored one, every open reservation booked again and every instance
        listed again.  A reservation that no longer fits the calendar (the
        capacity shrank) is dropped.  Returns how many reservations came back."""
        if body.get("format") != FORMAT or body.get("name") != self.name:
            return 0
        back = 0
        with self._lock:
            self._secret = bytes.fromhex(body["secret"])
            self._grants = itertools.count(max(int(body["serial"]), self._serial()))
            for item in body["reservations"]:
                token = ReservationToken.model_validate(item["token"])
                request = ReservationRequest.model_validate(item["request"])
                if token.token_id in self._by_token:
                    continue
                try:
                    self.calendar.add(token.token_id, self._vector(request.resources), token.start, token.end)
                except ValueError:
                    continue
                r = Reservation.of(token, request, status=item["status"], uses=int(item["uses"]),
                                   holders=tuple(sorted(set(item["holders"]))))
                self._by_token[token.token_id] = self._by_request[request.request_id] = self._open[token.token_id] = r
                back += 1
            instances = getattr(self, "_instances", None)
            if instances is not None:
                for item in body.get("instances", ()):
                    r = self._by_token.get(item["token_id"])
                    if r is not None:
                        ref = InstanceRef.model_validate(item["ref"])
                        instances[ref.instance_id] = (ref, r)
            uses = getattr(self, "_uses", None)
            if uses is not None:  # a vault: the space each instance uses, by use id
                uses.update({u: t for u, t in body.get("uses", {}).items() if t in self._by_token})
            if body.get("owner") is not None and body.get("owner_boot") == self.boot:  # a reload's policy, this
                # boot's: the actor puts it back (owners_back); another boot's file gave its own policy at `up`
                self.owner_change = OwnerPolicy.model_validate(body["owner"])
            self._next_deadline = -math.inf  # the next call sweeps what came due while the actor was down
        return back


class Keeper:
    """Keeps the durable state of ``hosts`` (name -> host object) in ``store``."""

    def __init__(self, store: HostStore, hosts: Iterable[Any]) -> None:
        self.store = store
        self.hosts = {h.name: h for h in hosts}
        self._written: dict[str, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | None, resources: Iterable[Any], boot: str = "") -> "Keeper | None":
        """A keeper of ``resources`` in the SQLite file ``path`` (None: no file,
        no keeper), with what was stored there restored into them first and
        each restored resource that can (``reattach``) re-attached.  ``boot``
        is the carrying actor's (:attr:`Durable.boot`), given to each resource."""
        resources = list(resources)
        for resource in resources:
            resource.boot = boot
        if not path:
            return None
        keeper = cls(HostStore(path), resources)
        back = keeper.restore()
        for name in back:
            reattach = getattr(keeper.hosts[name], "reattach", None)
            if callable(reattach):
                reattach()
        if any(back.values()):
            log.warning("%s restarted: %d reservation(s) reloaded", ", ".join(sorted(back)), sum(back.values()))
        keeper.kept(None)
        return keeper

    def restore(self) -> dict[str, int]:
        """Reload every stored host this keeper carries: reservations back, by host."""
        out = {}
        for name, body in self.store.load().items():
            host = self.hosts.get(name)
            if host is not None:
                out[name] = host.restore_durable(body)
        self.kept(None)
        return out

    def save(self) -> int:
        """Write the hosts whose state changed since the last save; returns
        how many.  A write that fails raises :class:`StoreFault` and marks
        every host degraded; the next save that succeeds clears it (and an
        idle one truncates the store's log)."""
        with self._lock:
            bodies = {n: json.dumps(h.durable_state(), sort_keys=True) for n, h in self.hosts.items()}
            changed = {n: b for n, b in bodies.items() if self._written.get(n) != b}
            try:
                self.store.put_many(changed)
            except StoreFault as fault:
                self._degrade(str(fault))
                raise
            self._written.update(changed)
            self._degrade(None)
            if not changed:
                self.store.maintain()
            return len(changed)

    def kept(self, out: Any) -> Any:
        """``out`` (what a call answered), once the hosts' states are written.
        When the write fails, each grant in ``out`` (a token, a started
        instance) is taken back and answered with a :class:`Refusal` of the
        fault's code instead, so nothing is handed out that a restart would
        forget; anything else (a release, an expiry) stays done and a later
        save writes it.  Never raises :class:`StoreFault`."""
        try:
            self.save()
        except StoreFault as fault:
            log.warning("%s", fault)
            return self._take_back(out, fault)
        return out

    def _take_back(self, out: Any, fault: StoreFault) -> Any:
        if isinstance(out, list):
            return [self._take_back(x, fault) for x in out]
        if isinstance(out, ReservationToken) and (host := self.hosts.get(out.issuer)) is not None:
            if out.token_id in self._durable(host.name):
                return out  # a grant written before (asked again): it stands
            host.cancel_reservation(out.token_id)
        elif isinstance(out, InstanceRef) and (host := self.hosts.get(out.host)) is not None:
            if out.instance_id in self._durable(host.name):
                return out
            host.stop_object(out.instance_id, "its host could not write its state")
        else:
            return out
        return Refusal(code=fault.code, reason=str(fault), by=host.name)

    def _durable(self, name: str) -> set[str]:
        """The token and instance ids the last written state of host ``name`` holds."""
        body = json.loads(self._written.get(name) or "{}")
        return ({r["token"]["token_id"] for r in body.get("reservations", ())}
                | {i["ref"]["instance_id"] for i in body.get("instances", ())})

    def _degrade(self, why: str | None) -> None:
        for host in self.hosts.values():
            host.degraded = why
