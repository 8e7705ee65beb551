"""The cycle's clock: a background thread that runs an :class:`ElasticCycle`
when it is due, and lets callers wait for the next report.

Between cycles it polls every ``poll_s``: with jobs to care for it notices
host events (:meth:`ElasticCycle.watch`), and it runs a cycle when the timer
is up or an event (arrival, completion, a host joining or leaving) was noted.
With no jobs at all it only waits, so an idle scheduler costs nothing.

Pure Python (threads only): the Scheduler actor owns one; tests drive it
with in-process collaborators.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from legionrm.models import CycleReport
from legionrm.scheduler.elastic.cycle import ElasticCycle
from legionrm.state import StoreFault

log = logging.getLogger(__name__)


class CycleRunner:
    """Runs ``cycle`` on its own thread.  ``start`` and ``stop`` are idempotent."""

    def __init__(self, cycle: ElasticCycle, poll_s: float = 0.2, keep: int = 100) -> None:
        self.cycle = cycle
        self.poll_s = poll_s
        self.history: deque[CycleReport] = deque(maxlen=keep)  # the last ``keep`` reports, oldest first
        self.errors = 0
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"{self.cycle.name}-runner", daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        self.kick()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def kick(self) -> None:
        """Wake the loop now (after an arrival or completion was noted)."""
        with self._wake:
            self._wake.notify_all()

    def run_now(self) -> CycleReport:
        """Run one cycle on the caller's thread (the cycle's lock keeps it
        apart from the loop) and return its report."""
        report = self.cycle.run_once()
        with self._wake:
            self.history.append(report)
            self._wake.notify_all()
        return report

    def wait_reports(self, after: int = 0, timeout_s: float = 0.0) -> list[CycleReport]:
        """Every kept report of a cycle numbered above ``after``, oldest first;
        waits up to ``timeout_s`` for the first.  Empty when there is none yet."""
        with self._wake:
            self._wake.wait_for(lambda: bool(self.history) and self.history[-1].cycle > after, timeout=max(0.0, timeout_s))
            return [r for r in self.history if r.cycle > after]

    # --- the loop ------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.cycle.busy():
                    self.cycle.watch()
                    if self.cycle.due():
                        self.run_now()
            except StoreFault as fault:  # the disk is full or failing: the cycle changed nothing it did not write
                self.errors += 1
                log.warning("elastic cycle stopped: %s", fault)
            except Exception:  # a cycle that failed (a collection call timed out ...) is retried next poll
                self.errors += 1
                log.exception("elastic cycle failed")
            with self._wake:
                self._wake.wait(self.poll_s)

