"""What a ``legionrm reload`` changes in a running system, decided before anything changes.

:func:`plan_reload` compares what runs (the schedulers' roster, the pools as
the pool owner holds them, the cluster file the system runs, the Ray nodes
bound as hosts) with a cluster file validated anew, and returns a
:class:`ReloadPlan` of what :data:`LIVE_PARTS` allows:

* the pool changes (applied all or nothing through the Peloton validators
  by the pool owner);
* the schedulers whose nodepools or MIL constraint changed;
* the site policy, when its QoS or its fair share changed: the ``[[qos]]``
  tables, each class's default QoS, and the site's keys of ``[fairshare]``
  (the groups' shares, the weights, the half-life and the age; one object,
  :class:`~legionrm.scheduler.priority.SiteSettings`, so they change
  together), sent to every scheduler;
* the owners' policies and access lists of the hosts (``[[host]]``, and the
  Ray-node hosts as the ``[[ray_node]]`` rules they match describe them) and
  of the vaults, each with what it was, to undo it.

A change that cannot be made live is refused here, in one line, before
anything is touched: adding, removing or reordering schedulers, hosts or
vaults, or changing any part of the file :data:`LIVE_PARTS` does not name (a
class's implementation or limits, the elastic cycle's ``[fairshare]`` keys,
the queue, the runner, a host's attributes...: those need ``down`` and
``up``).  A policy that does not import or refuses its arguments, site
settings that do not validate, or a change to an owner's subclass of a
host (the subclass is the host itself) is refused here too.  What only the
running actors can tell (a waiting request in a QoS the file drops) they
answer to a check that changes nothing, before anything is applied
(:mod:`legionrm.gateway.several.reload`).  Pure: no Ray.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from pydantic import BaseModel

from legionrm.errors import ConfigError
from legionrm.hostobj import HostObject, VaultObject, load_policy
from legionrm.hostobj.build import owner_class
from legionrm.models import (
    BoundNode,
    ClusterSpec,
    HostSpec,
    OwnerPolicy,
    PoolChange,
    PoolSpec,
    SchedulerSpec,
    SitePolicySpec,
    VaultSpec,
)
from legionrm.scheduler.pools import changes_between
from legionrm.scheduler.priority import site_settings, site_spec
from legionrm.scheduler.priority.settings import SITE_KEYS
from legionrm.scheduler.several.route import Roster

OWNER_FIELDS = frozenset({"policy", "policy_args", "access"})
"""What an owner governs of a host, a vault or a ``[[ray_node]]`` rule's hosts, live."""

LIVE_PARTS: Mapping[str, frozenset[str] | None] = {
    "source": None,  # where the file was read from
    "pools": None,
    "schedulers": None,  # their nodepools and constraint (not which schedulers there are)
    "qos": None,
    "fairshare": frozenset(SITE_KEYS),  # the site's keys; the elastic cycle's (rm, nodepool, class...) are not
    "classes": frozenset({"qos"}),  # a class's default QoS
    "hosts": OWNER_FIELDS,
    "vaults": OWNER_FIELDS,
    "ray_nodes": OWNER_FIELDS,
}
"""The parts of a cluster file a reload applies live: a part and, where only some of its
fields are, those fields (None: all of it).  A change to anything else is refused, never
silently ignored."""

_RESTART = "needs `legionrm down` and `up`"


@dataclass(frozen=True)
class ReloadPlan:
    """What to apply, in order, with what undoes it; ``refused`` (one line) when it cannot be applied live."""

    pools: tuple[PoolChange, ...] = ()
    default_pool: str | None = None
    serves: dict[str, SchedulerSpec] = field(default_factory=dict)
    roster: Roster = Roster()
    site: SitePolicySpec | None = None  # the new site policy, None: unchanged
    site_before: SitePolicySpec | None = None
    owners: tuple[OwnerPolicy, ...] = ()  # the hosts' and vaults' new policies and access lists
    owners_before: tuple[OwnerPolicy, ...] = ()  # the same resources as they are
    rules: bool = False  # the [[ray_node]] rules changed: the Ray nodes that join from now on follow them
    refused: str | None = None

    @property
    def changes(self) -> list[str]:
        """One line per change, for the answer."""
        return ([f"pool {c.op} {c.spec.path}" for c in self.pools]
                + [f"scheduler {n} serves {s.serves()}" for n, s in self.serves.items()]
                + (["site policy (qos, fair share)"] if self.site is not None else [])
                + [f"{o.kind} {o.resource} policy and access" for o in self.owners]
                + (["ray_node rules (for the nodes that join)"] if self.rules else []))


