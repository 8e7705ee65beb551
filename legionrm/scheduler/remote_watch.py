"""The Scheduler's instance watch over Ray: :class:`RemoteCarrier` asks the
actor carrying a host (a host group, or a Ray node's host actor) which
instances run, and a Ray node's host for its runs' results and output; each
call signed as the Scheduler and bounded by :data:`WATCH_TIMEOUT_S`."""

from __future__ import annotations

from typing import Any

import ray

from legionrm.auth import CallSigner, signed
from legionrm.naming import host_name, named_actor
from legionrm.scheduler.watch import HostWatch

WATCH_TIMEOUT_S = 5.0


class RemoteCarrier:
    """``list_instances(host)`` on the actor carrying a host (the watch's view), signed with ``signer``
    and made out to ``to`` (a host that actor carries)."""

    def __init__(self, handle: Any, signer: CallSigner | None = None, to: str = "") -> None:
        self.handle, self.signer, self.to = handle, signer, to

    def list_instances(self, host: str | None) -> list:
        proof = signed(self.signer, "list_instances", {"host": host}, to=self.to)
        return ray.get(self.handle.list_instances.remote(host, proof=proof), timeout=WATCH_TIMEOUT_S)

    def work_results(self, host: str, instance_ids: list[str]) -> dict:
        if not hasattr(self.handle, "work_results"):  # a host group: simulated hosts run no work
            return {}
        proof = signed(self.signer, "work_results", {"instance_ids": instance_ids}, to=self.to)
        return ray.get(self.handle.work_results.remote(instance_ids, proof=proof), timeout=WATCH_TIMEOUT_S)

    def work_output(self, host: str, instance_id: str, stream: str, offset: int, limit: int) -> tuple[bytes, int]:
        args = {"instance_id": instance_id, "stream": stream, "offset": offset, "limit": limit}
        proof = signed(self.signer, "work_output", args, to=self.to)
        return ray.get(self.handle.work_output.remote(**args, proof=proof), timeout=WATCH_TIMEOUT_S)


def _unique(named: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """(a resource name it carries, its handle) by actor id, from resource name -> carrier actor (a group carries
    many hosts, each with its own copy of the handle): one call per actor, made out to that name (a group hears it)."""
    return {h._actor_id.hex(): (name, h) for name, h in named.items()}


def ray_watch(carriers: dict[str, Any], signer: CallSigner | None = None) -> HostWatch:
    """The instance watch over Ray: a host's carrier, else the host's own named actor."""

    def carrier(host: str) -> RemoteCarrier | None:
        handle = carriers.get(host) or named_actor(host_name(host))
        return RemoteCarrier(handle, signer, host) if handle is not None else None

    def every() -> list[RemoteCarrier]:
        return [RemoteCarrier(h, signer, name) for name, h in _unique(carriers).values()]

    return HostWatch(carrier, every)
