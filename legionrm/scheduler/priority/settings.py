"""The site's queue policy as the cluster file sets it: QoS tables, shares, weights, decay.

:func:`site_settings` reads, from a validated :class:`~legionrm.models.ClusterSpec`:

* ``[[qos]]``: ``name``, ``priority`` (0 or more), ``preemptable``,
  ``max_walltime_s``, ``max_running_cpus_per_user``, ``max_pending_per_user``,
  ``users`` and ``groups`` (who may choose it; neither: everyone), ``default``;
* ``[[class]] qos``: each class's default QoS (a request's is its first
  object's class's, else the QoS marked ``default``, else one named
  ``normal``, else the first; with no ``[[qos]]`` at all every request is in
  the built-in ``normal``: priority 0, no limits);
* ``[fairshare]``: ``half_life_s`` (default 7 days; 0: usage never decays),
  ``max_age_s`` (the age at which the age factor is full, default 7 days),
  ``[fairshare.weights]`` (``qos``, ``fairshare``, ``age``, ``size``) and
  ``[[fairshare.group]]`` (``name``, ``shares``, ``users = {alice = 2}``).

Every problem is a :class:`~legionrm.errors.ConfigError` naming the file, the
table and the key.  Pure: no Ray.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from legionrm.errors import ConfigError
from legionrm.models import ClassSpec, ClusterSpec, SitePolicySpec
from legionrm.scheduler.priority.multifactor import Formula, Weights
from legionrm.tomlio import MAX_AMOUNT, bounded, check_keys, expect, require, tables

DAY_S = 86_400.0
DEFAULT_HALF_LIFE_S = 7 * DAY_S
"""Slurm's ``PriorityDecayHalfLife`` default."""
DEFAULT_MAX_AGE_S = 7 * DAY_S
"""Slurm's ``PriorityMaxAge`` default."""
MAX_TIME_S = 10 * 366 * DAY_S
MAX_QOS_PRIORITY = 2**31 - 1
DEFAULT_QOS = "normal"
DEFAULT_GROUP = "default"
"""Where a user no ``[[fairshare.group]]`` names has their shares (1 each)."""
QOS_KEYS = ("name", "priority", "preemptable", "max_walltime_s", "max_running_cpus_per_user",
            "max_pending_per_user", "users", "groups", "default")
SITE_KEYS = ("half_life_s", "max_age_s", "weights", "group")
"""The keys of ``[fairshare]`` read here (the rest belong to the DUCC core)."""


@dataclass(frozen=True)
class Qos:
    """One quality of service: a priority for the multifactor formula, and limits per user."""

    name: str
    priority: int = 0
    preemptable: bool = False
    max_walltime_s: float | None = None
    max_running_cpus_per_user: float | None = None
    max_pending_per_user: int | None = None
    users: frozenset[str] | None = None
    groups: frozenset[str] | None = None

    def admits(self, user: str, groups: tuple[str, ...] | list[str] = ()) -> bool:
        """May ``user`` (in ``groups``) choose this QoS?  Open when it names neither users nor groups."""
        if self.users is None and self.groups is None:
            return True
        return user in (self.users or ()) or bool(set(groups) & (self.groups or frozenset()))


@dataclass(frozen=True)
class Group:
    """A fair-share group: its ``shares`` among groups, and its users' shares within it."""

    name: str
    shares: float = 1.0
    users: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SiteSettings:
    """Everything :mod:`legionrm.scheduler.priority` reads from the cluster file."""

    qos: dict[str, Qos] = field(default_factory=lambda: {DEFAULT_QOS: Qos(DEFAULT_QOS)})
    default_qos: str = DEFAULT_QOS
    class_qos: dict[str, str] = field(default_factory=dict)
    groups: tuple[Group, ...] = ()
    half_life_s: float = DEFAULT_HALF_LIFE_S
    formula: Formula = field(default_factory=Formula)

    def qos_name(self, class_name: str | None, chosen: str | None = None) -> str:
        """The QoS of a request that chose ``chosen`` (None: none) whose first object is of ``class_name``."""
        if chosen is not None:
            return chosen
        return self.class_qos.get(class_name or "", self.default_qos)


