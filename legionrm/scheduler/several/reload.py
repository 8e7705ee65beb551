"""What a ``legionrm reload`` changes in a running system, decided before anything changes.

:func:`plan_reload` compares what runs (the schedulers' roster, the pools as
the pool owner holds them) with a cluster file validated anew, and returns
a :class:`ReloadPlan`: the pool changes (applied all or nothing through the
Peloton validators by the pool owner), the schedulers whose nodepools or
constraint changed (each told what it now serves), and the new roster.  A
change that cannot be made live is refused here, in one line, before
anything is touched: adding or removing a scheduler, or changing any
other part of the file (hosts, vaults, classes, QoS, fair share, the
queue, the runner, Ray-node rules...: those need ``down`` and ``up``), so a
change is never silently left unapplied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from legionrm.models import ClusterSpec, PoolChange, PoolSpec, SchedulerSpec
from legionrm.scheduler.pools import changes_between
from legionrm.scheduler.several.route import Roster


LIVE_PARTS = frozenset({"pools", "schedulers", "source"})
"""The parts of a cluster file a reload applies live (``source``: where it was read from);
a change to any other part is refused, never silently ignored."""


@dataclass(frozen=True)
class ReloadPlan:
    """What to apply, in order; ``refused`` (one line) when it cannot be applied live."""

    pools: tuple[PoolChange, ...] = ()
    default_pool: str | None = None
    serves: dict[str, SchedulerSpec] = field(default_factory=dict)
    roster: Roster = Roster()
    refused: str | None = None

    @property
    def changes(self) -> list[str]:
        """One line per change, for the answer."""
        return ([f"pool {c.op} {c.spec.path}" for c in self.pools]
                + [f"scheduler {n} serves {s.serves()}" for n, s in self.serves.items()])


def plan_reload(roster: Roster, pools: tuple[PoolSpec, ...], running: ClusterSpec | None, new: ClusterSpec) -> ReloadPlan:
    """The plan that turns the running system into ``new`` (see the module).
    ``running`` is the cluster file the system was started from, when known:
    a change to its hosts, vaults or classes is refused."""
    names = [s.name for s in new.scheduler_specs()]
    if names != roster.names:
        return ReloadPlan(refused=f"the schedulers would change from {', '.join(roster.names)} to {', '.join(names)}: "
                                  "adding, removing or reordering schedulers needs `legionrm down` and `up`")
    if running is not None:
        for part in (p for p in ClusterSpec.model_fields if p not in LIVE_PARTS):
            if getattr(running, part) != getattr(new, part):
                return ReloadPlan(refused=f"the cluster file's {part} changed: reload applies pools and schedulers; "
                                          f"a change to {part} needs `legionrm down` and `up`")
    changes = tuple(changes_between(pools, new.pools))  # against the pools as they run (live changes included)
    old = {s.name: s for s in roster.schedulers}
    serves = {s.name: s for s in new.scheduler_specs() if s != old[s.name]}
    return ReloadPlan(pools=changes, default_pool=new.default_pool(), serves=serves, roster=Roster.of(new))
