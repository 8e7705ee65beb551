"""The Scheduler's tick: what its timer does each round.

:class:`Ticking` is the Scheduler's base class with :meth:`~Ticking.tick`:
reserved requests whose start has come start, instances past their walltime
are stopped, those their host or actor no longer runs are ended, hosts are
swept for orphans (every :data:`ORPHAN_SWEEP_TICKS`), late results and
accounting records are gathered (every :data:`RESULT_SWEEP_TICKS`), what a
failed write left half way is settled, and the queue is re-planned once.
Its methods use the Scheduler's book, queue, accounts, enactment, watch and
clock (``self`` is always a :class:`~legionrm.scheduler.scheduler.Scheduler`).
"""

from __future__ import annotations

import logging

from legionrm.scheduler.watch.hosts import sweep_orphans
from legionrm.scheduler.watch.settle import (
    end_written,
    settle_cancels,
    settle_finished,
    settle_half_done,
)
from legionrm.state import StoreFault

ORPHAN_SWEEP_TICKS = 10
"""Every how many ticks the hosts are swept for instances nobody knows."""
RESULT_SWEEP_TICKS = 2
"""Every how many ticks runs' late results are fetched, accounting records
written, and the finished requests so accounted leave the live book."""

log = logging.getLogger(__name__)


class Ticking:
    """The Scheduler's tick (its base class; see the module doc)."""

    def tick(self) -> int:
        """Watch the running instances: each whose walltime is over is
        stopped, each its host or actor no longer runs is ended (``lost``
        when its host is gone).  Then re-plan the queue.  Returns how many
        instances ended.  Safe to call from a timer thread."""
        now = self._clock()
        ended = 0
        self._start_due(now)
        running = self.book.running_instances()
        for ref in running:
            entry = self.book.owner_of(ref.instance_id)
            wall = entry.walltime(ref.class_name) if entry is not None else None
            if wall is not None and now >= ref.started_at + wall and end_written(self, ref.instance_id, "walltime"):
                ended += 1
                self.enactment.stop(ref, "walltime")  # written first, then stopped
        self.accounts.follow_capacity()
        self._ticks += 1
        if self._ticks % ORPHAN_SWEEP_TICKS == 1:
            self._sweep_orphans()
            self.accounts.resync(self.book)  # a pool owner that restarted has forgotten its charges
        if self._watch is not None:
            running = self.book.running_instances()
            seen = self._watch.check(running)
            results = self.results.fetch([r for r in running if seen.get(r.instance_id, ("running",))[0] != "running"])
            for iid, (state, reason) in seen.items():
                if state != "running" and end_written(self, iid, reason, "lost" if state == "lost" else "ended",
                                                        results.get(iid)):
                    ended += 1
                    self._classes_forget(iid)
        self._stages.advance_all()  # later stages of requests whose after graph follows work that ended well
        settle_half_done(self)
        settle_cancels(self)
        if self._ticks % RESULT_SWEEP_TICKS == 0:
            try:
                self.results.sweep()
            except StoreFault as fault:  # the records not written are written by a later sweep
                log.warning("accounting records wait for the store: %s", fault)
            settle_finished(self)
        if self.book.store is not None:
            self.book.store.maintain()  # an idle store's write-ahead log is truncated
        self.replan()  # once, for every end this tick saw
        self.accounts.grow(self.book)  # what still waits for a node asks an autoscaler for one
        return ended

    def _start_due(self, now: float) -> None:
        """Reserved requests whose start has come start (:class:`AheadStarts`), one attempt at a time."""
        for entry in self._ahead.due(self.book.entries(), now):
            with self.queue.claim(entry.id) as claimed:
                if claimed and entry.state == "reserved":
                    self._ahead.start(entry, now)
            if not entry.final and self.queue.cancel_asked(entry.id):  # a cancel came while it started
                self.cancel(entry.id)

    # --- restarts and orphans ---------------------------------------------------

    def _sweep_orphans(self) -> list[str]:
        """Stop what hosts run that nobody knows (see :func:`~legionrm.scheduler.watch.orphans`); returns their ids."""
        also = self._also_running() if self._also_running is not None else set()
        return sweep_orphans(self._watch, self.book, also, self._clock() - self.orphan_grace_s,
                             self.enactment.stop, self.enactment.issued)

    def _classes_forget(self, instance_id: str) -> None:
        """An instance that ended by itself: its host already let it go; its
        class object and host are told by a stop, which is idempotent."""
        entry = self.book.owner_of(instance_id)
        if entry is not None and instance_id in entry.refs:
            self.enactment.stop(entry.refs[instance_id], "ended")

