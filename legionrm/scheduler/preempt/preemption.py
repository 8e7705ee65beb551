"""Preemption on the negotiated path: the Scheduler's side (issue 26, item 4).

After a queue pass, :meth:`Preemption.run` looks down the queue's order for
the first waiting request that may preempt (:mod:`.rules`: its QoS is
non-preemptable, or above a preemptable QoS of running work) and does not
fit in the cpus free now within the reserved starts of the blocked requests
before it (the backfill's EASY holds, computed here as the pass computes
them).  The fair-share core picks its victims (:func:`~.rules.choose`).
Each victim is, in this order:

1. written first: :meth:`RequestBook.cancel` ends its instances
   (``stopped``) and the request, ``preempted``, or with ``on_preempt =
   "requeue"`` (the default, as Slurm's ``PreemptMode=REQUEUE`` for a batch
   job) puts it back to ``pending`` after a ``preempted`` event, in one
   write; the reason names the preemptor and the rule;
2. then acted on: its instances are stopped through the Enactor's stop path
   (their hosts release them and their reservations), and its accounts are
   booked back.

The preemptor's history says whom it preempted and why.  The cpus freed are
then *claimed* for the preemptor (:meth:`holds_for`): every other attempt,
the requeued victims' included, keeps a :class:`Hold` off them until the
preemptor starts or ends, or :data:`CLAIM_S` passes; a request
with a live claim preempts no more.  The preemptor itself is placed by the
ordinary attempt: its reservations go through the hosts, whose owners may
still refuse it (a veto holds; the claim lapses in time).  Hosts that refused its
last attempt for anything but free capacity (a veto, an access list) are
left out of the fit, so no work there is preempted for it.  Pure: no Ray.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np

from legionrm import codes
from legionrm.collection.view import CollectionSnapshot
from legionrm.errors import LegionError
from legionrm.models import Identity, InstanceRef
from legionrm.scheduler.backfill import Profile, demand_of, usage_of, walltime_of
from legionrm.scheduler.backfill.policy import outside
from legionrm.scheduler.backfill.profile import INF, Demand, place
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.preempt.rules import Rank, Victim, choose, may_preempt, why
from legionrm.scheduler.priority import SitePolicy
from legionrm.scheduler.requests import Entry, RequestBook
from legionrm.state import StoreFault

CLAIM_S = 120.0
"""How long the cpus a preemption freed are kept for its preemptor (a host
that reports late, or a preemptor its hosts refuse, lets them go then)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    """Cpus kept for ``request_id`` (``hold`` binds everyone else) until ``until``."""

    request_id: str
    hold: Hold
    until: float


