"""Schedule arithmetic for the Enactor: which reservations (slots) a mapping
needs, what each must be made for, and which delta schedules to try together.

Pure functions over the pydantic schedule models; no state, no I/O (the
Scheduler's attestations of a schedule's reservations are made here too, so
they are named as the Enactor asks).
"""

from __future__ import annotations

import time
from typing import Any, Literal, Sequence

from legionrm import codes
from legionrm.auth import VerifiedCaller, attest
from legionrm.auth.attest import attestation_key, reservation_of
from legionrm.models import (
    DeltaSchedule,
    EnactRequest,
    Placement,
    ReservationRequest,
    PlacementFailure,
    Resources,
)

Kind = Literal["host", "vault"]
Slot = tuple[str, Kind]  # (placement key, which reservation)


def slot_spec(p: Placement, kind: Kind) -> tuple | None:
    """What a slot's reservation must be made for (None: the slot is not needed).

    A host reservation is for (host, resources, vault): as in Legion, a host
    reserves for a host-vault pair and checks the pairing when it grants, so
    a delta that changes only the vault must re-reserve the host too (and
    that counts as thrash).  A vault reservation is for (vault, resources).
    """
    if kind == "host":
        return (p.host, p.resources, p.vault)
    if p.vault is None:
        return None
    return (p.vault, p.resources)


def slot_ask(p: Placement, kind: str) -> Resources:
    """What a slot's reservation asks: a host the placement's resources, a vault its storage."""
    return p.resources if kind == "host" else Resources(storage_gb=p.resources.storage_gb)


def slots_of(mapping: dict[str, Placement], keys) -> list[tuple[Slot, tuple]]:
    out = []
    for k in keys:
        p = mapping[k]
        for kind in ("host", "vault"):
            s = slot_spec(p, kind)  # type: ignore[arg-type]
            if s is not None:
                out.append(((k, kind), s))
    return out


def missing_slots(mapping: dict[str, Placement], keys, held) -> list[tuple[Slot, tuple]]:
    """:func:`slots_of` the ``keys`` of ``mapping``, but only the slots ``held`` does not have (the
    spec made only for those)."""
    out = []
    for k in keys:
        p = mapping[k]
        if (k, "host") not in held:
            out.append(((k, "host"), slot_spec(p, "host")))
        if p.vault is not None and (k, "vault") not in held:
            out.append(((k, "vault"), slot_spec(p, "vault")))
    return out


def delta_wave(deltas: Sequence[DeltaSchedule], used: set[int], failing) -> list[tuple[int, DeltaSchedule]]:
    """The deltas to try in the next reservation round, in delta order.

    The first unused delta that replaces a failing mapping is always in.
    When it only replaces failing mappings (a pure repair: nothing to
    release), every further pure repair on other keys joins the same round,
    up to the first delta that would release something: such repairs are
    independent, so trying them together gives each key the outcome the
    one-by-one order would, in one parallel round instead of many.  A delta
    that releases reservations is always tried alone.
    """
    failing = set(failing)
    wave: list[tuple[int, DeltaSchedule]] = []
    keys: set[str] = set()
    for di, d in enumerate(deltas):
        if di in used or not (d.keys & failing):
            continue
        pure = d.keys <= failing
        if not wave:
            wave.append((di, d))
            keys |= d.keys
            if not pure:
                break
        elif not pure:
            break
        elif not (d.keys & keys):
            wave.append((di, d))
            keys |= d.keys
    return wave


class RequestShape:
    """The reservation requests of one enactment, one validated shape for all.

    What every request of an enactment shares (holder, start, timeout) is
    validated once, in the first request built; each further request is that
    one with its own values put in without validating them again: they are
    the schedule's validated values (names, amounts, vaults), the enactment's
    attestations, and a duration checked here as the model checks it (a
    duration the model would refuse is built through the model, which raises)."""

    def __init__(self, req: EnactRequest) -> None:
        self.req = req
        self.first: ReservationRequest | None = None

    def request(self, *, duration_s: float | None, **values: Any) -> ReservationRequest:
        req = self.req
        if self.first is None or not (duration_s is None or duration_s > 0):
            made = ReservationRequest(holder=req.holder, start=req.start, timeout_s=req.timeout_s,
                                      duration_s=duration_s, **values)
            self.first = self.first or made
            return made
        return self.first.replaced(duration_s=None if duration_s is None else float(duration_s), **values)


def by_key(table: dict, p: Placement):
    """``table``'s entry for a placement: by its key, else by its class name
    (an ``EnactRequest``'s ``duration_s`` and ``args`` accept either)."""
    return table[p.key] if p.key in table else table.get(p.class_name)


def apply_delta(mapping: dict[str, Placement], delta: DeltaSchedule) -> dict[str, Placement] | None:
    """The mapping with the delta's placements substituted (order kept);
    None when the delta names a key the schedule does not have."""
    if not delta.keys <= mapping.keys():
        return None
    new = dict(mapping)
    for p in delta.placements:
        new[p.key] = p
    return new


def plan_failure(delta: DeltaSchedule) -> PlacementFailure:
    extra = sorted(delta.keys)
    return PlacementFailure(
        key=",".join(extra),
        resource="",
        code=codes.DELTA_UNKNOWN_KEY,
        reason=f"delta schedule replaces keys the master does not have: {extra}",
        stage="plan",
    )


def attest_schedules(credential: Any, schedules: EnactRequest, ttl_s: float = 300.0) -> EnactRequest:
    """``schedules`` with the Scheduler's attestation of its holder (the verified caller: the door put
    it there) for each reservation they may ask: one per placement key, kind and resource, bound to
    that reservation and its amount, so it is good for nothing else (:mod:`legionrm.auth.attest`);
    the Enactor asks under the same names (:meth:`Enactor._reserve`)."""
    rid, who = schedules.request_id, VerifiedCaller(name=schedules.holder.user, kind="user",
                                                     groups=tuple(schedules.holder.groups))
    slots = {(p.key, kind, spec[0]): slot_ask(p, kind) for m in schedules.masters for sched in (m, *m.deltas)
             for p in sched.placements for kind in ("host", "vault") if (spec := slot_spec(p, kind)) is not None}
    now, att = time.time(), {}
    for (key, kind, name), ask in sorted(slots.items(), key=lambda kv: kv[0]):
        res = reservation_of(rid, key, kind)
        att[attestation_key(name, res)] = attest(credential, who, rid, name, now, ttl_s, reservation=res,
                                                 resources=ask).model_dump(mode="json")
    return schedules.model_copy(update={"attestations": att})
