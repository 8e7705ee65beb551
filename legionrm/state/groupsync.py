"""One sync for many commits, outside the writers' lock: :class:`GroupSync`.

A durable write of a store is two steps.  Under the store's lock it commits
its transaction without syncing (SQLite's ``synchronous=NORMAL``) and takes a
*ticket*, the commit's number in commit order (:meth:`GroupSync.committed`).
Then, with no lock held, it waits for a sync that covers its ticket
(:meth:`GroupSync.wait`): a sync started after commit ``n`` returned covers
every commit up to ``n``.  When none is running, the waiter runs one itself,
covering every commit made so far; when one is running, it waits for it and,
if that one started before its own commit, for the next.  So while one
group's sync is in the kernel, the next group's work runs and commits, and
one sync answers every group that committed meanwhile (a group commit that
pipelines).

A sync that fails is never answered as success, and the store stops (the
answer PostgreSQL gave to a failed ``fsync``: after one, the kernel may have
dropped the pages it could not write, so a retry that succeeds proves
nothing).  Every waiter whose commit the failed sync was to cover, and every
later one, hears the fault (:attr:`GroupSync.fault`, ``state.io_error``); the
store refuses every later write (:class:`~legionrm.state.sqlite.SqliteFile`
checks :attr:`GroupSync.fault` first), so nothing more is built on a state
the disk may not hold; what a restart reads back is what the disk kept.

Pure: threads and a sync callable, no SQLite (tested directly).
"""

from __future__ import annotations

import threading
from typing import Callable


class GroupSync:
    """Tickets for commits and waits for a sync that covers them (see the module doc).  ``sync`` makes
    every commit made before it was called durable, or raises; ``fault_of`` turns what it raised into
    the exception every waiter from then on hears."""

    def __init__(self, sync: Callable[[], None], fault_of: Callable[[BaseException], BaseException]) -> None:
        self._sync, self._fault_of = sync, fault_of
        self._cond = threading.Condition()
        self._committed = 0  # the last ticket given
        self._synced = 0  # every ticket up to this one is durable
        self._running = False
        self.fault: BaseException | None = None
        """The failed sync's fault: set once, never cleared (the store takes no more writes)."""
        self.syncs = 0
        """How many syncs ran (a figure for tests and benchmarks: fewer than the commits they covered)."""

    def committed(self) -> int:
        """A ticket for a commit that just returned (call it in commit order: under the writers' lock)."""
        with self._cond:
            self._committed += 1
            return self._committed

    def wait(self, ticket: int) -> None:
        """Return once a finished sync covers ``ticket``; raise :attr:`fault` when a sync failed first."""
        with self._cond:
            while True:
                if self.fault is not None:
                    raise self.fault
                if self._synced >= ticket:
                    return
                if not self._running:
                    self._running, upto = True, self._committed  # every commit so far returned before this sync
                    break
                self._cond.wait()
        try:
            self._sync()
        except BaseException as exc:  # noqa: BLE001 -- every waiter hears it, then this one raises it
            with self._cond:
                self.fault = self._fault_of(exc)
                self._running = False
                self._cond.notify_all()
            raise self.fault from None
        with self._cond:
            self._synced, self._running = upto, False
            self.syncs += 1
            self._cond.notify_all()