class Preemption:
    """Preemption over ``book`` under ``site``'s QoS and fair share (see the
    module).  ``claim`` gives a request to one attempt at a time (the
    queue's); ``profile`` is the pass's cpus-over-time view, ``snapshot``
    the Collection's (which hosts would take the preemptor); ``depth`` the
    backfill's number of reserved starts; ``stop`` stops one instance (the
    Enactment's); ``book_back`` gives a request's accounts back.  Thread-safe."""

    def __init__(self, book: RequestBook, site: SitePolicy, profile: Callable[[], Profile], depth: int,
                 stop: Callable[[InstanceRef, str], None], book_back: Callable[[Entry], None],
                 clock: Callable[[], float], claim: Callable[[str], AbstractContextManager[bool]],
                 snapshot: Callable[[], CollectionSnapshot | None] = lambda: None) -> None:
        self._book, self._site, self._profile, self._depth = book, site, profile, depth
        self._claim, self._snapshot = claim, snapshot
        self._stop, self._book_back, self._clock = stop, book_back, clock
        self._lock = threading.Lock()
        self._busy = threading.Lock()
        self._claims: dict[str, Claim] = {}

    @property
    def enabled(self) -> bool:
        """No preemptable QoS: nothing can ever be preempted, and a pass costs nothing
        (read each time: ``legionrm reload`` may change the QoS)."""
        return any(q.preemptable for q in self._site.settings.qos.values())

    def rank(self, entry: Entry) -> Rank:
        """What the rules read of ``entry``'s QoS."""
        name = self._site.qos_of(entry.request)
        q = self._site.settings.qos.get(name)
        return Rank(name, q.priority if q else 0, q.preemptable if q else False)

    # --- claims -------------------------------------------------------------------------

    def holds_for(self, entry: Entry) -> tuple[Hold, ...]:
        """The claims ``entry`` must keep off (every live claim but its own)."""
        if not self._claims:
            return ()
        self._expire()
        with self._lock:
            return tuple(c.hold for rid, c in self._claims.items() if rid != entry.id)

    def _expire(self) -> None:
        now = self._clock()
        with self._lock:
            for rid, c in list(self._claims.items()):
                e = self._book.get(rid)
                if now >= c.until or e is None or e.final or e.state in ("reserved", "running"):
                    del self._claims[rid]

    # --- a pass -------------------------------------------------------------------------

    def run(self, order: Callable[[], Sequence[Entry]]) -> int:
        """Preempt for the first request of ``order()`` (the pending requests
        that may be tried now, in queue order; asked only when preemptable
        work runs) that needs it and can have it; returns how many victims
        were preempted (0: none)."""
        if not self.enabled:
            return 0
        self._expire()
        running = self._book.in_state("running")
        ranks = {e.id: self.rank(e) for e in running}
        if not any(r.preemptable for r in ranks.values()):
            return 0
        if not self._busy.acquire(blocking=False):
            return 0  # another pass is choosing victims now: one at a time, never two for the same cpus
        try:
            return self._run(order(), running, ranks)
        finally:
            self._busy.release()

    def _run(self, order: Sequence[Entry], running: list[Entry], ranks: dict[str, Rank]) -> int:
        profile = self._profile()
        blocked: list[Entry] = []
        holds: list[Hold] = []
        for entry in order:
            if entry.state != "pending" or outside(entry.request) or entry.id in self._claims:
                continue
            me = self.rank(entry)
            may = any(may_preempt(me, r) for r in ranks.values())
            if not may and len(blocked) >= self._depth:
                continue  # it neither preempts nor keeps a reserved start
            demand, wall = demand_of(entry.request), walltime_of(entry.request)
            # only hosts that would take it count as free for it (its constraint, access lists, vetoes)
            fits = _fits(profile, demand, wall, holds, _vetoed(entry, profile, self._snapshot()) if may else ())
            if fits(profile.free) is not None:
                continue  # free capacity suffices: the queue's pass starts it, no one is preempted
            if may:
                victims = self._victims(entry, [e for e in running if may_preempt(me, ranks[e.id])], ranks, profile)
                chosen = choose(profile.free, fits, me, victims)
                if chosen is not None and chosen[0]:
                    with self._claim(entry.id) as claimed:  # no attempt of its own under way meanwhile
                        if claimed and entry.state == "pending":
                            return self._preempt(entry, me, chosen[0], chosen[1], profile, ranks)
            if len(blocked) < self._depth:
                blocked.append(entry)  # it keeps a reserved start: those after it must not delay it
                holds = self._holds(profile, blocked)
        return 0

    def _holds(self, profile: Profile, blocked: Sequence[Entry]) -> list[Hold]:
        """The reserved starts of ``blocked`` (the backfill's rule, over a copy of ``profile``)."""
        p, holds = profile.copy(), []
        for e in blocked:
            wall = walltime_of(e.request)
            found = p.reserve(demand_of(e.request), wall)
            if found is not None:
                start, take = found
                holds.append(p.holding(e.id, start, take, start + wall if wall is not None else INF))
        return holds

    def _victims(self, entry: Entry, running: Sequence[Entry], ranks: dict[str, Rank], profile: Profile
                 ) -> list[Victim]:
        """``running`` as victims: their users' fair-share factors, their start, their cpus per host."""
        factors = self._site.fairshare(self._book.entries(), self._clock(), {e.user for e in running})
        out = []
        for e in running:
            u = usage_of(e, profile)
            if u.hosts and e.id != entry.id:
                started = max((r.started_at for r in e.refs.values()), default=0.0)
                out.append(Victim(e.id, e.user, ranks[e.id], factors.get(e.user, 1.0), started, u.hosts, u.cpus))
        return out

    def _preempt(self, entry: Entry, me: Rank, victims: Sequence[Victim], take: np.ndarray, profile: Profile,
                 ranks: dict[str, Rank]) -> int:
        """Write each victim's end (or requeue) first, then stop its instances and book it back; claim the cpus."""
        done: list[str] = []
        for v in victims:
            victim = self._book.get(v.id)
            if victim is None or victim.state != "running":
                continue
            reason = f"{codes.QUEUE_PREEMPTED}: preempted by {entry.id} ({why(me, ranks[v.id])})"
            requeue = victim.request.on_preempt != "cancel"
            try:  # written first: a write that fails leaves the victim running, untouched
                stopping = self._book.cancel(victim, reason, "preempted",
                                             requeue=f"requeued after preemption by {entry.id}" if requeue else None)
            except StoreFault as fault:
                log.warning("the preemption of %s waits for the store: %s", v.id, fault)
                continue
            if stopping is None:
                continue
            for ref in stopping:
                self._stop(ref, reason)
            self._book_back(victim)
            done.append(v.id)
        if not done:
            return 0
        freed = profile.free.copy()
        for v in victims:
            if v.id in done:
                np.add.at(freed, list(v.hosts), v.cpus)
        spare = {profile.names[i]: float(max(freed[i] - take[i], 0.0)) for i in np.flatnonzero(take > 0).tolist()}
        with self._lock:
            self._claims[entry.id] = Claim(entry.id, Hold(entry.id, -INF, spare), self._clock() + CLAIM_S)
        rule = "not preemptable" if not me.preemptable else f"priority {me.priority}"
        try:
            self._book.move(entry, "pending", f"preempted {', '.join(done)} to make room (QoS {me.qos}: {rule})")
        except StoreFault as fault:  # only its history's note is lost; the victims' own say who preempted them
            log.warning("request %s's note of its preemption waits for the store: %s", entry.id, fault)
        log.info("request %s preempted %s", entry.id, ", ".join(done))
        return len(done)


