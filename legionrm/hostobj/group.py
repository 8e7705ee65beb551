"""Many host objects in one process, addressed by name, with batched calls.

On a small machine a Ray actor per simulated host is too dear (~90 MB and
~0.5 s each), so a :class:`HostGroup` carries many :class:`HostObject` cores,
each with its own calendar, policy and secret, and the Enactor sends it one
call per batch.  Every batch method returns one answer per input, in input
order, and never raises for one bad item: an unknown (or removed, "dead") host
answers ``resource.unknown``, an item that raised answers ``resource.error``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from legionrm import codes
from legionrm.hostobj import tokens
from legionrm.hostobj.host import HostObject
from legionrm.heartbeat import beat
from legionrm.hostobj.resource import CollectionSink, NullSink
from legionrm.models import (
    AttrValue,
    Holder,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    ResourceAudit,
    ResourceRecord,
    Resources,
    StartRequest,
    WorkResult,
)

T = TypeVar("T")
TokenRef = str | tuple[str, str] | ReservationToken
InstanceKey = str | tuple[str, str] | InstanceRef


class HostGroup:
    """A named set of host objects.  Thread-safe per host (each core locks itself)."""

    def __init__(self, name: str, hosts: Iterable[HostObject] = (), *, sink: CollectionSink | None = None) -> None:
        self.name = name
        self.sink: CollectionSink = sink if sink is not None else NullSink()  # an empty Collection is falsy
        self._hosts: dict[str, HostObject] = {}
        for h in hosts:
            self.add(h)

    # --- membership --------------------------------------------------------------------

    def add(self, host: HostObject) -> None:
        """Carry ``host`` (its sink becomes the group's).  Raises ValueError on a duplicate name."""
        if host.name in self._hosts:
            raise ValueError(f"host group {self.name}: duplicate host {host.name!r}")
        host.sink = self.sink
        self._hosts[host.name] = host

    def remove(self, name: str, reason: str = "host removed") -> bool:
        """Take a host away (it died or was drained): its instances stop and it
        leaves the collection.  Idempotent."""
        host = self._hosts.pop(name, None)
        if host is None:
            return False
        host.shutdown(reason)
        return True

    def names(self) -> list[str]:
        return sorted(self._hosts)

    def get(self, name: str) -> HostObject | None:
        return self._hosts.get(name)

    def __len__(self) -> int:
        return len(self._hosts)

    def __contains__(self, name: str) -> bool:
        return name in self._hosts

    # --- batched reservations ------------------------------------------------------------

    def make_reservations(self, requests: Sequence[ReservationRequest]) -> list[ReservationToken | Refusal]:
        """``make_reservation`` on each request's host, in order."""
        hosts, out = self._hosts, []
        for r in requests:  # (what _on does, spelt out: once per reservation)
            h = hosts.get(r.resource)
            if h is None:
                out.append(self._unknown(r.resource))
                continue
            try:
                out.append(h.make_reservation(r))
            except Exception as exc:  # one bad item must not fail the batch
                out.append(_error(r.resource, exc))
        return out

    def check_reservations(self, items: Sequence[TokenRef]) -> list[ReservationToken | Refusal]:
        out = []
        for it in items:
            host, tid = _token_route(it)
            out.append(self._on(host, lambda h, tid=tid: h.check_reservation(tid)))
        return out

    def cancel_reservations(self, items: Sequence[TokenRef]) -> list[bool]:
        """Cancel each (token, token id, or (host, token id)).  Idempotent; an
        unknown host or token is False, never an error."""
        out = []
        for it in items:
            host, tid = _token_route(it)
            what = it if isinstance(it, ReservationToken) else tid  # a token is checked to be the reservation's own
            r = self._on(host, lambda h, what=what: h.cancel_reservation(what))
            out.append(r is True)
        return out

    # --- batched instances ------------------------------------------------------------

    def start_objects(self, starts: Sequence[StartRequest]) -> list[InstanceRef | Refusal]:
        """``start_object`` on each token's issuing host, in order."""
        hosts, out = self._hosts, []
        for s in starts:  # (what _on does, spelt out: once per start)
            host = s.token.issuer
            h = hosts.get(host)
            if h is None:
                out.append(self._unknown(host))
                continue
            try:
                out.append(h.start_object(s.token, s.class_name, s.holder, vault=s.vault, args=s.args, impl=s.impl))
            except Exception as exc:  # one bad item must not fail the batch
                out.append(_error(host, exc))
        return out

    def stop_objects(self, items: Sequence[InstanceKey], reason: str = "stopped") -> list[Resources | Refusal]:
        """Stop each instance (a ref, an instance id, or (host, instance id))."""
        out = []
        for it in items:
            if isinstance(it, InstanceRef):
                host, iid = it.host, it.instance_id
            elif isinstance(it, tuple):
                host, iid = it
            else:
                host, iid = tokens.issuer_of(it), it
            out.append(self._on(host, lambda h, iid=iid: h.stop_object(iid, reason)))
        return out

    def save_object(self, host: str, instance_id: str) -> bytes | Refusal:
        """``save_object`` on ``host`` (see HostObject.save_object)."""
        return self._on(host, lambda h: h.save_object(instance_id))

    def restore_object(self, host: str, instance_id: str, data: bytes) -> bool | Refusal:
        return self._on(host, lambda h: h.restore_object(instance_id, data))

    def attested_holder(self, host: str, token_id: str) -> str | None:
        """Host ``host``'s recorded holder of ``token_id`` (None: unknown host or token)."""
        h = self._hosts.get(host)
        return h.attested_holder(token_id) if h is not None else None

    def instance_holder(self, host: str, instance_id: str) -> str | None:
        """Host ``host``'s recorded holder of the reservation ``instance_id`` runs on."""
        h = self._hosts.get(host)
        return h.instance_holder(instance_id) if h is not None else None

    def audit_views(self) -> list[ResourceAudit]:
        """Every host's :meth:`~legionrm.hostobj.resource.ResourceObject.audit_view`."""
        return [h.audit_view() for h in self._hosts.values()]

    def list_instances(self, host: str | None = None) -> list[InstanceRef]:
        hosts = [self._hosts[host]] if host in self._hosts else [] if host else self._hosts.values()
        return [ref for h in hosts for ref in h.list_instances()]

    def work_results(self, host: str, instance_ids: list[str]) -> dict[str, WorkResult]:
        """The results of ``host``'s ended runs among ``instance_ids`` (none for a host not here)."""
        h = self._hosts.get(host)
        return h.work_results(instance_ids) if h is not None else {}

    def work_output(self, host: str, instance_id: str, stream: str = "stdout", offset: int = 0,
                    limit: int = 1 << 20) -> tuple[bytes, int]:
        """A run's output on ``host`` (see :meth:`HostObject.work_output`)."""
        h = self._hosts.get(host)
        if h is None:
            raise LookupError(f"host {host!r} is not in host group {self.name!r}")
        return h.work_output(instance_id, stream, offset, limit)

    # --- a host port, so a class object can start on a grouped host ----------------------

    def start_object(
        self,
        token: ReservationToken,
        class_name: str,
        holder: Holder,
        *,
        vault: str | None = None,
        args: Mapping[str, Any] | None = None,
        impl: str | None = None,
    ) -> InstanceRef | Refusal:
        """``start_object`` on the token's issuer (so a group is a host port for all its hosts)."""
        req = StartRequest(token=token, class_name=class_name, holder=holder, vault=vault, args=dict(args or {}), impl=impl)
        return self.start_objects([req])[0]

    def stop_object(self, instance_id: str, reason: str = "stopped") -> Resources | Refusal:
        return self.stop_objects([instance_id], reason)[0]

    # --- collection and time ------------------------------------------------------------

    def join(self) -> list[ResourceRecord]:
        """Every host joins the collection (on start)."""
        return [h.join() for h in self._hosts.values()]

    def records(self) -> list[ResourceRecord]:
        return [h.record() for h in self._hosts.values()]

    def heartbeat(self, names: Iterable[str] | None = None) -> dict[str, dict[str, AttrValue]]:
        """Every host's dynamic attributes (or only those of the hosts
        ``names`` that this group carries), pushed to the sink in one
        ``update_many`` call when the sink has one (the Collection actor does),
        else one ``update`` per host."""
        hosts = self._hosts if names is None else {n: self._hosts[n] for n in names if n in self._hosts}
        attrs = {name: h.dynamic_attributes() for name, h in hosts.items()}
        batch: Callable[[list[tuple[str, dict[str, AttrValue | None]]]], Any] | None = getattr(self.sink, "update_many", None)
        not_joined = [h for h in hosts.values() if not h.joined]
        for h in not_joined:
            h.join()
        joined = [(n, beat(a)) for n, a in attrs.items() if self._hosts[n] not in not_joined]
        if batch is not None:
            batch(joined)
        else:
            for n, a in joined:
                self.sink.update(n, a)
        return attrs

    def expire(self) -> dict[str, list[str]]:
        """Sweep every host by its own clock; returns the released token ids per host."""
        out = {name: h.expire() for name, h in self._hosts.items()}
        return {k: v for k, v in out.items() if v}

    def shutdown(self, reason: str = "host group stopped") -> None:
        """Stop every host's instances and leave the collection."""
        for h in self._hosts.values():
            h.shutdown(reason)

    # --- internals ------------------------------------------------------------------------

    def _on(self, host: str, call: Callable[[HostObject], T]) -> T | Refusal:
        h = self._hosts.get(host)
        if h is None:
            return self._unknown(host)
        try:
            return call(h)
        except Exception as exc:  # one bad item must not fail the batch
            return _error(host, exc)

    def _unknown(self, host: str) -> Refusal:
        return Refusal(code=codes.RESOURCE_UNKNOWN, reason=f"host group {self.name} carries no host {host!r}", by=host)


def _error(host: str, exc: Exception) -> Refusal:
    """What an item whose host raised answers."""
    return Refusal(code=codes.RESOURCE_ERROR, reason=f"{type(exc).__name__}: {exc}", by=host)


def _token_route(item: TokenRef) -> tuple[str, str]:
    if isinstance(item, ReservationToken):
        return item.issuer, item.token_id
    if isinstance(item, tuple):
        return item
    return tokens.issuer_of(item), item