def plan_reload(roster: Roster, pools: tuple[PoolSpec, ...], running: ClusterSpec | None, new: ClusterSpec,
                nodes: Iterable[BoundNode] = ()) -> ReloadPlan:
    """The plan that turns the running system into ``new`` (see the module).  ``running`` is
    the cluster file the system runs (None: unknown, and then nothing can be compared);
    ``nodes`` are the Ray nodes bound as hosts."""
    names = [s.name for s in new.scheduler_specs()]
    if names != roster.names:
        return ReloadPlan(refused=f"the schedulers would change from {', '.join(roster.names)} to {', '.join(names)}: "
                                  f"adding, removing or reordering schedulers {_RESTART}")
    if running is None:
        return ReloadPlan(refused=f"the cluster file this system runs cannot be read, so what changed cannot be told: "
                                  f"a reload {_RESTART}")
    for part in ClusterSpec.model_fields:
        why = _unchanged(part, getattr(running, part), getattr(new, part), LIVE_PARTS.get(part, frozenset()))
        if why is not None:
            return ReloadPlan(refused=why)
    site, before = site_spec(new), site_spec(running)
    changed = site.model_copy(update={"source": ""}) != before.model_copy(update={"source": ""})  # (not where it was read)
    if changed:
        try:
            site_settings(new)
        except ConfigError as exc:
            return ReloadPlan(refused=str(exc))
    owners = _owners(running, new, nodes)
    for old, now in owners:
        why = _owner_refusal(old, now)
        if why is not None:
            return ReloadPlan(refused=why)
    old_by_name = {s.name: s for s in roster.schedulers}
    return ReloadPlan(pools=tuple(changes_between(pools, new.pools)),  # against the pools as they run (live changes too)
                      default_pool=new.default_pool(),
                      serves={s.name: s for s in new.scheduler_specs() if s != old_by_name[s.name]},
                      roster=Roster.of(new), site=site if changed else None, site_before=before if changed else None,
                      owners=tuple(now for _, now in owners), owners_before=tuple(old for old, _ in owners),
                      rules=running.ray_nodes != new.ray_nodes)


def _unchanged(part: str, old: Any, new: Any, live: frozenset[str] | None) -> str | None:
    """Why the change of ``part`` from ``old`` to ``new`` cannot be made live (None: it can)."""
    if live is None or old == new:
        return None
    if isinstance(old, dict):  # [fairshare]: only the live keys may differ
        keys = sorted(k for k in {*old, *new} if k not in live and old.get(k) != new.get(k))
        return f"the cluster file's {part}.{keys[0]} changed: {_RESTART}" if keys else None
    what = {"hosts": "host", "vaults": "vault", "classes": "class", "ray_nodes": "ray_node rule"}.get(part, part)
    if not isinstance(old, tuple) or not all(isinstance(x, BaseModel) for x in (*old, *new)):
        return f"the cluster file's {part} changed: reload applies {_applied()}; a change to {part} {_RESTART}"
    before, after = [_label(x, i) for i, x in enumerate(old)], [_label(x, i) for i, x in enumerate(new)]
    if before != after:
        return (f"the {part} would change from {', '.join(before) or 'none'} to {', '.join(after) or 'none'}: "
                f"adding, removing or reordering {part} {_RESTART}")
    for label, a, b in zip(before, old, new):
        keys = sorted(k for k in type(a).model_fields if k not in live and getattr(a, k) != getattr(b, k))
        if keys:
            return (f"{what} {label}'s {keys[0]} changed: reload applies its {', '.join(sorted(live))}; "
                    f"a change to its {keys[0]} {_RESTART}")
    return None


def _label(item: BaseModel, i: int) -> str:
    return str(getattr(item, "name", None) or f"#{i + 1}")


def _applied() -> str:
    return ", ".join(p if f is None else f"{p} ({', '.join(sorted(f))})" for p, f in LIVE_PARTS.items()
                     if p != "source")


def _owner(kind: str, spec: HostSpec | VaultSpec) -> OwnerPolicy:
    return OwnerPolicy(resource=spec.name, kind=kind, policy=spec.policy, policy_args=spec.policy_args,
                       access=spec.access)


def _owners(running: ClusterSpec, new: ClusterSpec, nodes: Iterable[BoundNode]) -> list[tuple[OwnerPolicy, OwnerPolicy]]:
    """(as it is, as it would be) of each host and vault whose owner's policy or access list
    changes: the ``[[host]]`` and ``[[vault]]`` tables (their names and order are the same,
    checked before), and each Ray node bound as a host, as ``running`` and ``new`` describe it."""
    out = [(_owner("host", a), _owner("host", b)) for a, b in zip(running.hosts, new.hosts)]
    named = {h.name for h in running.hosts}
    out += [(_owner("host", running.node_host(n.host, n.entry())), _owner("host", new.node_host(n.host, n.entry())))
            for n in sorted(nodes, key=lambda n: n.host) if n.host not in named]
    out += [(_owner("vault", a), _owner("vault", b)) for a, b in zip(running.vaults, new.vaults)]
    return [(a, b) for a, b in out if a != b]


def _owner_refusal(old: OwnerPolicy, new: OwnerPolicy) -> str | None:
    """Why ``new`` cannot replace ``old`` live: its policy does not build, or either names
    an owner's subclass of the resource and the policy or its arguments change."""
    where = f"{new.kind} {new.resource}"
    base = HostObject if new.kind == "host" else VaultObject
    try:
        subclass = owner_class(new.policy, base, where) or owner_class(old.policy, base, where)
        if subclass is None and new.policy:
            load_policy(new.policy, new.policy_args)
    except ConfigError as exc:
        return f"{where}: {exc}" if not exc.table else str(exc)
    if subclass is not None and (old.policy, old.policy_args) != (new.policy, new.policy_args):
        return (f"{where}'s policy names an owner's subclass of the {new.kind} ({subclass.__name__}), which is the "
                f"{new.kind} itself: changing it {_RESTART}")
    return None
