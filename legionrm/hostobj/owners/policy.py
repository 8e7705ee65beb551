"""The owner-policy interface: small, composable vetoes a resource owner attaches to a host.

A policy answers two questions, each with :data:`ADMIT` or a
:class:`~legionrm.models.Refusal` whose ``by`` names the policy and the host:

* ``admit_reservation(host, request)`` when a reservation is asked for;
* ``admit_start(host, token, class_name)`` when the token is presented.

They run only after the host's base checks (capacity, calendar, token) have
passed, so a policy can say no to what would fit but can never overbook.
Policies that restrict *who* may use the host also narrow the host's
:class:`~legionrm.models.AccessPolicy` (:meth:`Policy.restrict`) so the
Collection stops offering the host to callers it would refuse anyway.

Here: the :class:`Policy` base and its verdicts, composition (:class:`AllOf`,
:class:`AnyOf`), building from configuration (:func:`load_policy`:
``"module:Class"`` or the bare name of a ready-made policy in
:data:`READY_MADE`, plus keyword arguments) and :func:`owner_mark`.  Owners
import all of it, and the ready-made policies, from
:mod:`legionrm.hostobj.policies`.
"""

from __future__ import annotations

import hashlib
import importlib
from typing import Any, Mapping, Protocol, Sequence

from legionrm import codes
from legionrm.errors import ConfigError
from legionrm.models import AccessPolicy, Refusal, ReservationRequest, ReservationToken, Resources

READY_MADE = "legionrm.hostobj.policies"
"""Where :func:`load_policy` looks a bare policy name up (imported when first asked, by name).
The classes here name it as their module too: the import path owners use, and the name
:func:`describe` writes, so an owner's mark (kept with lasting vetoes) is what it was."""


class Admission:
    """A yes.  Truthy (a Refusal is falsy), so ``if verdict:`` reads right."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "ADMIT"


ADMIT = Admission()
Verdict = Admission | Refusal


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

    __module__ = READY_MADE
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

    __module__ = READY_MADE

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

    __module__ = READY_MADE

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
    name of a ready-made policy in :data:`READY_MADE` (``"AllowGroups"``); ``args`` are
    its keyword arguments (``AllOf``/``AnyOf`` take ``policies = [{policy=..., args=...}]``).

    Raises ConfigError when the class is missing, is not a Policy, or refuses the arguments.
    """
    cls = import_object(path, default_module=READY_MADE)
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
