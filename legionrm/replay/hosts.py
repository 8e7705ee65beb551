"""The replay's simulated hosts: a light resource port for many alike hosts.

A replay negotiates every job's instances through the real Enactor, whose
resources it reaches through a :class:`~legionrm.enactor.ports.ResourcePort`.
Over the live simulated hosts (:class:`~legionrm.hostobj.group.HostGroup` of
:class:`~legionrm.hostobj.host.HostObject`) each instance costs about 0.9 ms:
a signed token, a validated start through its class object, a calendar, a
heartbeat of every attribute.  :class:`ReplayHosts` is that port (and the
Scheduler's :class:`~legionrm.scheduler.ports.Stopper`) for the replay's
hosts, with the same answers on what a replay asks and none of the cost:

- a reservation is granted when it fits what the host has free now, else
  refused with the host's codes (``capacity.total``, ``capacity``); its
  token is not signed (nobody but this object ever checks it) and its
  booking holds until the token is cancelled, expires unused, or its
  instance stops;
- a start checks the token as a host does (known here, this host's, its
  holder, not cancelled, used or expired) and creates the instance at once:
  no class object, no owner hook (the replay's hosts and classes have none);
- a host reports (:meth:`report`) the attributes the planner reads, with the
  values a live host would give (``free_*``, ``load``, ``instances``,
  ``reservations``, ``state``, ``drained``, ``owner_policies``), only those
  that changed since its last report, in one ``update_many``.

What it does not do: advance reservations (a start in the future is refused
with ``request.invalid``), reusable tokens (refused the same way), custom
resource kinds, owner policies, access lists, vaults, and the calendar a
live host publishes for plans ahead (no replayed request starts ahead).
Pure; no Ray.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from legionrm import codes
from legionrm.collection.collection import Collection
from legionrm.enactor.ports import CreateItem
from legionrm.hostobj.build import build_host
from legionrm.hostobj.tokens import TOKEN_ID_SEP
from legionrm.models import (
    AttrValue,
    HostSpec,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

DIMS = ("cpus", "memory_gb", "gpus")
REPORTED = ("free_cpus", "free_memory_gb", "free_gpus", "load", "reservations", "state", "owner_policies", "instances",
            "drained", "drain_reason")
"""The attributes a host reports (:meth:`ReplayHosts.attributes`), in the order it reports them."""
_EPS = 1e-9  # as the host calendar's slack


@dataclass(slots=True)
class _Booking:
    """A reservation's hold on its host: ``status`` active (unused), used (an instance runs on it), gone."""

    host: int
    amount: tuple[float, float, float]
    token: ReservationToken
    request: ReservationRequest
    status: str = "active"


