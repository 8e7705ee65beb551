"""Owner policies: the ready-made vetoes a resource owner attaches to a host.

Who (:class:`AllowUsers`, :class:`DenyUsers`, :class:`AllowClasses`,
:class:`DenyClasses`, :class:`AllowGroups`, :class:`DenyGroups`), when
(:class:`HoursOfWeek`) and how much (:class:`LoadCeiling`,
:class:`MaxInstancesPerUser`).  Each answers with :data:`ADMIT` or a
:class:`~legionrm.models.Refusal` whose ``by`` names the policy and the host.

This is the import path owners write against: the interface
(:class:`Policy`, :class:`HostView`, :data:`ADMIT`, :class:`AllOf`,
:class:`AnyOf`, :func:`load_policy`...; :mod:`legionrm.hostobj.owners.policy`)
and the hooks' readers (:func:`ask_owner`, :func:`owner_attributes`;
:mod:`legionrm.hostobj.owners.hooks`) are here too, and a bare policy name in
configuration (``policy = "LoadCeiling"``) is looked up in this module.
"""

from __future__ import annotations

import re
import time
from typing import Iterable, Sequence

from legionrm import codes
from legionrm.errors import ConfigError
from legionrm.hostobj.owners.hooks import ask_owner, owner_attributes
from legionrm.hostobj.owners.policy import (
    ADMIT,
    Admission,
    AllOf,
    AnyOf,
    HostView,
    Policy,
    PolicyLike,
    Verdict,
    describe,
    import_object,
    load_policy,
    owner_mark,
)
from legionrm.models import AccessPolicy, Holder, ReservationRequest, ReservationToken

__all__ = [
    "ADMIT", "Admission", "AllOf", "AllowClasses", "AllowGroups", "AllowUsers", "AnyOf", "DenyClasses",
    "DenyGroups", "DenyUsers", "HostView", "HoursOfWeek", "LoadCeiling", "MaxInstancesPerUser", "Policy",
    "PolicyLike", "Verdict", "ask_owner", "describe", "import_object", "load_policy", "owner_attributes",
    "owner_mark",
]


# --- who ---------------------------------------------------------------------


class _WhoPolicy(Policy):
    """Admit or deny by one field of the holder, at reservation and at start."""

    code = codes.POLICY
    what = ""
    allow = True

    def __init__(self, names: Iterable[str] | str) -> None:
        self.names = (names,) if isinstance(names, str) else tuple(names)

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({','.join(self.names)})"

    def _values(self, holder: Holder, class_name: str | None) -> tuple[str, ...]:
        raise NotImplementedError

    def _judge(self, host: HostView, holder: Holder, class_name: str | None) -> Verdict:
        values = self._values(holder, class_name)
        hit = any(v in self.names for v in values)
        if hit == self.allow:
            return ADMIT
        shown = ",".join(values) or "(none)"
        if self.allow:
            return self.refuse(host, self.code, f"{self.what} {shown} is not among {', '.join(self.names)}")
        return self.refuse(host, self.code, f"{self.what} {shown} is denied on this host")

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        return self._judge(host, request.holder, request.holder.class_name)

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        return self._judge(host, token.holder, class_name)


class AllowUsers(_WhoPolicy):
    code, what, allow = codes.POLICY_USER, "user", True

    def _values(self, holder: Holder, class_name: str | None) -> tuple[str, ...]:
        return (holder.user,)

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access.model_copy(update={"allow_users": access.allow_users + self.names})


class DenyUsers(AllowUsers):
    allow = False

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access.model_copy(update={"deny_users": access.deny_users + self.names})


class AllowClasses(_WhoPolicy):
    code, what, allow = codes.POLICY_CLASS, "class", True

    def _values(self, holder: Holder, class_name: str | None) -> tuple[str, ...]:
        return (class_name,) if class_name else ()

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access.model_copy(update={"allow_classes": access.allow_classes + self.names})


class DenyClasses(AllowClasses):
    allow = False

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access.model_copy(update={"deny_classes": access.deny_classes + self.names})


class AllowGroups(_WhoPolicy):
    code, what, allow = codes.POLICY_GROUP, "groups of the holder:", True

    def _values(self, holder: Holder, class_name: str | None) -> tuple[str, ...]:
        return holder.groups

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access.model_copy(update={"allow_groups": access.allow_groups + self.names})


class DenyGroups(AllowGroups):
    allow = False  # AccessPolicy has no deny_groups: the host still refuses, the collection may offer it

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access


# --- when --------------------------------------------------------------------

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WINDOW = re.compile(r"^\s*(?P<days>[a-z,\-*]+)\s+(?P<a>\d{1,2}:\d\d)\s*-\s*(?P<b>\d{1,2}:\d\d)\s*$")
_WEEK = 7 * 24 * 60


def _minutes(hhmm: str, where: str) -> int:
    h, m = (int(x) for x in hhmm.split(":"))
    if not (0 <= h <= 24 and 0 <= m < 60) or (h == 24 and m):
        raise ConfigError(f"bad time {hhmm!r} in {where!r}", key="hours")
    return h * 60 + m


