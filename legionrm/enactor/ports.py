"""What the enactor needs from the resources: the port collaborator.

The enactor core (:mod:`legionrm.enactor.enactor`) never talks to host,
vault or class objects itself; it hands batches to a :class:`ResourcePort`.
Two ports exist: :class:`InProcessPort` here (plain Python resource
objects, for tests, offline tools and one-process systems) and
``legionrm.enactor.actor.RayResourcePort`` (Ray actors, one batched call per host
group, all groups in parallel).  ``legionrm.enactor.fakes`` has a scripted
fake for unit tests.

Every method takes and returns batches because a batch is what crosses an
actor boundary cheaply (one call carrying 1,000 reservations costs about what
ten single calls cost).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Protocol, Sequence, runtime_checkable

from legionrm import codes
from legionrm.models import (
    AttrValue,
    CreateRequest,
    Holder,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
)


NO_ARGS: Mapping[str, AttrValue] = MappingProxyType({})
"""No arguments (read-only: one empty mapping serves every item)."""


class CreateItem(NamedTuple):
    """One ``create_instance`` the enactor asks a class object to carry out
    (Legion's step 7): start ``class_name`` on ``host`` with ``host_token``,
    using ``vault`` (and its token, when the placement named one).

    ``request_id`` is deterministic (request, key, attempt), so a class object
    may use it to make a repeated create harmless.  ``group`` is the host
    group actor carrying ``host`` (a routing hint, may be None).  A named
    tuple: immutable, and cheap to make (the enactor makes one per instance).
    """

    request_id: str
    key: str
    class_name: str
    host: str
    vault: str | None
    host_token: ReservationToken
    vault_token: ReservationToken | None
    holder: Holder
    args: Mapping[str, AttrValue] = NO_ARGS
    group: str | None = None


def create_request(item: CreateItem) -> CreateRequest:
    """What a class object's ``create_instances`` is sent for ``item`` (its parts are
    validated already: the schedule's, and tokens the enactor checked are tokens)."""
    return CreateRequest.trusted(host=item.host, token=item.host_token, vault=item.vault, vault_token=item.vault_token,
                                 holder=item.holder, args=dict(item.args))


@runtime_checkable
class ResourcePort(Protocol):
    """The enactor's view of the resources.

    Implementations must keep the order of their inputs in their outputs and
    must turn an unreachable resource into ``Refusal(code=codes.RESOURCE_DEAD)``, never into
    an exception; an exception means the port itself is broken, and the
    enactor answers it by cancelling everything it holds and raising
    :class:`legionrm.errors.EnactmentError`.
    """

    def reserve(
        self, requests: Sequence[ReservationRequest], groups: Sequence[str | None] | None = None
    ) -> list[ReservationToken | Refusal]:
        """Ask every resource named in ``requests`` for a reservation, all in
        parallel (one batched call per host group).  ``groups[i]`` is the host
        group that carries ``requests[i].resource`` when the schedule knew it.
        Returns one token or refusal per request, in request order.  Safe to
        repeat: resources answer a repeated ``request_id`` with the same token."""
        ...

    def cancel(self, tokens: Sequence[ReservationToken]) -> None:
        """Release reservations.  Idempotent; unknown or expired tokens and dead
        resources are ignored (tokens time out on their own)."""
        ...

    def create_instances(self, items: Sequence[CreateItem]) -> list[InstanceRef | Refusal]:
        """Have each item's class object create its instance (the class asks
        the host to ``start_object`` with the token; either may veto).  Returns
        one instance or refusal per item, in order."""
        ...

    def stop_instances(self, instances: Sequence[InstanceRef]) -> None:
        """Stop instances this enactment started (rollback after a start-stage
        failure).  Idempotent; best effort."""
        ...


# --- the in-process port ---------------------------------------------------


class InProcessPort:
    """A port over ``legionrm.hostobj`` cores in this process.

    ``resources`` maps a host or vault name to the object that carries it:
    a batched carrier (``make_reservations`` / ``cancel_reservations``, e.g. a
    ``HostGroup``) or a single resource (``make_reservation`` /
    ``cancel_reservation``, e.g. a ``HostObject`` or ``VaultObject``).
    Requests to the same carrier go in one call, as over Ray.  ``classes``
    maps a class name to its ``ClassObject`` (``create_instances``,
    ``destroy_instance``); ``groups`` maps a host group name to its carrier,
    and a request whose group hint names one goes there (as over Ray).  A
    name nothing carries answers ``resource.dead``.
    """

    def __init__(
        self,
        resources: Mapping[str, Any],
        classes: Mapping[str, Any] | None = None,
        groups: Mapping[str, Any] | None = None,
    ) -> None:
        self._resources = dict(resources)
        self._classes = dict(classes or {})
        self._groups = dict(groups or {})

    @classmethod
    def of(cls, carriers: Sequence[Any], classes: Sequence[Any] = ()) -> "InProcessPort":
        """Index host groups (by every host they carry) and single resources by name."""
        index: dict[str, Any] = {}
        groups: dict[str, Any] = {}
        for c in carriers:
            if hasattr(c, "names"):
                groups[c.name] = c
                for n in c.names():
                    index[n] = c
            else:
                index[c.name] = c
        return cls(index, {c.name: c for c in classes}, groups)

    def reserve(
        self, requests: Sequence[ReservationRequest], groups: Sequence[str | None] | None = None
    ) -> list[ReservationToken | Refusal]:
        out: list[ReservationToken | Refusal | None] = [None] * len(requests)
        batches: dict[int, tuple[Any, list[int]]] = {}
        for i, req in enumerate(requests):
            hint = groups[i] if groups is not None else None
            target = self._groups.get(hint) if hint is not None else None
            if target is None:
                target = self._resources.get(req.resource)
            if target is None:
                out[i] = Refusal(code=codes.RESOURCE_DEAD, reason=f"no resource {req.resource!r} is reachable", by=req.resource)
            elif hasattr(target, "make_reservations"):
                batches.setdefault(id(target), (target, []))[1].append(i)
            else:
                out[i] = target.make_reservation(req)
        for target, idx in batches.values():
            for i, answer in zip(idx, target.make_reservations([requests[i] for i in idx])):
                out[i] = answer
        return out  # type: ignore[return-value]

    def cancel(self, tokens: Sequence[ReservationToken]) -> None:
        batches: dict[int, tuple[Any, list[ReservationToken]]] = {}
        for t in tokens:
            target = self._resources.get(t.issuer)
            if target is None:
                continue  # gone: the token times out there, if anywhere
            if hasattr(target, "cancel_reservations"):
                batches.setdefault(id(target), (target, []))[1].append(t)
            else:
                target.cancel_reservation(t)
        for target, toks in batches.values():
            target.cancel_reservations(toks)

    def create_instances(self, items: Sequence[CreateItem]) -> list[InstanceRef | Refusal]:
        """One ``create_instances`` call per class object, as over Ray (``create_items``,
        when the class object has it: the items themselves, no request models made)."""
        out: list[InstanceRef | Refusal | None] = [None] * len(items)
        by_class: dict[str, list[int]] = {}
        for i, it in enumerate(items):
            by_class.setdefault(it.class_name, []).append(i)
        for name, idx in by_class.items():
            cls = self._classes.get(name)
            if cls is None:
                for i in idx:
                    out[i] = Refusal(code=codes.RESOURCE_DEAD, reason=f"no class object {name!r} is reachable", by=name)
                continue
            many = getattr(cls, "create_items", None)  # (a class object in this process takes the items as they are)
            answers = many([items[i] for i in idx]) if many is not None else cls.create_instances(
                [create_request(items[i]) for i in idx])
            for i, answer in zip(idx, answers):
                out[i] = answer
        return out  # type: ignore[return-value]

    def stop_instances(self, instances: Sequence[InstanceRef]) -> None:
        for ref in instances:
            cls = self._classes.get(ref.class_name)
            if cls is not None:
                cls.destroy_instance(ref.instance_id, "enactment rolled back")
