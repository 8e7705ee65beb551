"""A scripted, in-process stand-in for the resources, for enactor tests.

:class:`FakePort` implements :class:`legionrm.enactor.ports.ResourcePort`
over a dictionary of :class:`FakeResource` records, with a settable clock,
per-resource refusals, dead resources, start-time vetoes and a log of every
batched call, so a test can assert exactly what was reserved, kept and
released.  It enforces what real resources enforce: capacity, token expiry,
one start per token, idempotent request ids and idempotent cancel.  Used by
the enactor's tests and offered to the scheduler's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from legionrm import codes
from legionrm.enactor.ports import CreateItem
from legionrm.models import InstanceRef, Refusal, ReservationRequest, ReservationToken


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, dt: float) -> None:
        self.now += dt


@dataclass
class FakeResource:
    """One host or vault: capacity in cpus (vaults: storage_gb), and its
    scripted behaviour.  ``refuse`` refuses every reservation with that code;
    ``veto_start`` refuses every start with that code; ``dead`` answers
    nothing (the port reports ``resource.dead``)."""

    name: str
    capacity: float = 8.0
    refuse: str | None = None
    veto_start: str | None = None
    dead: bool = False


@dataclass
class _Res:
    token: ReservationToken
    request_id: str
    amount: float
    cancelled: bool = False
    started: bool = False


@dataclass
class FakePort:
    """Resources in a dict; every call is logged in ``calls`` as
    ``(method, [request ids or token ids])``.

    ``raise_on`` makes the n-th call (1-based, any method) raise
    ``RuntimeError`` (a broken port).  ``before_reserve`` runs before each
    reserve round (e.g. to advance the clock mid-enactment).
    """

    resources: dict[str, FakeResource]
    clock: Callable[[], float] = field(default_factory=FakeClock)
    raise_on: int | None = None
    before_reserve: Callable[[Sequence[ReservationRequest]], None] | None = None
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    _res: dict[str, _Res] = field(default_factory=dict)  # token_id -> reservation
    _by_request: dict[tuple[str, str], str] = field(default_factory=dict)  # (resource, request_id) -> token_id

    @classmethod
    def of(cls, *names: str, capacity: float = 8.0, clock: Callable[[], float] | None = None) -> "FakePort":
        return cls({n: FakeResource(n, capacity) for n in names}, clock=clock or FakeClock())

    # --- what tests read ---------------------------------------------------

    def live(self) -> set[str]:
        """Token ids of reservations still held: not cancelled, and either
        started (an instance holds them) or not yet expired."""
        now = self.clock()
        return {t for t, r in self._res.items() if not r.cancelled and (r.started or r.token.expires_at > now)}

    def cancelled(self) -> list[str]:
        """Token ids cancelled, in the order the cancels arrived."""
        out: list[str] = []
        for m, ids in self.calls:
            if m == "cancel":
                out += ids
        return out

    def _tick(self, method: str, ids: list[str]) -> None:
        self.calls.append((method, ids))
        if self.raise_on is not None and len(self.calls) == self.raise_on:
            raise RuntimeError(f"fake port broke on call {len(self.calls)} ({method})")

    def _used(self, resource: str, now: float) -> float:
        return sum(
            r.amount
            for r in self._res.values()
            if r.token.issuer == resource and not r.cancelled and (r.started or r.token.expires_at > now)
        )

    # --- the port protocol -------------------------------------------------

    def reserve(
        self, requests: Sequence[ReservationRequest], groups: Sequence[str | None] | None = None
    ) -> list[ReservationToken | Refusal]:
        if self.before_reserve is not None:
            self.before_reserve(requests)
        self._tick("reserve", [r.request_id for r in requests])
        now = self.clock()
        out: list[ReservationToken | Refusal] = []
        for rq in requests:
            res = self.resources.get(rq.resource)
            if res is None or res.dead:
                out.append(Refusal(code=codes.RESOURCE_DEAD, reason=f"{rq.resource} does not answer", by=rq.resource))
                continue
            if res.refuse:
                out.append(Refusal(code=res.refuse, reason=f"{rq.resource} refuses", by=rq.resource))
                continue
            known = self._by_request.get((rq.resource, rq.request_id))
            if known is not None and known in self.live():
                out.append(self._res[known].token)  # idempotent repeat
                continue
            amount = rq.resources.cpus if rq.resources.cpus else rq.resources.storage_gb
            if self._used(rq.resource, now) + amount > res.capacity:
                out.append(Refusal(code=codes.CAPACITY, reason=f"{rq.resource} is full", by=rq.resource))
                continue
            tid = f"{rq.resource}:{rq.request_id}"
            tok = ReservationToken(
                token_id=tid,
                issuer=rq.resource,
                holder=rq.holder,
                resources=rq.resources,
                vault=rq.vault,
                start=now,
                end=None,
                expires_at=now + rq.timeout_s,
            )
            self._res[tid] = _Res(tok, rq.request_id, amount)
            self._by_request[(rq.resource, rq.request_id)] = tid
            out.append(tok)
        return out

    def cancel(self, tokens: Sequence[ReservationToken]) -> None:
        self._tick("cancel", [t.token_id for t in tokens])
        for t in tokens:
            r = self._res.get(t.token_id)
            if r is not None:
                r.cancelled = True

    def create_instances(self, items: Sequence[CreateItem]) -> list[InstanceRef | Refusal]:
        self._tick("create", [it.request_id for it in items])
        now = self.clock()
        out: list[InstanceRef | Refusal] = []
        for it in items:
            host = self.resources.get(it.host)
            r = self._res.get(it.host_token.token_id)
            if host is None or host.dead:
                out.append(Refusal(code=codes.RESOURCE_DEAD, reason=f"{it.host} does not answer", by=it.host))
            elif host.veto_start:
                out.append(Refusal(code=host.veto_start, reason=f"{it.host} vetoes the start", by=it.host))
            elif r is None or r.cancelled or r.token.issuer != it.host:
                out.append(Refusal(code=codes.TOKEN_UNKNOWN, reason="no such reservation", by=it.host))
            elif r.started:
                out.append(Refusal(code=codes.TOKEN_USED, reason="token already used", by=it.host))
            elif r.token.expires_at <= now:
                out.append(Refusal(code=codes.TOKEN_EXPIRED, reason="token expired", by=it.host))
            else:
                r.started = True
                out.append(
                    InstanceRef(
                        instance_id=f"{it.class_name}/{it.key}",
                        class_name=it.class_name,
                        host=it.host,
                        vault=it.vault,
                        token_id=r.token.token_id,
                        user=it.holder.user,
                        started_at=now,
                    )
                )
        return out

    def stop_instances(self, instances: Sequence[InstanceRef]) -> None:
        self._tick("stop", [i.instance_id for i in instances])
        for i in instances:
            r = self._res.get(i.token_id)
            if r is not None:
                r.cancelled = True  # stopping frees the instance's capacity
