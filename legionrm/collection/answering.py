"""Which resources do not answer, and why: what ``up`` checks before it says
the system is up, and what ``status`` shows.

A resource answers when its record is in the Collection and its last write
was not refused.  The Collection's door keeps each resource's latest refused
write (:class:`RefusedWrites`: a join or heartbeat signed with a key the
registry does not hold is ``auth.bad_signature``); :func:`answering` sets the
resources a system should hold beside those the Collection holds and those
refusals, and :meth:`Answering.line` says it in one line:
``12 of 16 resources not answering: auth.bad_signature from host:h3, ...``.
Pure: no Ray.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from legionrm.models import RefusedWrite

MAX_KEPT = 1024
"""How many resources' refusals a Collection keeps (the oldest go first)."""
NO_ANSWER = "never joined"
"""What a missing resource with no refusal on record is shown as."""


class RefusedWrites:
    """The latest refused write of each resource, at most ``max_kept``
    resources; a resource whose write is accepted is forgotten.  Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.time, max_kept: int = MAX_KEPT) -> None:
        self._clock, self._max = clock, max_kept
        self._by_name: OrderedDict[str, RefusedWrite] = OrderedDict()
        self._lock = threading.Lock()

    def refused(self, resource: str, principal: str, code: str, reason: str) -> None:
        with self._lock:
            old = self._by_name.pop(resource, None)
            count = old.count + 1 if old is not None and old.code == code else 1
            self._by_name[resource] = RefusedWrite(resource=resource, principal=principal, code=code,
                                                   reason=reason, at=self._clock(), count=count)
            while len(self._by_name) > self._max:
                self._by_name.popitem(last=False)

    def answered(self, resource: str) -> None:
        if self._by_name:  # the hot path (every heartbeat) takes no lock when nothing was refused
            with self._lock:
                self._by_name.pop(resource, None)

    def latest(self) -> list[RefusedWrite]:
        """Every resource's latest refusal, latest first."""
        with self._lock:
            return sorted(self._by_name.values(), key=lambda r: r.at, reverse=True)


def signer_of(proof: Any) -> str:
    """Who a proof says signed it (unverified: for showing, never for deciding)."""
    user = proof.get("user") if isinstance(proof, dict) else getattr(proof, "user", None)
    return user if isinstance(user, str) else ""


@dataclass(frozen=True)
class Answering:
    """How many of a system's resources answer; why the others do not."""

    total: int
    silent: tuple[str, ...]
    refusals: tuple[RefusedWrite, ...]

    @property
    def ok(self) -> bool:
        return not self.silent

    def line(self, shown: int = 4) -> str:
        """One line: every resource answers, or how many do not and why
        (grouped by refusal code, the first ``shown`` names of each)."""
        if self.ok:
            return f"all {self.total} resources answer"
        why = {r.resource: r for r in self.refusals}
        groups: dict[str, list[str]] = {}
        for name in self.silent:
            r = why.get(name)
            groups.setdefault(r.code if r is not None else NO_ANSWER, []).append(r.who if r is not None else name)
        parts = []
        for code, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            more = f" and {len(names) - shown} more" if len(names) > shown else ""
            parts.append(f"{code}: {', '.join(names[:shown])}{more}" if code == NO_ANSWER
                         else f"{code} from {', '.join(names[:shown])}{more}")
        return f"{len(self.silent)} of {self.total} resources not answering: " + "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"total": self.total, "not_answering": list(self.silent),
                "refusals": [r.model_dump() for r in self.refusals]}


def answering(expected: Iterable[str], present: Iterable[str], refusals: Iterable[RefusedWrite]) -> Answering:
    """The resources of ``expected`` (what the system booted) the Collection
    does not hold (``present``), and those whose latest write was refused."""
    want, have = set(expected), set(present)
    refused = list(refusals)
    silent = (want - have) | {r.resource for r in refused}
    return Answering(total=len(want | have | silent), silent=tuple(sorted(silent)),
                     refusals=tuple(r for r in refused if r.resource in silent))