def _vetoed(entry: Entry, profile: Profile, snap: CollectionSnapshot | None) -> list[int]:
    """The hosts (profile positions) no preemption can make room on for
    ``entry``: those none of its objects' constraints match or whose access
    lists refuse its user and class (the planner's query stage), and those
    that refused its last attempt for anything but free capacity (an owner's
    veto at reservation or start)."""
    refused = {f.resource for f in entry.failures if f.code != codes.CAPACITY}
    if snap is not None:
        rows = snap.rows('$kind == "host"')
        names = snap.table.names[rows]
        ok = np.zeros(len(rows), dtype=bool)
        for o in entry.request.objects:
            ident = Identity(user=entry.user, class_name=o.class_name, groups=entry.request.identity.groups)
            try:
                ok |= (snap.mask(f'$kind == "host" and ({o.constraint})') & snap.accepts(ident))[rows]
            except LegionError:  # a constraint that does not compile: the planner says so
                return list(range(len(profile.names)))
        refused |= {str(n) for n in names[~ok]}
    return [i for h, i in profile.index.items() if h in refused]


def _fits(profile: Profile, demand: Demand, wall: float | None, holds: Sequence[Hold], vetoed: Sequence[int] = ()
          ) -> Callable[[np.ndarray], np.ndarray | None]:
    """The fit of ``demand`` for ``wall`` in some cpus free now, the ``holds``
    kept, the ``vetoed`` hosts left out."""
    end = profile.now + (wall if wall is not None else INF)

    def fits(free: np.ndarray) -> np.ndarray | None:
        p = profile.copy()
        p.free = free
        room = p.limit(holds, end)
        if len(vetoed):
            room = room.copy()
            room[list(vetoed)] = 0.0
        return place(room, demand)
    return fits
