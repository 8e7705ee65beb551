"""Owner policies: small, composable vetoes a resource owner attaches to a host.

A policy answers two questions, each with :data:`ADMIT` or a
:class:`~legionrm.models.Refusal` whose ``by`` names the policy and the host:

* ``admit_reservation(host, request)`` when a reservation is asked for;
* ``admit_start(host, token, class_name)`` when the token is presented.

They run only after the host's base checks (capacity, calendar, token) have
passed, so a policy can say no to what would fit but can never overbook.
Policies that restrict *who* may use the host also narrow the host's
:class:`~legionrm.models.AccessPolicy` (:meth:`Policy.restrict`) so the
Collection stops offering the host to callers it would refuse anyway.

Build from configuration with :func:`load_policy` (``"module:Class"`` or the
bare name of a policy here, plus keyword arguments).
"""

from __future__ import annotations

import hashlib
import importlib
import re
import time
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from legionrm.errors import ConfigError
from legionrm import codes
from legionrm.models import (
    AccessPolicy,
    AttrValue,
    Holder,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)


class Admission:
    """A yes.  Truthy (a Refusal is falsy), so ``if verdict:`` reads right."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "ADMIT"


ADMIT = Admission()
Verdict = Admission | Refusal


def ask_owner(hook: str, call: Callable[..., Any], *args: Any, by: str) -> Verdict:
    """Run an owner's hook and read its answer safely.

    ``ADMIT`` (or ``True``) admits; a Refusal refuses (its ``by`` defaults to
    ``by``); anything else (``False``, ``None`` from a forgotten return, any
    other value) or an exception refuses with code ``policy``.  An owner's
    mistake never admits by accident and never breaks the resource.
    """
    try:
        verdict = call(*args)
    except Exception as exc:  # a broken hook refuses; it does not break the caller
        return Refusal(code=codes.POLICY, reason=f"owner hook {hook} raised {type(exc).__name__}: {exc}", by=by)
    if isinstance(verdict, Refusal):
        return verdict if verdict.by else verdict.model_copy(update={"by": by})
    if isinstance(verdict, Admission) or verdict is True:
        return ADMIT
    return Refusal(code=codes.POLICY, reason=f"owner hook {hook} answered {verdict!r}, not ADMIT or a Refusal", by=by)


def owner_attributes(call: Callable[[], Any]) -> tuple[dict[str, AttrValue], str | None]:
    """Run an owner's ``attributes()`` hook and keep what a record can carry.

    Returns the attributes (string keys with bool, int, float or str values;
    anything else is dropped) and an error text when the hook raised or did not
    return a mapping (then no owner attribute is kept).  A broken hook never
    stops a resource from joining the collection or sending its heartbeat.
    """
    try:
        answer = call()
    except Exception as exc:
        return {}, f"{type(exc).__name__}: {exc}"[:200]
    if not isinstance(answer, Mapping):
        return {}, f"attributes() returned {type(answer).__name__}, not a mapping"
    return {k: v for k, v in answer.items() if isinstance(k, str) and isinstance(v, (bool, int, float, str))}, None


class HostView(Protocol):
    """What a policy may ask of the host it guards (a HostObject provides it)."""

    name: str

    def now(self) -> float: ...

    def load(self) -> float: ...

    def projected_load(self, resources: Resources, start: float | None = None, end: float | None = None) -> float: ...

    def instances_of(self, user: str) -> int: ...

    def reservations_of(self, user: str) -> int: ...


class Policy:
    """Base policy: admits everything.  Subclasses override one or both hooks.
    ``lasting`` (``policy_args``' ``lasting = true``) marks its refusals lasting:
    the scheduler stops asking this host for the refused request."""

    lasting: bool = False

    def __repr__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        return type(self).__name__

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        return ADMIT

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        return ADMIT

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        """Narrow the access the host advertises (default: unchanged)."""
        return access

    def __and__(self, other: "Policy") -> "AllOf":
        """``a & b``: both must admit (:class:`AllOf`)."""
        return AllOf(self, other)

    def __or__(self, other: "Policy") -> "AnyOf":
        """``a | b``: one admitting is enough (:class:`AnyOf`)."""
        return AnyOf(self, other)

    def refuse(self, host: HostView, code: str, reason: str) -> Refusal:
        return Refusal(code=code, reason=reason, by=f"{self.name}@{host.name}", lasting=self.lasting)


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


# --- composition -------------------------------------------------------------

PolicyLike = Policy | Mapping[str, Any]


def _coerce(p: PolicyLike) -> Policy:
    if isinstance(p, Policy):
        return p
    if isinstance(p, Mapping) and "policy" in p:
        return load_policy(str(p["policy"]), p.get("args", p.get("policy_args", {})))
    raise ConfigError(f"not a policy: {p!r} (give a Policy or a table with 'policy' and 'args')", key="policies")


class AllOf(Policy):
    """Every policy must admit; the first refusal (in the given order) is returned."""

    def __init__(self, *policies: PolicyLike, policies_: Sequence[PolicyLike] = ()) -> None:
        self.policies = tuple(_coerce(p) for p in (*policies, *policies_))

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({', '.join(p.name for p in self.policies)})"

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        for p in self.policies:
            v = p.admit_reservation(host, request)
            if isinstance(v, Refusal):
                return v
        return ADMIT

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        for p in self.policies:
            v = p.admit_start(host, token, class_name)
            if isinstance(v, Refusal):
                return v
        return ADMIT

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        for p in self.policies:
            access = p.restrict(access)
        return access


class AnyOf(AllOf):
    """One admitting policy is enough; when all refuse, the refusal lists every reason."""

    def _any(self, host: HostView, verdicts: list[Verdict]) -> Verdict:
        refusals = [v for v in verdicts if isinstance(v, Refusal)]
        if len(refusals) < len(verdicts) or not verdicts:
            return ADMIT
        code = refusals[0].code if len({r.code for r in refusals}) == 1 else codes.POLICY
        return self.refuse(host, code, "; ".join(f"{r.by}: {r.reason}" for r in refusals))

    def admit_reservation(self, host: HostView, request: ReservationRequest) -> Verdict:
        return self._any(host, [p.admit_reservation(host, request) for p in self.policies])

    def admit_start(self, host: HostView, token: ReservationToken, class_name: str) -> Verdict:
        return self._any(host, [p.admit_start(host, token, class_name) for p in self.policies])

    def restrict(self, access: AccessPolicy) -> AccessPolicy:
        return access  # a union of restrictions is not expressible as one AccessPolicy


def import_object(path: str, *, default_module: str | None = None, key: str = "policy") -> Any:
    """Import ``"package.module:Name"``; a bare ``Name`` is looked up in
    ``default_module``.  Raises ConfigError naming what is missing."""
    mod_name, sep, attr = path.partition(":")
    if not sep:
        if default_module is None:
            raise ConfigError(f"{path!r} is not an import path 'module:Name'", key=key)
        mod_name, attr = default_module, path
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {mod_name!r}: {exc}", key=key) from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise ConfigError(f"module {mod_name!r} has no {attr!r}", key=key) from None


def load_policy(path: str, args: Mapping[str, Any] | None = None) -> Policy:
    """Build a policy from configuration: ``path`` is ``"module:Class"`` or the
    name of a ready-made policy in this module (``"AllowGroups"``); ``args`` are
    its keyword arguments (``AllOf``/``AnyOf`` take ``policies = [{policy=..., args=...}]``).

    Raises ConfigError when the class is missing, is not a Policy, or refuses the arguments.
    """
    cls = import_object(path, default_module=__name__)
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ConfigError(f"{path!r} is not a Policy subclass", key="policy")
    kwargs = dict(args or {})
    lasting = kwargs.pop("lasting", False)
    if not isinstance(lasting, bool):
        raise ConfigError(f"{path}: policy_args lasting must be true or false, not {lasting!r}", key="policy_args")
    try:
        policy = cls(policies_=kwargs.pop("policies", ()), **kwargs) if issubclass(cls, AllOf) else cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{path}: bad policy_args {kwargs!r}: {exc}", key="policy_args") from None
    if lasting:
        policy.lasting = True
    return policy


def describe(value: Any) -> str:
    """A policy as its settings say it (its class and attributes, composed policies within): two
    policies that decide alike describe alike; stable across processes (no ids, no hashes)."""
    if isinstance(value, Policy):
        return f"{type(value).__module__}.{type(value).__qualname__}({describe(sorted(vars(value).items()))})"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "[" + ",".join(describe(v) for v in (sorted(value, key=repr) if isinstance(value, (set, frozenset))
                                                      else value)) + "]"
    if isinstance(value, Mapping):
        return describe(sorted(value.items()))
    return repr(value)


def owner_mark(host: Any, resumes: int) -> str:
    """What may refuse on ``host`` for good, as a short mark: its owner's class, its policy
    (:func:`describe`) and how often an administrator resumed it.  A lasting refusal met
    under one mark is asked again under another (:mod:`legionrm.scheduler.replan`)."""
    what = f"{type(host).__module__}.{type(host).__qualname__}|{describe(host.policy)}|{resumes}"
    return hashlib.sha256(what.encode()).hexdigest()[:16]