def site_settings(spec: ClusterSpec) -> SiteSettings:
    """The site's settings of a cluster (see the module).  Raises ConfigError."""
    file = spec.source
    qos: dict[str, Qos] = {}
    marked: list[str] = []
    for i, t in enumerate(tables({"qos": list(spec.qos)}, "qos", file)):
        where = f"qos[{i}]"
        check_keys(t, QOS_KEYS, file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        if name in qos:
            raise ConfigError(f"QoS {name!r} is defined twice", file=file, table=where, key="name")
        qos[name] = Qos(
            name=name,
            priority=bounded(t, "priority", int, 0, file=file, where=where, lo=0, hi=MAX_QOS_PRIORITY),
            preemptable=expect(t, "preemptable", bool, False, file=file, where=where),
            max_walltime_s=bounded(t, "max_walltime_s", float, None, file=file, where=where, lo=0, lo_open=True,
                                   hi=MAX_TIME_S),
            max_running_cpus_per_user=bounded(t, "max_running_cpus_per_user", float, None, file=file, where=where,
                                              lo=0, hi=MAX_AMOUNT),
            max_pending_per_user=bounded(t, "max_pending_per_user", int, None, file=file, where=where, lo=0,
                                         hi=2**31 - 1),
            users=_names(t, "users", file, where), groups=_names(t, "groups", file, where))
        if expect(t, "default", bool, False, file=file, where=where):
            marked.append(name)
    if len(marked) > 1:
        raise ConfigError(f"more than one QoS is marked default: {', '.join(marked)}", file=file, table="qos",
                          key="default")
    if not qos:
        qos = {DEFAULT_QOS: Qos(DEFAULT_QOS)}
    default = marked[0] if marked else DEFAULT_QOS if DEFAULT_QOS in qos else next(iter(qos))
    class_qos = {}
    for i, c in enumerate(spec.classes):
        if c.qos is not None:
            if c.qos not in qos:
                raise ConfigError(f"no QoS {c.qos!r} (known: {', '.join(sorted(qos))})", file=file,
                                  table=f"class[{i}]", key="qos")
            class_qos[c.name] = c.qos
    fs = spec.fairshare
    weights = expect(fs, "weights", dict, {}, file=file, where="fairshare")
    check_keys(weights, ("qos", "fairshare", "age", "size"), file=file, where="fairshare.weights")
    w = {k: bounded(weights, k, float, getattr(Weights(), k), file=file, where="fairshare.weights", lo=0,
                    hi=MAX_AMOUNT) for k in ("qos", "fairshare", "age", "size")}
    max_age = bounded(fs, "max_age_s", float, DEFAULT_MAX_AGE_S, file=file, where="fairshare", lo=0, lo_open=True,
                      hi=MAX_TIME_S)
    return SiteSettings(
        qos=qos, default_qos=default, class_qos=class_qos, groups=_groups(fs, file),
        half_life_s=bounded(fs, "half_life_s", float, DEFAULT_HALF_LIFE_S, file=file, where="fairshare", lo=0,
                            hi=MAX_TIME_S),
        formula=Formula(weights=Weights(**w), max_age_s=max_age,
                        max_qos_priority=max(q.priority for q in qos.values())))


def site_spec(spec: ClusterSpec) -> SitePolicySpec:
    """The parts of ``spec`` :func:`site_settings` reads (what ``legionrm reload`` sends each Scheduler)."""
    return SitePolicySpec(source=spec.source, qos=spec.qos,
                          class_qos={c.name: c.qos for c in spec.classes if c.qos is not None},
                          fairshare={k: v for k, v in spec.fairshare.items() if k in SITE_KEYS})


def settings_of(site: SitePolicySpec) -> SiteSettings:
    """:func:`site_settings` of what :func:`site_spec` kept.  Raises ConfigError."""
    classes = tuple(ClassSpec(name=name, qos=qos) for name, qos in site.class_qos.items())
    return site_settings(ClusterSpec(source=site.source, qos=site.qos, classes=classes, fairshare=site.fairshare))


def _groups(fs: dict[str, Any], file: str) -> tuple[Group, ...]:
    out: list[Group] = []
    seen_users: dict[str, str] = {}
    for i, t in enumerate(tables(fs, "group", file)):
        where = f"fairshare.group[{i}]"
        check_keys(t, ("name", "shares", "users"), file=file, where=where)
        name = require(t, "name", str, file=file, where=where)
        if any(g.name == name for g in out):
            raise ConfigError(f"group {name!r} is defined twice", file=file, table=where, key="name")
        users = expect(t, "users", dict, {}, file=file, where=where)
        shares = {}
        for user in users:
            shares[user] = bounded(users, user, float, None, file=file, where=f"{where}.users", lo=0, hi=MAX_AMOUNT)
            if user in seen_users:
                raise ConfigError(f"user {user!r} is already in group {seen_users[user]!r}", file=file,
                                  table=f"{where}.users", key=user)
            seen_users[user] = name
        out.append(Group(name, bounded(t, "shares", float, 1.0, file=file, where=where, lo=0, hi=MAX_AMOUNT), shares))
    return tuple(out)


def _names(t: dict[str, Any], key: str, file: str, where: str) -> frozenset[str] | None:
    names = expect(t, key, list, None, file=file, where=where)
    if names is None:
        return None
    if not all(isinstance(n, str) for n in names):
        raise ConfigError("must be a list of names", file=file, table=where, key=key)
    return frozenset(names)
