"""Ready-made owner policies: each veto, its code, its reason and who refused."""

from __future__ import annotations

import calendar as _cal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.errors import ConfigError
from legionrm import codes
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.policies import (
    ADMIT,
    AllOf,
    AllowClasses,
    AllowGroups,
    AllowUsers,
    AnyOf,
    DenyClasses,
    DenyGroups,
    DenyUsers,
    HoursOfWeek,
    LoadCeiling,
    MaxInstancesPerUser,
    Policy,
    load_policy,
)
from legionrm.models import (
    AccessPolicy,
    Holder,
    Identity,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

# Monday 2024-01-01 00:00 UTC
MONDAY = float(_cal.timegm((2024, 1, 1, 0, 0, 0)))
HOUR = 3600.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def req(user: str = "ann", cls: str | None = "Foo", groups=("lab",), cpus: float = 1, rid: str = "r", start=None):
    return ReservationRequest(request_id=rid, resource="h1", holder=Holder(user=user, class_name=cls, groups=groups),
                              resources=Resources(cpus=cpus), start=start)


def host(policy: Policy, t: float = MONDAY + 10 * HOUR) -> HostObject:
    return HostObject("h1", Resources(cpus=4), policy=policy, clock=Clock(t))


WORK = HoursOfWeek("mon-fri 09:00-17:00", utc_offset_h=0)

VETOES = [
    ("allow-users", AllowUsers(["bob"]), req(), codes.POLICY_USER, "user ann is not among bob"),
    ("deny-users", DenyUsers("ann"), req(), codes.POLICY_USER, "user ann is denied"),
    ("allow-classes", AllowClasses(["Bar"]), req(), codes.POLICY_CLASS, "class Foo is not among Bar"),
    ("allow-classes-none", AllowClasses(["Bar"]), req(cls=None), codes.POLICY_CLASS, "class (none)"),
    ("deny-classes", DenyClasses(["Foo"]), req(), codes.POLICY_CLASS, "class Foo is denied"),
    ("allow-groups", AllowGroups(["physics"]), req(), codes.POLICY_GROUP, "lab is not among physics"),
    ("deny-groups", DenyGroups(["lab"]), req(), codes.POLICY_GROUP, "lab is denied"),
    ("load", LoadCeiling(0.5), req(cpus=3), codes.POLICY_LOAD, "load would be 0.75, above the ceiling 0.5"),
    ("max-instances", MaxInstancesPerUser(0), req(), codes.POLICY_INSTANCES, "limit 0"),
    ("hours-night", WORK, req(start=MONDAY + 20 * HOUR), codes.POLICY_HOURS, "at mon 20:00 is outside mon-fri 09:00-17:00"),
    ("hours-weekend", WORK, req(start=MONDAY + 5 * 24 * HOUR + 10 * HOUR), codes.POLICY_HOURS, "sat 10:00"),
    ("all-of", AllOf(AllowGroups(["lab"]), LoadCeiling(0.2)), req(), codes.POLICY_LOAD, "above the ceiling 0.2"),
    ("any-of", AnyOf(AllowUsers(["bob"]), AllowGroups(["x"])), req(), codes.POLICY, "AllowUsers(bob)@h1: user ann"),
]


@pytest.mark.parametrize("policy, request_, code, reason", [v[1:] for v in VETOES], ids=[v[0] for v in VETOES])
def test_veto_at_reservation(policy: Policy, request_: ReservationRequest, code: str, reason: str) -> None:
    out = host(policy).make_reservation(request_)
    assert isinstance(out, Refusal), out
    assert out.code == code and reason in out.reason
    assert out.by.endswith("@h1") and out.by.split("@")[0]  # names the policy and the host


ADMITS = [
    ("allow-users", AllowUsers(["ann"]), req()),
    ("deny-users-other", DenyUsers(["bob"]), req()),
    ("allow-groups", AllowGroups(["lab", "x"]), req()),
    ("load-at-ceiling", LoadCeiling(0.5), req(cpus=2)),
    ("hours-in", WORK, req()),
    ("hours-advance-in", WORK, req(start=MONDAY + 24 * HOUR + 9 * HOUR)),
    ("night-shift", HoursOfWeek("* 22:00-06:00", utc_offset_h=0), req(start=MONDAY + 2 * 24 * HOUR + 3 * HOUR)),
    ("any-of", AnyOf(AllowUsers(["bob"]), AllowGroups(["lab"])), req()),
]


@pytest.mark.parametrize("policy, request_", [a[1:] for a in ADMITS], ids=[a[0] for a in ADMITS])
def test_admit(policy: Policy, request_: ReservationRequest) -> None:
    assert isinstance(host(policy).make_reservation(request_), ReservationToken)


def test_hours_veto_again_at_start() -> None:
    clock = Clock(MONDAY + 17 * HOUR - 10)
    h = HostObject("h1", Resources(cpus=4), policy=WORK, clock=clock)
    tok = h.make_reservation(req())
    clock.t += 20  # the working day ended before the token was used
    out = h.start_object(tok, "Foo", Holder(user="ann"))
    assert out.code == codes.POLICY_HOURS and "start at mon 17:00" in out.reason


def test_max_instances_counts_running_and_reserved() -> None:
    h = host(MaxInstancesPerUser(2))
    ann = Holder(user="ann", class_name="Foo")
    t1 = h.make_reservation(req(rid="1"))
    h.start_object(t1, "Foo", ann)
    h.make_reservation(req(rid="2"))
    out = h.make_reservation(req(rid="3"))
    assert out.code == codes.POLICY_INSTANCES and "already has 2" in out.reason
    assert isinstance(h.make_reservation(req(user="bob", rid="4")), ReservationToken)


def test_load_ceiling_at_start_sees_the_current_load() -> None:
    h = host(LoadCeiling(0.5))
    t1, t2 = h.make_reservation(req(cpus=2, rid="1")), h.make_reservation(req(cpus=1, rid="2", user="bob"))
    assert t2.code == codes.POLICY_LOAD
    h.measured_load = 0.9  # something outside legionrm loads the host
    out = h.start_object(t1, "Foo", Holder(user="ann"))
    assert out.code == codes.POLICY_LOAD and "load is 0.90" in out.reason
    h.measured_load = None
    assert h.start_object(t1, "Foo", Holder(user="ann")).host == "h1"


def test_restrict_narrows_the_advertised_access() -> None:
    p = AllOf(AllowGroups(["lab"]), DenyUsers(["eve"]), AllowClasses(["Foo"]), LoadCeiling(1))
    acc = p.restrict(AccessPolicy())
    assert acc.accepts(Identity(user="ann", class_name="Foo", groups=("lab",)))
    assert not acc.accepts(Identity(user="eve", class_name="Foo", groups=("lab",)))
    assert not acc.accepts(Identity(user="bob", class_name="Foo"))
    assert host(p).record().access == acc


def test_load_policy_from_configuration() -> None:
    p = load_policy("AllOf", {"policies": [{"policy": "AllowGroups", "args": {"names": ["lab"]}},
                                           {"policy": "legionrm.hostobj.policies:LoadCeiling", "args": {"max_load": 0.8}}]})
    assert p.name == "AllOf(AllowGroups(lab), LoadCeiling(0.8))"
    assert p.admit_reservation(host(Policy()), req()) is ADMIT


@pytest.mark.parametrize(
    "path, args, match",
    [
        ("nosuch.module:X", {}, "cannot import"),
        ("legionrm.hostobj.policies:Nope", {}, "has no 'Nope'"),
        ("legionrm.models:Holder", {}, "not a Policy"),
        ("LoadCeiling", {"ceiling": 1}, "bad policy_args"),
        ("HoursOfWeek", {"hours": "weekdays 9-5"}, "bad window"),
        ("HoursOfWeek", {"hours": "mon-fry 09:00-17:00"}, "bad day"),
        ("HoursOfWeek", {"hours": "mon 25:00-26:00"}, "bad time"),
    ],
    ids=["module", "name", "not-policy", "args", "window", "day", "time"],
)
def test_load_policy_errors(path: str, args: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_policy(path, args)


# --- the load ceiling holds over time, advance reservations included -----------------

# Host of 4 cpus under LoadCeiling(0.5), already holding: 2 cpus now for 50 s,
# and an advance booking of 2 cpus over [+100, +200).
T0 = MONDAY + 10 * HOUR
LOAD_CASES = [
    ("advance-onto-advance", dict(start=T0 + 150, duration_s=10), False),
    ("advance-after-it", dict(start=T0 + 250, duration_s=10), True),
    ("advance-between", dict(start=T0 + 60, duration_s=30), True),  # load now is 0.5, but at +60 it is 0
    ("instant-open-ended", dict(), False),  # now already at 0.5
    ("advance-open-ended-after-now", dict(start=T0 + 60), False),  # runs into the +100 booking
    ("advance-open-ended-after-all", dict(start=T0 + 200), True),
]


@pytest.mark.parametrize("kw, admitted", [c[1:] for c in LOAD_CASES], ids=[c[0] for c in LOAD_CASES])
def test_load_ceiling_judges_the_reservations_own_window(kw: dict, admitted: bool) -> None:
    h = HostObject("h1", Resources(cpus=4), policy=LoadCeiling(0.5), clock=Clock(T0))
    assert isinstance(h.make_reservation(ReservationRequest(
        request_id="now", resource="h1", holder=Holder(user="ann"), resources=Resources(cpus=2), duration_s=50)), ReservationToken)
    assert isinstance(h.make_reservation(ReservationRequest(
        request_id="adv", resource="h1", holder=Holder(user="ann"), resources=Resources(cpus=2), start=T0 + 100,
        duration_s=100)), ReservationToken)
    out = h.make_reservation(ReservationRequest(request_id="x", resource="h1", holder=Holder(user="bob"),
                                                resources=Resources(cpus=2), **kw))
    assert isinstance(out, ReservationToken) == admitted, out
    if not admitted:
        assert out.code == codes.POLICY_LOAD


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.sampled_from([None, 20.0, 80.0]), st.floats(0.5, 3.0)), max_size=25),
       st.sampled_from([0.25, 0.5, 0.75]))
