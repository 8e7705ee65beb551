"""Watching running instances from their hosts: :class:`HostWatch`.

Level-triggered, one call per host: an instance its host no longer lists has
ended (its actor returned or died, its reservation's walltime ran out, its
class destroyed it); the instances of a host nobody carries any more, or
that raised, are lost.  The Ray shell passes a resolver over host-group
actors; tests pass host groups of host objects.

:func:`orphans` picks, among the instances the hosts run, those no running
request and no other owner knows, once past a grace (an enactment in flight
has started instances it has not reported yet); :func:`sweep_orphans`
stops them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable

from legionrm.models import InstanceRef, WorkResult
from legionrm.scheduler.requests import RequestBook


class HostWatch:
    """An :class:`~legionrm.scheduler.ports.InstanceWatch` over host carriers.

    ``carrier(host)`` returns what carries the host (a HostGroup, a host
    object, or an adapter with ``list_instances(host)``), or None when the
    host is gone."""

    def __init__(self, carrier: Callable[[str], Any], carriers: Callable[[], Iterable[Any]] | None = None) -> None:
        self._carrier = carrier
        self._carriers = carriers

    def all_instances(self) -> list[InstanceRef]:
        """Every instance every carrier runs (for the orphan sweep); a carrier
        that cannot answer is left out this time."""
        out: list[InstanceRef] = []
        for carrier in self._carriers() if self._carriers is not None else ():
            try:
                out.extend(carrier.list_instances(None))
            except Exception:  # noqa: BLE001 - unreachable now; the next sweep asks again
                continue
        return out

    def check(self, instances: list[InstanceRef]) -> dict[str, tuple[str, str]]:
        by_host: dict[str, list[InstanceRef]] = defaultdict(list)
        for ref in instances:
            by_host[ref.host].append(ref)
        out: dict[str, tuple[str, str]] = {}
        for host, refs in by_host.items():
            carrier = self._carrier(host)
            if carrier is None:
                out.update({r.instance_id: ("lost", f"host {host} is gone") for r in refs})
                continue
            try:
                listed = carrier.list_instances(host)
            except Exception as exc:  # noqa: BLE001 - an unreachable host says nothing yet
                if _gone(exc):
                    out.update({r.instance_id: ("lost", f"host {host} died: {type(exc).__name__}") for r in refs})
                continue
            running = {r.instance_id for r in listed}
            for r in refs:
                out[r.instance_id] = ("running", "") if r.instance_id in running else (
                    "ended", f"no longer runs on {host}")
        return out


    def results(self, refs: list[InstanceRef]) -> dict[str, WorkResult]:
        """The results the hosts hold of these instances' ended runs, one call
        per host (a carrier without runs, or one that cannot answer, gives none)."""
        by_host: dict[str, list[str]] = defaultdict(list)
        for ref in refs:
            by_host[ref.host].append(ref.instance_id)
        out: dict[str, WorkResult] = {}
        for host, ids in by_host.items():
            carrier = self._carrier(host)
            ask = getattr(carrier, "work_results", None)
            if ask is None:
                continue
            try:
                out.update(ask(host, ids))
            except Exception:  # noqa: BLE001 - unreachable now; asked again at the next sweep
                continue
        return out

    def output(self, ref: InstanceRef, stream: str, offset: int, limit: int) -> tuple[bytes, int]:
        """A run's output from its host (see :func:`legionrm.hostobj.runner.read_output`)."""
        carrier = self._carrier(ref.host)
        read = getattr(carrier, "work_output", None)
        if read is None:
            raise LookupError(f"host {ref.host} is gone, or keeps no output")
        return read(ref.host, ref.instance_id, stream, offset, limit)  # type: ignore[no-any-return]


def _gone(exc: Exception) -> bool:
    """A carrier that died (not merely slow): its instances are lost.  A carrier
    Ray is restarting (``ActorUnavailableError``) is not: a Ray-node host's
    instance actors are detached and outlive it, and the restarted host
    re-attaches them, so it says nothing yet and the next look asks again."""
    # ActorUnschedulableError: a restartable actor pinned to a node that is gone can never come back
    return type(exc).__name__ in ("ActorDiedError", "RayActorError", "LookupError", "KeyError",
                                  "ActorUnschedulableError")


def orphans(running: Iterable[InstanceRef], known: set[str], now: float, grace_s: float) -> list[InstanceRef]:
    """The instances in ``running`` not in ``known`` and started before ``now - grace_s``."""
    return [r for r in running if r.instance_id not in known and r.started_at < now - grace_s]


def sweep_orphans(watch: Any, book: RequestBook, also: set[str], before: float,
                  stop: Callable[[InstanceRef, str], None], mine: Callable[[str], bool] = lambda _: True) -> list[str]:
    """Stop what the hosts run that no running request knows (nor ``also``
    names), started before ``before``, among the instances whose issuer is
    ``mine`` (another scheduler's are never stopped); returns their ids.
    Nothing when the watch cannot list every instance."""
    listing = getattr(watch, "all_instances", None)
    if not callable(listing):
        return []
    known = {r.instance_id for r in book.running_instances()} | also
    found = orphans([r for r in listing() if mine(r.scheduler)], known, before, 0.0)
    for ref in found:
        stop(ref, "orphan: no running request knows it")
    return [r.instance_id for r in found]