def _days(spec: str, where: str) -> list[int]:
    if spec in ("*", "daily", "all"):
        return list(range(7))
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if lo not in _DAYS or (hi and hi not in _DAYS):
            raise ConfigError(f"bad day {part!r} in {where!r} (days: {', '.join(_DAYS)})", key="hours")
        a, b = _DAYS.index(lo), _DAYS.index(hi or lo)
        out += [d % 7 for d in range(a, b + 1 if b >= a else b + 8)]
    return out


class HoursOfWeek(Policy):
    """Admit only inside weekly windows such as ``"mon-fri 09:00-17:00"``.

    Windows name days (``mon-fri``, ``sat,sun``, ``*``) and a time range; a range
    that ends before it starts runs past midnight.  Times are the host's local
    wall clock (no time zones): the clock's value through ``time.localtime``, or
    shifted by ``utc_offset_h`` hours from UTC when given (tests, or a host that
    keeps another site's hours).  A reservation is judged at its start time; a
    start at the moment it happens.
    """

    def __init__(self, hours: Sequence[str] | str, utc_offset_h: float | None = None) -> None:
        self.hours = (hours,) if isinstance(hours, str) else tuple(hours)
        self.utc_offset_h = utc_offset_h
        spans: list[tuple[int, int]] = []
        for w in self.hours:
            m = _WINDOW.match(w.lower())
            if not m:
                raise ConfigError(f"bad window {w!r} (write like 'mon-fri 09:00-17:00')", key="hours")
            a, b = _minutes(m["a"], w), _minutes(m["b"], w)
            length = (b - a) % (24 * 60) or 24 * 60
            for d in _days(m["days"], w):
                s = d * 24 * 60 + a
                e = s + length
                spans += [(s, min(e, _WEEK))] + ([(0, e - _WEEK)] if e > _WEEK else [])
        self.spans = tuple(sorted(spans))

    @property
    def name(self) -> str:
        return f"HoursOfWeek({'; '.join(self.hours)})"

    def minute_of_week(self, t: float) -> int:
        """Minutes since Monday 00:00 in the host's local time."""
        if self.utc_offset_h is None:
            tm = time.localtime(t)
        else:
            tm = time.gmtime(t + self.utc_offset_h * 3600)
        return tm.tm_wday * 24 * 60 + tm.tm_hour * 60 + tm.tm_min

    def open_at(self, t: float) -> bool:
        m = self.minute_of_week(t)
        return any(s <= m < e for s, e in self.spans)

    def _judge(self, host: HostView, t: float, what: str) -> Verdict:
        if self.open_at(t):
            return ADMIT
        m = self.minute_of_week(t)
        when = f"{_DAYS[m // 1440]} {m % 1440 // 60:02d}:{m % 60:02d}"
        return self.refuse(host, codes.POLICY_HOURS, f"{what} at {when} is outside {'; '.join(self.hours)}")

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        now = host.now()
        t = now if request.start is None or request.start <= now else request.start
        return self._judge(host, t, "reservation starting")

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        return self._judge(host, host.now(), "start")


# --- how much ----------------------------------------------------------------


class LoadCeiling(Policy):
    """Refuse work that would take the host's load past ``max_load``.

    Load is the host's :meth:`load` (reserved cpus over capacity, or a measured
    load when the host has one).  At reservation the request's cpus are added
    to the peak already booked over the reservation's own window (an advance
    reservation is judged at its time, an open-ended one against every later
    booking), so stacked reservations can never take the load past the
    ceiling; at start the load is read as it is (the reservation is already
    counted).
    """

    def __init__(self, max_load: float) -> None:
        if max_load < 0:
            raise ConfigError(f"max_load must be >= 0, not {max_load}", key="max_load")
        self.max_load = float(max_load)

    @property
    def name(self) -> str:
        return f"LoadCeiling({self.max_load:g})"

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        now = host.now()
        start = now if request.start is None or request.start <= now else float(request.start)
        end = None if request.duration_s is None else start + request.duration_s
        load = host.projected_load(request.resources, start, end)
        if load > self.max_load + 1e-9:
            return self.refuse(host, codes.POLICY_LOAD, f"load would be {load:.2f}, above the ceiling {self.max_load:g}")
        return ADMIT

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        load = host.load()
        if load > self.max_load + 1e-9:
            return self.refuse(host, codes.POLICY_LOAD, f"load is {load:.2f}, above the ceiling {self.max_load:g}")
        return ADMIT


class MaxInstancesPerUser(Policy):
    """At most ``limit`` instances per user on this host; unused reservations
    count at reservation time so a user cannot stockpile tokens past it."""

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ConfigError(f"limit must be >= 0, not {limit}", key="limit")
        self.limit = int(limit)

    @property
    def name(self) -> str:
        return f"MaxInstancesPerUser({self.limit})"

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        user = request.holder.user
        have = host.instances_of(user) + host.reservations_of(user)
        if have >= self.limit:
            return self.refuse(
                host, codes.POLICY_INSTANCES, f"user {user} already has {have} instances or reservations here (limit {self.limit})"
            )
        return ADMIT

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        user = token.holder.user
        have = host.instances_of(user)
        if have >= self.limit:
            return self.refuse(host, codes.POLICY_INSTANCES, f"user {user} already runs {have} instances here (limit {self.limit})")
        return ADMIT