def test_load_ceiling_is_never_exceeded_at_any_time(asks, ceiling: float) -> None:
    clock = Clock(T0)
    h = HostObject("h1", Resources(cpus=4), policy=LoadCeiling(ceiling), clock=clock)
    for i, (offset, duration, cpus) in enumerate(asks):
        h.make_reservation(ReservationRequest(request_id=str(i), resource="h1", holder=Holder(user="ann"),
                                              resources=Resources(cpus=cpus), start=T0 + offset if offset else None,
                                              duration_s=duration, timeout_s=1000))
    cal = h.calendar
    for t in [T0] + [b.start for b in cal.bookings()]:
        assert cal.usage_at(t)[0] / 4 <= ceiling + 1e-9


# --- composition with operators ------------------------------------------------------


@pytest.mark.parametrize(
    "policy, request_, code",
    [
        pytest.param(AllowGroups(["lab"]) & LoadCeiling(0.2), req(), codes.POLICY_LOAD, id="and-second-refuses"),
        pytest.param(AllowGroups(["x"]) & LoadCeiling(1), req(), codes.POLICY_GROUP, id="and-first-refuses"),
        pytest.param(AllowGroups(["lab"]) & LoadCeiling(1), req(), None, id="and-both-admit"),
        pytest.param(AllowUsers(["bob"]) | AllowGroups(["lab"]), req(), None, id="or-one-admits"),
        pytest.param(AllowUsers(["bob"]) | DenyUsers(["ann"]), req(), codes.POLICY_USER, id="or-both-refuse-same-code"),
        pytest.param((AllowUsers(["bob"]) | AllowGroups(["lab"])) & WORK, req(start=MONDAY + 20 * HOUR), codes.POLICY_HOURS,
                     id="nested"),
    ],
)
def test_policies_compose_with_and_or(policy: Policy, request_: ReservationRequest, code: str | None) -> None:
    out = host(policy).make_reservation(request_)
    if code is None:
        assert isinstance(out, ReservationToken), out
    else:
        assert isinstance(out, Refusal) and out.code == code, out