class ReplayHosts:
    """Alike simulated hosts of ``specs`` for a replay over ``collection``
    (they join it at once, with the record a live simulated host of the same
    spec joins with).  Implements the Enactor's resource port and the
    Scheduler's stopper.  Not thread-safe: a replay is one thread."""

    def __init__(self, specs: Sequence[HostSpec], collection: Collection, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._collection = collection
        self.names = [s.name for s in specs]
        self._index = {n: i for i, n in enumerate(self.names)}
        self._cap: list[tuple[float, float, float]] = []
        self._sent: list[dict[str, AttrValue]] = []  # the record each host joined with
        self._last: list[tuple[AttrValue, ...] | None] = [None] * len(specs)  # its REPORTED values last sent (None: none yet)
        for s in specs:
            if s.policy or s.access.model_dump(exclude_defaults=True):
                raise ValueError(f"host {s.name}: a replay's hosts have no owner policy and no access list")
            record = build_host(s, clock=clock).record()  # the live simulated host's record: same static attributes
            collection.join(record)
            self._cap.append(tuple(float(s.capacity().amount(d)) for d in DIMS))  # type: ignore[arg-type]
            self._sent.append(dict(record.attributes))
        self._used = [[0.0, 0.0, 0.0] for _ in specs]
        self._instances = [0] * len(specs)
        self._open = [0] * len(specs)  # active, unused reservations
        self._bookings: dict[str, _Booking] = {}  # by token id, while they hold capacity
        self._by_request: dict[str, ReservationToken] = {}
        self._running: dict[str, _Booking] = {}  # by instance id
        self._ids = [itertools.count(1) for _ in specs]
        self._grants = itertools.count(1)

    # --- the Enactor's port ---------------------------------------------------------

    def reserve(self, requests: Sequence[ReservationRequest], groups: Sequence[str | None] | None = None
                ) -> list[ReservationToken | Refusal]:
        """Grant each request that fits its host now (see the module), in order: one batch, one moment (what
        the requests of a batch share, their amounts and token lives, worked out once)."""
        now = float(self._clock())
        index, by_request, bookings, cap_of, used_of, open_ = self._index, self._by_request, self._bookings, \
            self._cap, self._used, self._open
        grants, trusted = self._grants, ReservationToken.trusted
        amounts: dict[tuple[int, int], tuple[float, float, float] | None] = {}  # (its resources, host) -> amount
        lives: dict[tuple[float | None, float], tuple[float | None, float]] = {}  # (duration, timeout) -> (end, expires)
        out: list[ReservationToken | Refusal] = []
        for request in requests:
            name = request.resource
            i = index.get(name)
            if i is None:
                out.append(Refusal(code=codes.RESOURCE_UNKNOWN, reason=f"the replay carries no host {name!r}", by=name))
                continue
            old = by_request.get(request.request_id)
            if old is not None:  # a repeated id: the same answer, as a host gives it
                out.append(old)
                continue
            if (request.start is not None and request.start > now) or request.reusable:
                out.append(Refusal(code=codes.REQUEST_INVALID, by=name,
                                   reason="a replay's hosts grant no advance reservation and no reusable token"))
                continue
            r = request.resources
            cap, used = cap_of[i], used_of[i]
            key = (id(r), id(cap))  # (r is held by the request for the whole batch: its id is its own)
            if key in amounts:
                amount = amounts[key]
            else:
                amount = cap if r.exclusive else (float(r.cpus), float(r.memory_gb), float(r.gpus))
                (a0, a1, a2), (c0, c1, c2) = amount, cap
                if r.custom or a0 > c0 + _EPS or a1 > c1 + _EPS or a2 > c2 + _EPS:
                    amount = None  # more than the host has
                amounts[key] = amount
            if amount is None:
                out.append(Refusal(code=codes.CAPACITY_TOTAL, by=name,
                                   reason=f"asks {_show(r)}; capacity is {_show_vec(cap)}"))
                continue
            (a0, a1, a2), (c0, c1, c2) = amount, cap  # (three dimensions, spelt out: once per instance)
            if used[0] + a0 > c0 + _EPS or used[1] + a1 > c1 + _EPS or used[2] + a2 > c2 + _EPS:
                free = tuple(c - u for c, u in zip(cap, used))
                out.append(Refusal(code=codes.CAPACITY, by=name,
                                   reason=f"asks {_show(r)}; free at start: {_show_vec(free)}"))
                continue
            life = (request.duration_s, request.timeout_s)
            got = lives.get(life)
            if got is None:
                end = now + request.duration_s if request.duration_s is not None else None
                expires = now + request.timeout_s
                got = lives[life] = (end, float(expires if end is None else min(expires, end)))
            token = trusted(  # fields as a host fills them (valid: built here); unsigned (see the module)
                token_id=f"{name}{TOKEN_ID_SEP}r{next(grants)}", issuer=name, holder=request.holder,
                resources=r, start=now, end=got[0], expires_at=got[1])
            used[0] += a0
            used[1] += a1
            used[2] += a2
            open_[i] += 1
            bookings[token.token_id] = _Booking(i, amount, token, request)
            by_request[request.request_id] = token
            out.append(token)
        return out

    def cancel(self, tokens: Sequence[ReservationToken]) -> None:
        """Release each unused reservation; unknown, used or gone tokens are ignored."""
        for t in tokens:
            b = self._bookings.get(t.token_id)
            if b is not None and b.status == "active" and (b.token is t or b.token == t):
                self._free(b)

    def create_instances(self, items: Sequence[CreateItem]) -> list[InstanceRef | Refusal]:
        """Start each item's instance on its token's host (the checks: see the module; one batch: one moment)."""
        now, one = float(self._clock()), self._start
        return [one(it, now) for it in items]

    def _start(self, item: CreateItem, now: float) -> InstanceRef | Refusal:
        token: ReservationToken = item.host_token
        name = item.host
        b = self._bookings.get(token.token_id)
        if token.issuer != name:
            return Refusal(code=codes.TOKEN_WRONG_ISSUER, by=name, reason=f"token issued by {token.issuer!r}, not by {name!r}")
        if b is None or (b.token is not token and b.token != token):
            return Refusal(code=codes.TOKEN_UNKNOWN, by=name, reason=f"no reservation {token.token_id!r} here")
        if item.holder.user != token.holder.user:
            return Refusal(code=codes.TOKEN_WRONG_HOLDER, by=name,
                           reason=f"token held by {token.holder.user!r}, presented by {item.holder.user!r}")
        if b.status != "active":
            return Refusal(code=codes.TOKEN_USED, by=name, reason=f"one-shot token {token.token_id!r} was already used")
        if token.expires_at <= now:
            self._free(b)
            return Refusal(code=codes.TOKEN_EXPIRED, by=name, reason=f"token {token.token_id!r} expired unused")
        ref = InstanceRef.trusted(  # (valid values: built here)
            instance_id=f"{name}{TOKEN_ID_SEP}i{next(self._ids[b.host])}", class_name=item.class_name, host=name,
            token_id=token.token_id, user=item.holder.user, started_at=now, scheduler=token.holder.enactor)
        b.status = "used"
        self._open[b.host] -= 1
        self._instances[b.host] += 1
        self._running[ref.instance_id] = b
        return ref

    def stop_instances(self, instances: Sequence[InstanceRef]) -> None:
        for ref in instances:
            self.stop(ref, "enactment rolled back")

    # --- the Scheduler's stopper ------------------------------------------------------

    def stop(self, instance: InstanceRef, reason: str) -> bool:
        """Stop ``instance``: its capacity returns to its host.  False if it does not run here."""
        b = self._running.pop(instance.instance_id, None)
        if b is None:
            return False
        self._instances[b.host] -= 1
        self._free(b)
        return True

    def _free(self, b: _Booking) -> None:
        """``b``'s capacity back to its host (cancelled, expired unused, or its instance stopped)."""
        used = self._used[b.host]
        for d in range(3):
            used[d] -= b.amount[d]
        if b.status == "active":
            self._open[b.host] -= 1
        b.status = "gone"
        del self._bookings[b.token.token_id]

    # --- reports to the Collection ------------------------------------------------------

    def attributes(self, name: str) -> dict[str, AttrValue]:
        """What host ``name`` reports now (the planner's attributes, valued as a live host values them)."""
        return dict(zip(REPORTED, self._values(self._index[name])))

    def _values(self, i: int) -> tuple[AttrValue, ...]:
        """Host ``i``'s :data:`REPORTED` attributes now, in that order (each of one type, whatever its value)."""
        cap, used = self._cap[i], self._used[i]
        return (round(cap[0] - used[0], 6), round(cap[1] - used[1], 6), int(round(cap[2] - used[2])),
                round(used[0] / cap[0], 4) if cap[0] > 0 else 0.0, self._open[i],
                "busy" if used[0] > _EPS or used[1] > _EPS or used[2] > _EPS else "free", 0, self._instances[i], False, "")

    def report(self, names: Iterable[str] | None = None) -> None:
        """Hosts ``names`` (None: all) expire their unused reservations that timed out and send
        the Collection, in one ``update_many``, those of their attributes that changed since they last did."""
        now = float(self._clock())
        if any(self._open):  # (unused reservations are rare between passes: most reports look at none)
            for b in [b for b in self._bookings.values() if b.status == "active" and b.token.expires_at <= now]:
                self._free(b)
        updates: list[tuple[str, dict[str, AttrValue | None]]] = []
        for name in self.names if names is None else names:
            i = self._index[name]
            values, last = self._values(i), self._last[i]
            if last is not None:  # (what it sent last is of the same types, position by position)
                changed = {k: v for k, v, old in zip(REPORTED, values, last) if v != old}
            else:  # its first report: against the record it joined with
                sent = self._sent[i]
                changed = {k: v for k, v in zip(REPORTED, values) if sent.get(k) != v or type(sent.get(k)) is not type(v)}
            self._last[i] = values
            updates.append((name, changed))  # an empty one still says the host is alive
        if updates:
            self._collection.update_many(updates)


def _show_vec(v: Sequence[float]) -> str:
    return ", ".join(f"{d}={int(round(x)) if d == 'gpus' else round(float(x), 6)}" for d, x in zip(DIMS, v))


def _show(r: Resources) -> str:
    return _show_vec((r.cpus, r.memory_gb, r.gpus)) + (" (exclusive)" if r.exclusive else "")
