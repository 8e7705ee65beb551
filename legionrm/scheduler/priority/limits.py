"""QoS limits, counted once per pass over the queue.

A request over a limit of its QoS is not refused: it stays pending with the
limit as its reason (``qos.max_walltime_s``, ``qos.max_running_cpus_per_user``,
``qos.max_pending_per_user``) and is tried again when something changes.

* ``max_walltime_s``: its longest walltime is over the limit (it waits until
  an administrator moves it to another QoS);
* ``max_running_cpus_per_user``: what its user holds in the QoS (running,
  reserved, being placed) plus its cpus would pass the limit;
* ``max_pending_per_user``: only the user's oldest N pending requests in the
  QoS are considered; the others wait unconsidered.

Pure: no Ray.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from legionrm import codes
from legionrm.models import Refusal
from legionrm.scheduler.priority.settings import Qos

BY = "qos"
"""What refuses, in the reasons given here."""


@dataclass(frozen=True)
class Ask:
    """What the limits need of one pending request."""

    id: str
    user: str
    qos: str
    submitted: float
    cpus: float = 0.0
    walltime_s: float | None = None


class QosLimits:
    """The limits of ``qos`` over what each user holds now (``held``: (user,
    QoS) -> cpus) and what waits (``pending``)."""

    def __init__(self, qos: Mapping[str, Qos], held: Mapping[tuple[str, str], float], pending: Iterable[Ask]) -> None:
        self.qos = qos
        self._held = dict(held)
        queues: dict[tuple[str, str], list[Ask]] = {}
        for a in pending:
            queues.setdefault((a.user, a.qos), []).append(a)
        self._place = {a.id: i for q in queues.values() for i, a in enumerate(sorted(q, key=lambda a: (a.submitted, a.id)))}

    def blocked(self, ask: Ask) -> Refusal | None:
        """The limit ``ask`` is over now, if any (None: it may be tried)."""
        q = self.qos.get(ask.qos)
        if q is None:
            return Refusal(code=codes.QOS_UNKNOWN, by=BY, reason=f"no QoS {ask.qos!r} (known: {', '.join(sorted(self.qos))})")
        if q.max_walltime_s is not None and ask.walltime_s is not None and ask.walltime_s > q.max_walltime_s:
            return Refusal(code=codes.QOS_MAX_WALLTIME_S, by=BY, reason=(
                f"walltime {ask.walltime_s:g}s is over QoS {q.name!r}'s max_walltime_s {q.max_walltime_s:g}"))
        if q.max_pending_per_user is not None and self._place.get(ask.id, 0) >= q.max_pending_per_user:
            return Refusal(code=codes.QOS_MAX_PENDING_PER_USER, by=BY, reason=(
                f"{ask.user} has {self._place.get(ask.id, 0)} older requests waiting in QoS {q.name!r} "
                f"(max_pending_per_user {q.max_pending_per_user})"))
        held = self._held.get((ask.user, ask.qos), 0.0)
        if q.max_running_cpus_per_user is not None and held + ask.cpus > q.max_running_cpus_per_user + 1e-9:
            return Refusal(code=codes.QOS_MAX_RUNNING_CPUS_PER_USER, by=BY, reason=(
                f"{ask.user} holds {held:g} cpus in QoS {q.name!r}; {ask.cpus:g} more would pass "
                f"max_running_cpus_per_user {q.max_running_cpus_per_user:g}"))
        return None

    def started(self, ask: Ask) -> None:
        """``ask`` started in this pass: its cpus count against its user from now on."""
        key = (ask.user, ask.qos)
        self._held[key] = self._held.get(key, 0.0) + ask.cpus