# --- each ready-made policy vetoes again at start ---------------------------------------


def _start_veto_cases():
    """(id, policy, host time, what changes between reservation and start, start class, code)."""
    return [
        ("deny-classes", DenyClasses(["Bar"]), T0, None, "Bar", codes.POLICY_CLASS),
        ("deny-users-added", DenyUsers(["bob"]), T0, lambda h: setattr(h.policy, "names", ("ann",)), "Foo", codes.POLICY_USER),
        ("hours", WORK, MONDAY + 17 * HOUR - 10, lambda h: setattr(h._clock, "t", h._clock.t + 20), "Foo", codes.POLICY_HOURS),
        ("load", LoadCeiling(0.5), T0, lambda h: setattr(h, "measured_load", 0.8), "Foo", codes.POLICY_LOAD),
    ]


@pytest.mark.parametrize("policy, t, change, class_name, code", [c[1:] for c in _start_veto_cases()],
                         ids=[c[0] for c in _start_veto_cases()])
def test_veto_at_start(policy: Policy, t: float, change, class_name: str, code: str) -> None:
    h = host(policy, t)
    tok = h.make_reservation(req(cls=None))  # no class named at reservation: the class is judged at start
    assert isinstance(tok, ReservationToken), tok
    if change is not None:
        change(h)
    out = h.start_object(tok, class_name, Holder(user="ann"))
    assert isinstance(out, Refusal) and out.code == code and out.by.endswith("@h1"), out
    assert h.check_reservation(tok.token_id) == tok  # a veto at start does not consume the token


def test_max_instances_vetoes_at_start() -> None:
    h = host(MaxInstancesPerUser(1))
    ann = Holder(user="ann")
    # a reusable reservation, used once and idle again, no longer counts at reservation time
    r = h.make_reservation(ReservationRequest(request_id="a", resource="h1", holder=ann, resources=Resources(cpus=1), reusable=True))
    h.stop_object(h.start_object(r, "Foo", ann).instance_id)
    other = h.make_reservation(req(rid="b"))
    assert isinstance(h.start_object(other, "Foo", ann), InstanceRef)
    out = h.start_object(r, "Foo", ann)  # but starting it again would be a second instance
    assert out.code == codes.POLICY_INSTANCES and "limit 1" in out.reason
