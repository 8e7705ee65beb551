"""A number for each request object the queue has seen (its *slot*), so a
pass reads what it worked out of a request once as numpy columns indexed by
slot, instead of looking every request up again on every pass.

:class:`Slots` gives the numbers; :class:`Ordered` is the queue's order with
each entry's slot beside it, so the backfill pass that walks the order reads
its own columns by the same numbers without a second lookup a request.  A
request is a frozen model: a changed request is a new object, so a new slot.
Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import attrgetter

import numpy as np

from legionrm.models import SchedulingRequest
from legionrm.scheduler.requests import Entry

_REQUEST = attrgetter("request")


class Slots:
    """Each request object's slot (see the module).  The table holds every
    request it numbered (so no other object takes its ``id`` meanwhile) until
    :meth:`renew` starts a new :attr:`epoch`, numbering only the requests
    still wanted; columns kept by slot are then read again.  Not thread-safe:
    one pass at a time numbers (its owner's lock)."""

    SLACK = 64
    """How many more slots than twice those still wanted :meth:`crowded` allows.  Small: the
    table holds every request it numbered, a model of about a kilobyte each, and a renewal
    costs only the live requests (at least ``live + SLACK`` new slots apart, so O(1) a new
    request); 1,000 kept a thousand finished requests' models in a quiet Scheduler's heap."""

    def __init__(self) -> None:
        self.of: dict[int, int] = {}
        """Slot by ``id()`` of the request object."""
        self.requests: list[SchedulingRequest] = []
        """The request of each slot."""
        self.epoch = 0

    def add(self, request: SchedulingRequest) -> int:
        """A new slot for ``request`` (one it has none of)."""
        slot = self.of[id(request)] = len(self.requests)
        self.requests.append(request)
        return slot

    def find(self, entries: Sequence[Entry]) -> np.ndarray:
        """Each entry's request's slot, numbering those not seen before."""
        # (read in C, no Python loop: a pass looks up every waiting request)
        found = np.fromiter(map(self.of.get, map(id, map(_REQUEST, entries)), repeat(-1)), np.int64, len(entries))
        for i in (found < 0).nonzero()[0].tolist():
            request = entries[i].request
            slot = self.of.get(id(request))  # (two entries may share one request)
            found[i] = self.add(request) if slot is None else slot
        return found

    def crowded(self, live: int) -> bool:
        """Are most slots requests gone (more than twice ``live`` and :attr:`SLACK`)?"""
        return len(self.requests) > 2 * live + self.SLACK

    def renew(self, keep: Iterable[int]) -> np.ndarray:
        """A new epoch numbering only the slots ``keep`` (0, 1, ... in that
        order): returns the old slot of each new one, to carry columns over."""
        old = np.fromiter(dict.fromkeys(keep), np.int64)
        requests = [self.requests[i] for i in old.tolist()]
        self.requests, self.of = requests, {id(r): i for i, r in enumerate(requests)}
        self.epoch += 1
        return old


class Ordered(list[Entry]):
    """A queue order: the entries (a list) and, in :attr:`slots`, each
    one's request's slot in :attr:`table` at :attr:`epoch`, as the order
    found them.  Do not change it in place (a copy is a plain list)."""

    def __init__(self, entries: Iterable[Entry], table: Slots, epoch: int, slots: np.ndarray) -> None:
        super().__init__(entries)
        self.table, self.epoch, self.slots = table, epoch, slots

    def valid(self) -> bool:
        """Are :attr:`slots` still the table's numbers for this list (its epoch the same, the list unchanged in length)?"""
        return self.epoch == self.table.epoch and len(self.slots) == len(self)
