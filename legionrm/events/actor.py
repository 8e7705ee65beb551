"""A trigger's subscriber over Ray: an actor's method called once per event."""

from __future__ import annotations

import threading
import time
from typing import Any

import ray

from legionrm.models import StatusEvent


class ActorCallback:
    """A trigger's subscriber that is an actor's method (Legion's callback):
    each event is one Ray call, never waited for.  An earlier call that
    failed, or gave no answer within ``timeout_s``, raises on the next event,
    so the registry counts it and drops the trigger after its failures; the
    Scheduler never waits on a subscriber."""

    MAX_PENDING = 100

    def __init__(self, handle: Any, method: str, timeout_s: float = 10.0) -> None:
        self.handle, self.method, self.timeout_s = handle, method, timeout_s
        self._pending: list[tuple[float, Any]] = []
        self._lock = threading.Lock()  # events fire from the tick thread and the call threads

    def __call__(self, event: StatusEvent) -> None:
        now = time.monotonic()
        with self._lock:
            failed = self._settle(now)
            self._pending.append((now, getattr(self.handle, self.method).remote(event)))
        if failed is not None:
            raise failed

    def _settle(self, now: float) -> Exception | None:
        """Forget the calls that answered; the last failure among them (or a call overdue), if any."""
        if not self._pending:
            return None
        ready = set(ray.wait([r for _, r in self._pending], num_returns=len(self._pending), timeout=0)[0])
        failed: Exception | None = None
        still = []
        for t, ref in self._pending:
            if ref in ready:
                try:
                    ray.get(ref, timeout=0)
                except Exception as exc:  # noqa: BLE001 - the subscriber's failure
                    failed = exc
            elif now - t > self.timeout_s:
                failed = TimeoutError(f"{self.method} gave no answer within {self.timeout_s:g} s")
            else:
                still.append((t, ref))
        self._pending = still[-self.MAX_PENDING:]
        return failed
