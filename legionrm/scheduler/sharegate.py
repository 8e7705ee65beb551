"""How much, for ``scheduleObjects``: the fair-share core's class rules applied
to one request before it is placed.

An object request may name its DUCC class (``ducc_class``); one that does
not is governed by its resource pool only (a one-shot request is not DUCC
work unless it says so: DUCC's default classes are for its own jobs, and a
default FIXED_SHARE class would pin every request to one nodepool).  The
class decides, as in DUCC:

* **who**: a class with a user list admits only those users
  (``ducc.user``);
* **where**: non-preemptable work (FIXED_SHARE, RESERVE) runs only in its
  class's nodepool; fair-share work in that nodepool or below it (DUCC lets
  it squat in sub-pools).  The request's MIL constraint is narrowed to the
  hosts whose ``nodepool`` is one of those, so the planner's ``query`` step
  names the hosts left out;
* **how big**: RESERVE takes a whole host (exclusive) whose size matches the
  instance's share order exactly, or up to ``ceil((memory + overage) /
  quantum)`` with a configured overage (DUCC's rule), never a bigger host (DUCC's machine order: ``floor((memory - reserved) / quantum)``
  against the job order ``ceil(memory / quantum)``);
* **how much**: non-preemptable work counts against its user's allotment (the
  user's ``max_allotment_gb``, else the global one), each instance as its
  shares (``ceil(memory / quantum)`` quanta of its top nodepool).  A request
  is a gang: all its instances fit under the allotment or none is placed,
  with DUCC's own text (``ducc.allotment``);
* **priority and weight**: an object request takes its class's (the pools'
  admission orders by priority); only an administrator's request may give
  its own (the Scheduler's door refuses anyone else's: ``request.priority``).
  The queue's order is the site's (:mod:`legionrm.scheduler.priority`).

:meth:`ShareGate.shape` is pure (it is also what ``make_schedules`` and
``explain`` see); :meth:`ShareGate.admit` charges the allotment and
:meth:`ShareGate.release` gives it back (idempotent), like a pool gate.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from legionrm import codes
from legionrm.models import ObjectRequest, PlacementFailure, Refusal, SchedulingRequest
from legionrm.scheduler.fairshare import (
    ALLOTMENT,
    ClassTable,
    DuccCore,
    NodepoolTree,
    ResourceClass,
    RmSettings,
    SharePolicy,
    UserSpec,
    allotment_gb,
    job_order,
    reserve_max_order,
)
from legionrm.scheduler.planner import keys_of, span

GATE = "ducc"
"""What refuses, in failures and refusals made here."""


@dataclass(frozen=True)
class _Charge:
    user: str
    gb: float  # quantum shares, in GB


class ShareGate:
    """The DUCC class rules for one-shot requests.  Thread-safe."""

    def __init__(
        self, classes: ClassTable, nodepools: NodepoolTree, *, users: dict[str, UserSpec] | None = None,
        settings: RmSettings | None = None,
    ) -> None:
        self.classes = classes
        self.nodepools = nodepools
        self.users = dict(users or {})
        self.settings = settings or RmSettings()
        self._lock = threading.Lock()
        self._charged: dict[str, _Charge] = {}

    @classmethod
    def from_core(cls, core: DuccCore) -> "ShareGate":
        """The rules of a configured fair-share core (its classes, nodepools, users, settings)."""
        return cls(core.classes, core.tree, users=core.users, settings=core.settings)

    # --- the rules ----------------------------------------------------------------

    def class_of(self, obj: ObjectRequest) -> ResourceClass | Refusal | None:
        """The class ``obj`` names (None when it names none); a Refusal for an unknown name."""
        name = obj.ducc_class
        if name is None:
            return None
        cls = self.classes.classes.get(name)
        if cls is None:
            known = ", ".join(sorted(self.classes.classes)) or "none"
            return Refusal(code=codes.DUCC_CLASS_UNKNOWN, by=GATE, reason=f"no DUCC class {name!r} (known: {known})")
        return cls

    def shape(self, request: SchedulingRequest) -> tuple[SchedulingRequest, list[PlacementFailure]]:
        """``request`` as its classes shape it (constraint narrowed to their
        nodepools, RESERVE exclusive and size-matched, priority and weight
        filled in), and a plan-stage failure for every object request a class
        refuses.  Pure; charges nothing."""
        objects: list[ObjectRequest] = []
        failures: list[PlacementFailure] = []
        for obj, keys in zip(request.objects, keys_of(request)):
            cls = self.class_of(obj)
            if isinstance(cls, Refusal):
                failures.append(_failure(keys, obj, cls))
                continue
            if cls is None:
                objects.append(obj)
                continue
            if not cls.admits(request.identity.user):
                failures.append(_failure(keys, obj, Refusal(
                    code=codes.DUCC_USER, by=GATE,
                    reason=f"user {request.identity.user!r} may not use class {cls.name!r} "
                           f"(its users: {', '.join(sorted(cls.users or ()))})")))
                continue
            objects.append(self._shape_object(obj, cls))
        return request.model_copy(update={"objects": tuple(objects)}), failures

    def _shape_object(self, obj: ObjectRequest, cls: ResourceClass) -> ObjectRequest:
        pool = self.nodepools.pools[cls.nodepool]
        names = [p.name for p in pool.subtree()] if cls.preemptable else [pool.name]
        where = " or ".join(f"$nodepool == {_mil_string(n)}" for n in names)
        clauses = [f"({obj.constraint})", f"({where})"]
        update: dict[str, object] = {"ducc_class": cls.name}
        if cls.policy is SharePolicy.RESERVE:
            clauses.append(self._size_match(obj, pool.quantum_gb))
            update["exclusive"] = True
        update["constraint"] = " and ".join(clauses)
        if obj.priority is None:
            update["priority"] = cls.priority
        if obj.weight is None:
            update["weight"] = cls.weight
        return obj.model_copy(update=update)

    def _size_match(self, obj: ObjectRequest, quantum_gb: float) -> str:
        """Hosts whose machine order is the job order, up to DUCC's overage."""
        order = job_order(obj.memory_gb, quantum_gb)
        top = reserve_max_order(order, obj.memory_gb, quantum_gb, self.settings.reserve_overage_gb)
        low = order * quantum_gb + self.settings.reserved_dram_gb
        high = (top + 1) * quantum_gb + self.settings.reserved_dram_gb
        return f"($memory_gb >= {low!r} and $memory_gb < {high!r})"

    # --- the allotment (a gate like a resource pool's) ------------------------------

    def admit(self, request: SchedulingRequest) -> Refusal | None:
        """Charge ``request``'s non-preemptable shares to its user's allotment,
        all or nothing.  None when admitted; a ``ducc.allotment`` Refusal (by
        ``ducc``) otherwise.  Call with a shaped request.  Admitting a request
        id again replaces its first charge."""
        user = request.identity.user
        need_gb = 0.0  # shares counted in GB, so classes of nodepools with other quanta add up
        for obj in request.objects:
            cls = self.class_of(obj)
            if isinstance(cls, ResourceClass) and not cls.preemptable:
                quantum = self.nodepools.pools[cls.nodepool].quantum_gb
                need_gb += obj.count * job_order(obj.memory_gb, quantum) * quantum
        if need_gb == 0:
            return None
        limit_gb = allotment_gb(self.users.get(user), self.settings)
        with self._lock:
            self._charged.pop(request.request_id, None)
            used_gb = self._held_gb(user)
            if limit_gb is not None and used_gb + need_gb > limit_gb + 1e-9:
                return Refusal(code=codes.DUCC_ALLOTMENT, by=GATE, reason=(
                    ALLOTMENT.format(limit=f"{limit_gb:g}GB", user=user)
                    + f" (holds {used_gb:g} GB of shares, asks {need_gb:g} GB)"))
            self._charged[request.request_id] = _Charge(user, need_gb)
        return None

    def release(self, request_id: str) -> None:
        """Give back what :meth:`admit` charged for ``request_id``.  Idempotent."""
        with self._lock:
            self._charged.pop(request_id, None)

    def charged(self) -> dict[str, float]:
        """Request ids holding an allotment -> the GB of shares each holds."""
        with self._lock:
            return {rid: c.gb for rid, c in self._charged.items()}

    def used_gb(self, user: str) -> float:
        """The shares of non-preemptable work ``user`` holds now, in GB."""
        with self._lock:
            return self._held_gb(user)

    def _held_gb(self, user: str) -> float:
        """:meth:`used_gb`, for a caller holding the lock."""
        return sum(c.gb for c in self._charged.values() if c.user == user)


def _failure(keys: list[str], obj: ObjectRequest, refusal: Refusal) -> PlacementFailure:
    return PlacementFailure(key=span(keys, obj.class_name), resource=refusal.by, code=refusal.code,
                            reason=refusal.reason, stage="plan")


def _mil_string(text: str) -> str:
    """``text`` as a MIL string constant."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
