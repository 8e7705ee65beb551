"""Host object core: the order of checks, expiry, instances, owner hooks, races."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm import codes
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.policies import ADMIT, AllOf, DenyUsers, LoadCeiling, Verdict
from legionrm.models import (
    Holder,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

ANN = Holder(user="ann", class_name="Foo", groups=("lab",))


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def join(self, record):
        self.calls.append(("join", record.name, dict(record.attributes)))

    def update(self, name, attrs):
        self.calls.append(("update", name, dict(attrs)))

    def leave(self, name):
        self.calls.append(("leave", name))


def req(rid: str = "r1", holder: Holder = ANN, **kw) -> ReservationRequest:
    base = dict(request_id=rid, resource="h1", holder=holder, resources=Resources(cpus=2, memory_gb=4), timeout_s=10.0)
    return ReservationRequest(**{**base, **kw})


def host(clock: Clock | None = None, **kw) -> HostObject:
    return HostObject("h1", Resources(cpus=4, memory_gb=16, gpus=1), clock=clock or Clock(), **kw)


def free_cpus(h: HostObject) -> float:
    return h.dynamic_attributes()["free_cpus"]


# --- make_reservation --------------------------------------------------------


def test_same_request_id_same_token_and_no_double_booking() -> None:
    h = host()
    a = h.make_reservation(req())
    assert h.make_reservation(req()) == a
    assert free_cpus(h) == 2


def test_request_id_reused_for_another_request() -> None:
    h = host()
    h.make_reservation(req())
    r = h.make_reservation(req(resources=Resources(cpus=1)))
    assert r.code == codes.REQUEST_CONFLICT


_ASKS = st.fixed_dictionaries({}, optional={
    "holder": st.sampled_from([ANN, Holder(user="bob"), Holder(user="ann", class_name="Bar", enactor="s2")]),
    "resources": st.sampled_from([Resources(cpus=1), Resources(cpus=2, memory_gb=4), Resources(gpus=1)]),
    "vault": st.sampled_from(["v1", "v2"]), "start": st.sampled_from([1000.0, 1500.0]),
    "duration_s": st.sampled_from([60.0, 600.0]), "timeout_s": st.sampled_from([5.0, 30.0]),
    "reusable": st.booleans(), "attestation": st.sampled_from([{"a": 1}, {"a": 2}])})


@settings(max_examples=80, deadline=None)
@given(first=_ASKS, again=_ASKS)
def test_a_retried_id_is_the_same_request_or_a_conflict(first, again) -> None:
    """The record keeps of a request only what its token does not say, and reads it back
    equal: a retry equal to the granted request gets its token, any other a conflict."""
    h = host()
    asked = req(**first)
    token = h.make_reservation(asked)
    assert isinstance(token, ReservationToken)
    assert h._by_request["r1"].request == asked  # (read back from the record and its token)
    retry = req(**again)
    answer = h.make_reservation(retry)
    if retry == asked:
        assert answer == token
    else:
        assert isinstance(answer, Refusal) and answer.code == codes.REQUEST_CONFLICT


@pytest.mark.parametrize(
    "kw, code",
    [
        (dict(resource="h9"), codes.RESOURCE_MISMATCH),
        (dict(resources=Resources(cpus=5)), codes.CAPACITY_TOTAL),
        (dict(resources=Resources(gpus=2)), codes.CAPACITY_TOTAL),
        (dict(resources=Resources(cpus=3)), codes.CAPACITY),  # 2 of 4 cpus taken now
        (dict(resources=Resources(memory_gb=8), duration_s=600), None),  # memory is left all along
        (dict(resources=Resources(cpus=1, exclusive=True)), codes.CAPACITY),
        (dict(resources=Resources(cpus=2), duration_s=600), codes.CALENDAR_BUSY),  # collides with the advance one
        (dict(resources=Resources(cpus=2), duration_s=100), None),  # ends before it
        (dict(start=float("nan")), codes.REQUEST_INVALID),
        (dict(start=float("inf")), codes.REQUEST_INVALID),
        (dict(resources=Resources(memory_gb=1), duration_s=float("inf")), None),  # open-ended, as no duration
    ],
    ids=["other-resource", "more-cpus-than-host", "more-gpus-than-host", "busy-now", "fits",
         "exclusive-on-busy-host", "collides-later", "ends-before", "start-nan", "start-infinite", "duration-infinite"],
)
def test_base_checks(kw: dict, code: str | None) -> None:
    clock = Clock()
    h = host(clock)
    h.make_reservation(req("first"))  # 2 cpus now, open-ended
    h.make_reservation(req("adv", start=clock.t + 300, duration_s=100, resources=Resources(cpus=2)))  # 2 more later
    out = h.make_reservation(req("x", **kw))
    if code is None:
        assert isinstance(out, ReservationToken)
        assert out.end is None or math.isfinite(out.end)  # a token carries finite times or no end
    else:
        assert isinstance(out, Refusal) and out.code == code and out.by == "h1", out


def test_calendar_busy_reason_names_the_earliest_fit() -> None:
    clock = Clock()
    h = host(clock)
    h.make_reservation(req("adv", start=clock.t + 300, duration_s=100, resources=Resources(cpus=4)))
    out = h.make_reservation(req("x", duration_s=600))
    assert out.code == codes.CALENDAR_BUSY and "earliest fit at 1400" in out.reason


class Grumpy(HostObject):
    """An owner hook that counts its calls and refuses everyone but ann."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.asked = 0

    def admit_reservation(self, request: ReservationRequest) -> Verdict:
        self.asked += 1
        if request.holder.user != "ann":
            return Refusal(code="policy.grumpy", reason="only ann")
        return ADMIT

    def admit_start(self, token: ReservationToken, class_name: str) -> Verdict:
        return Refusal(code="policy.closed", reason="closed for starts", by="grumpy") if class_name == "Late" else ADMIT

    def attributes(self):
        return {"owner": "ann"}


def test_owner_hook_runs_after_the_base_checks() -> None:
    h = Grumpy("h1", Resources(cpus=4, memory_gb=16), clock=Clock())
    assert h.make_reservation(req(resources=Resources(cpus=9))).code == codes.CAPACITY_TOTAL
    assert h.asked == 0  # never asked about what would not fit
    r = h.make_reservation(req("b", holder=Holder(user="bob")))
    assert r.code == "policy.grumpy" and r.by == "h1"
    assert isinstance(h.make_reservation(req("c")), ReservationToken) and h.asked == 2
    assert h.record().attributes["owner"] == "ann"


def test_owner_may_veto_again_at_start() -> None:
    h = Grumpy("h1", Resources(cpus=4, memory_gb=16), clock=Clock())
    tok = h.make_reservation(req(holder=Holder(user="ann")))
    out = h.start_object(tok, "Late", Holder(user="ann"))
    assert out.code == "policy.closed" and out.by == "grumpy"
    assert isinstance(h.start_object(tok, "Foo", Holder(user="ann")), InstanceRef)


def test_a_grant_and_a_start_are_the_models_validation_makes() -> None:
    """A host builds its token and instance ref without validation (they adopt their fields):
    each must be, field for field and in field order, what the model's validation makes of it."""
    h = host()
    tok = h.make_reservation(req(duration_s=60.0, vault=None))
    ref = h.start_object(tok, "Foo", ANN)
    for made, model in ((tok, ReservationToken), (ref, InstanceRef)):
        again = model.model_validate(made.model_dump())
        assert made == again and list(vars(made)) == list(vars(again)) == list(model.model_fields)
        assert made.model_fields_set == again.model_fields_set | set(model.model_fields)
        assert made.model_dump_json() == again.model_dump_json()


# --- expiry and instances ------------------------------------------------------


def test_unused_reservation_expires_at_the_host_and_returns_its_capacity() -> None:
    clock = Clock()
    h = host(clock)
    tok = h.make_reservation(req(resources=Resources(cpus=4)))
    assert free_cpus(h) == 0
    clock.t += 9.9
    assert h.make_reservation(req("b", resources=Resources(cpus=1))).code == codes.CAPACITY
    clock.t += 0.1
    assert h.expire() == [tok.token_id]  # the timer's sweep
    assert h.expire() == []
    assert free_cpus(h) == 4
    assert h.cancel_reservation(tok.token_id) is False  # safe on an expired token


def test_lazy_expiry_without_the_timer() -> None:
    clock = Clock()
    h = host(clock)
    h.make_reservation(req(resources=Resources(cpus=4)))
    clock.t += 11
    assert isinstance(h.make_reservation(req("b", resources=Resources(cpus=4))), ReservationToken)


def test_used_reservation_does_not_expire_and_stop_returns_capacity() -> None:
    clock = Clock()
    h = host(clock)
    tok = h.make_reservation(req())
    ref = h.start_object(tok, "Foo", ANN)
    clock.t += 100
    assert free_cpus(h) == 2 and h.list_instances() == [ref]
    freed = h.stop_object(ref.instance_id, "preempted")
    assert freed == tok.resources and free_cpus(h) == 4 and h.list_instances() == []
    assert h.stopped[-1].reason == "preempted"
    assert h.stop_object(ref.instance_id, "again").code == codes.INSTANCE_UNKNOWN


def test_reservation_end_stops_its_instances() -> None:
    clock = Clock()
    h = host(clock)
    tok = h.make_reservation(req(duration_s=60))
    ref = h.start_object(tok, "Foo", ANN)
    clock.t += 60
    assert h.expire() == [tok.token_id]
    assert h.list_instances() == [] and free_cpus(h) == 4
    assert h.stopped[-1].instance_id == ref.instance_id and h.stopped[-1].reason == "reservation ended"
    assert h.check_reservation(tok.token_id).code == codes.TOKEN_EXPIRED


# The host's clock may step back (an NTP correction).  The host never acts on
# a time earlier than one it has already seen: an instant token stays usable,
# its booking stays counted, an expired one stays expired.
CLOCK_BACK = [
    ("instant-token-after-a-step-back", 0.0, -1.0, "start", True),
    ("booking-still-counted-after-a-step-back", 0.0, -1.0, "free_cpus", 2.0),
    ("expired-stays-expired-after-a-step-back", 11.0, -5.0, "start", codes.TOKEN_EXPIRED),
]


@pytest.mark.parametrize("forward, back, ask, want", [c[1:] for c in CLOCK_BACK], ids=[c[0] for c in CLOCK_BACK])
def test_a_clock_stepping_back_never_takes_the_host_back(forward: float, back: float, ask: str, want) -> None:
    clock = Clock()
    h = host(clock)
    tok = h.make_reservation(req())  # 2 cpus, timeout 10 s
    clock.t += forward
    h.expire()
    clock.t += back
    if ask == "free_cpus":
        assert free_cpus(h) == want and h.state() == "busy"
    else:
        out = h.start_object(tok, "Foo", ANN)
        assert (isinstance(out, InstanceRef) if want is True else out.code == want), out


def test_cancel_is_idempotent_and_safe() -> None:
    h = host()
    tok = h.make_reservation(req())
    assert h.cancel_reservation(tok.token_id) is True
    assert h.cancel_reservation(tok) is False
    assert h.cancel_reservation("h1~unknown") is False
    assert free_cpus(h) == 4


def test_exclusive_takes_the_whole_host() -> None:
    h = host()
    tok = h.make_reservation(req(resources=Resources(cpus=1, exclusive=True)))
    assert isinstance(tok, ReservationToken) and free_cpus(h) == 0
    assert h.make_reservation(req("b", resources=Resources(memory_gb=1))).code == codes.CAPACITY


def test_reusable_keeps_its_capacity_between_uses_until_cancelled() -> None:
    h = host()
    tok = h.make_reservation(req(reusable=True))
    ref = h.start_object(tok, "Foo", ANN)
    assert h.stop_object(ref.instance_id, "done") == Resources()  # still reserved
    assert free_cpus(h) == 2
    assert h.cancel_reservation(tok.token_id) and free_cpus(h) == 4


def test_vault_pairing() -> None:
    h = host(vaults=("v-*",))
    assert h.make_reservation(req(vault="w1")).code == codes.VAULT_INCOMPATIBLE
    assert isinstance(h.make_reservation(req("b", vault="v-1")), ReservationToken)


# --- collection ---------------------------------------------------------------------


def test_join_heartbeat_leave() -> None:
    sink = Sink()
    h = host(sink=sink, attributes={"arch": "x86_64"})
    h.heartbeat()  # not joined yet: joins
    assert sink.calls[0][0] == "join" and sink.calls[0][2]["arch"] == "x86_64" and sink.calls[0][2]["cpus"] == 4
    h.make_reservation(req())
    attrs = h.heartbeat()
    # what the host published, and the attributes it publishes only while they hold withdrawn (None)
    assert sink.calls[-1] == ("update", "h1", {"next_event": None, "calendar": None, "calendar_steps": None,
                                              "degraded": None, **attrs})
    assert attrs["free_cpus"] == 2 and attrs["load"] == 0.5 and attrs["reservations"] == 1 and attrs["state"] == "busy"
    h.shutdown()
    h.leave()
    assert [c for c in sink.calls if c[0] == "leave"] == [("leave", "h1")]


# --- concurrency and invariants -----------------------------------------------------------


def test_two_holders_race_for_the_last_slot() -> None:
    for round_ in range(20):
        h = host()
        h.make_reservation(req("base", resources=Resources(cpus=3)))
        barrier = threading.Barrier(2)
        out: dict[str, object] = {}

        def grab(user: str) -> None:
            barrier.wait()
            out[user] = h.make_reservation(req(f"{user}-{round_}", holder=Holder(user=user), resources=Resources(cpus=1)))

        ts = [threading.Thread(target=grab, args=(u,)) for u in ("ann", "bob")]
        [t.start() for t in ts]
        [t.join() for t in ts]
        winners = [u for u, r in out.items() if isinstance(r, ReservationToken)]
        assert len(winners) == 1, out
        loser = ({"ann", "bob"} - set(winners)).pop()
        assert out[loser].code == codes.CAPACITY
        assert free_cpus(h) == 0


ops = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "advance", "cancel", "start", "stop", "tick"]),
        st.integers(0, 7),
        st.floats(0.5, 3.0),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_capacity_is_never_exceeded(seq) -> None:
    clock = Clock(0.0)
    h = HostObject("h1", Resources(cpus=4, memory_gb=8), clock=clock)
    toks: list[ReservationToken] = []
    refs: list[InstanceRef] = []
    for i, (op, k, x) in enumerate(seq):
        if op in ("reserve", "advance"):
            start = clock.t + 5 * x if op == "advance" else None
            r = h.make_reservation(ReservationRequest(
                request_id=f"r{i}", resource="h1", holder=ANN, resources=Resources(cpus=x, memory_gb=x),
                start=start, duration_s=10 * x if k % 2 else None, timeout_s=3.0, reusable=k == 7))
            if isinstance(r, ReservationToken):
                toks.append(r)
        elif op == "cancel" and toks:
            h.cancel_reservation(toks[k % len(toks)].token_id)
        elif op == "start" and toks:
            r = h.start_object(toks[k % len(toks)], "Foo", ANN)
            if isinstance(r, InstanceRef):
                refs.append(r)
        elif op == "stop" and refs:
            h.stop_object(refs[k % len(refs)].instance_id, "stop")
        else:
            clock.t += x
            h.expire()
        cal = h.calendar
        times = [clock.t] + [b.start for b in cal.bookings()]
        for t in times:
            assert (cal.usage_at(t) <= cal.capacity + 1e-6).all()
        # every running instance still holds a booking; nothing open is unbooked
        held = {tid for tid in (ref.token_id for ref in h.list_instances())}
        assert held <= {b.key for b in cal.bookings()}
        assert {t.token_id for t in h.reservations()} == {b.key for b in cal.bookings()}


# --- attributes the planner reads ------------------------------------------------------


def test_next_event_is_the_next_booking_start_and_absent_when_none() -> None:
    clock = Clock(1000.0)
    h = host(clock)
    assert "next_event" not in h.dynamic_attributes()
    h.make_reservation(req(start=5000.0, duration_s=100.0))
    assert h.dynamic_attributes()["next_event"] == 5000.0
    clock.t = 5001.0
    assert "next_event" not in h.dynamic_attributes()


class OwnerHost(HostObject):
    def admit_reservation(self, request: ReservationRequest) -> Verdict:
        return ADMIT


@pytest.mark.parametrize(
    "make, policies, name",
    [
        pytest.param(lambda: host(), 0, None, id="no-policy"),
        pytest.param(lambda: host(policy=LoadCeiling(0.5)), 1, "LoadCeiling(0.5)", id="one-ready-made"),
        pytest.param(lambda: host(policy=AllOf(DenyUsers(["eve"]), LoadCeiling(0.5))), 2, "AllOf(DenyUsers(eve), LoadCeiling(0.5))", id="composed"),
        pytest.param(lambda: OwnerHost("h1", Resources(cpus=4), clock=Clock()), 1, None, id="owner-subclass"),
    ],
)
def test_owner_policies_counts_every_rule_that_may_veto(make, policies, name) -> None:
    attrs = make().dynamic_attributes()
    assert attrs["owner_policies"] == policies
    assert attrs.get("policy") == name


# --- owner hooks are read safely: only ADMIT admits --------------------------------------


def _raise(*_a):
    raise RuntimeError("owner bug")


@pytest.mark.parametrize(
    "answer, admitted",
    [
        pytest.param(lambda *a: ADMIT, True, id="admit"),
        pytest.param(lambda *a: True, True, id="true"),
        pytest.param(lambda *a: False, False, id="bare-false"),
        pytest.param(lambda *a: None, False, id="forgot-to-return"),
        pytest.param(lambda *a: "yes", False, id="not-a-verdict"),
        pytest.param(_raise, False, id="hook-raises"),
    ],
)
def test_owner_hook_answer_is_read_safely(answer, admitted: bool) -> None:
    class Owner(HostObject):
        def admit_reservation(self, request):
            return answer(request)

        def admit_start(self, token, class_name):
            return answer(token, class_name)

    h = Owner("h1", Resources(cpus=4, memory_gb=16), clock=Clock())
    out = h.make_reservation(req())
    if admitted:
        assert isinstance(out, ReservationToken)
        assert isinstance(h.start_object(out, "Foo", ANN), InstanceRef)
    else:
        assert isinstance(out, Refusal) and out.code == codes.POLICY and out.by == "h1", out
        assert free_cpus(h) == 4 and h.reservations() == []  # nothing booked on a muddled answer
    # at start too: a muddled admit_start refuses and leaves the token good
    plain = HostObject("h2", Resources(cpus=4, memory_gb=16), clock=Clock())
    plain.admit_start = answer  # type: ignore[method-assign]
    tok = plain.make_reservation(req(resource="h2"))
    started = plain.start_object(tok, "Foo", ANN)
    assert isinstance(started, InstanceRef) == admitted
    if not admitted:
        assert started.code == codes.POLICY and plain.check_reservation(tok.token_id) == tok


def test_an_owner_hook_that_books_meanwhile_still_cannot_overbook() -> None:
    class Sneaky(HostObject):
        def admit_reservation(self, request):
            if request.request_id == "outer":  # takes the room the base check just found free
                self.make_reservation(req("inner", resources=Resources(cpus=4)))
            return ADMIT

    h = Sneaky("h1", Resources(cpus=4, memory_gb=16), clock=Clock())
    out = h.make_reservation(req("outer", resources=Resources(cpus=4)))
    assert isinstance(out, Refusal) and out.code == codes.CAPACITY
    assert free_cpus(h) == 0 and (h.calendar.usage_at(h.now()) <= h.calendar.capacity).all()


class Boastful(HostObject):
    def attributes(self):
        return {"free_cpus": 999.0, "load": 0.0, "cpus": 999, "state": "free", "instances": 0, "owner": "ann"}


def test_owner_attributes_add_but_never_restate_what_the_host_computes() -> None:
    h = Boastful("h1", Resources(cpus=4, memory_gb=16), clock=Clock())
    tok = h.make_reservation(req(resources=Resources(cpus=4)))
    h.start_object(tok, "Foo", ANN)
    attrs = h.record().attributes
    assert attrs["owner"] == "ann"
    assert (attrs["free_cpus"], attrs["load"], attrs["cpus"], attrs["state"], attrs["instances"]) == (0.0, 1.0, 4.0, "busy", 1)


@pytest.mark.parametrize(
    "answer, kept, error",
    [
        pytest.param(lambda: {"owner": "ann", "rack": 3}, {"owner": "ann", "rack": 3}, None, id="good"),
        pytest.param(lambda: {"owner": "ann", "bad": None, "worse": [1], 7: "x"}, {"owner": "ann"}, None, id="bad-values-dropped"),
        pytest.param(lambda: 1 / 0, {}, "ZeroDivisionError", id="hook-raises"),
        pytest.param(lambda: None, {}, "NoneType", id="forgot-to-return"),
        pytest.param(lambda: ["owner", "ann"], {}, "list", id="not-a-mapping"),
    ],
)
def test_owner_attributes_are_read_safely(answer, kept: dict, error: str | None) -> None:
    """A broken attributes() hook never stops the host from joining or beating."""

    class Owner(HostObject):
        def attributes(self):
            return answer()

    sink = Sink()
    h = Owner("h1", Resources(cpus=4, memory_gb=16), clock=Clock(), sink=sink)
    rec = h.join()
    beat = h.heartbeat()
    for attrs in (rec.attributes, beat):
        assert {k: attrs[k] for k in ("owner", "rack") if k in attrs} == kept
        assert attrs["free_cpus"] == 4.0
        assert (error is None) == ("owner_attributes_error" not in attrs)
        if error is not None:
            assert error in attrs["owner_attributes_error"]


# --- pairing holds at start too ---------------------------------------------------------


@pytest.mark.parametrize(
    "reserved, started, code",
    [
        pytest.param(None, "w9", codes.VAULT_INCOMPATIBLE, id="unpaired-vault-at-start"),
        pytest.param("v-1", "w9", codes.VAULT_INCOMPATIBLE, id="paired-at-reservation-unpaired-at-start"),
        pytest.param("v-1", None, None, id="token-vault"),
        pytest.param(None, "v-2", None, id="paired-vault-at-start"),
        pytest.param(None, None, None, id="no-vault"),
    ],
)
def test_start_checks_the_vault_pairing(reserved, started, code) -> None:
    h = host(vaults=("v-*",))
    tok = h.make_reservation(req(vault=reserved))
    out = h.start_object(tok, "Foo", ANN, vault=started)
    if code is None:
        assert isinstance(out, InstanceRef) and out.vault == (started or reserved)
    else:
        assert isinstance(out, Refusal) and out.code == code
        assert h.check_reservation(tok.token_id) == tok  # the token stays good


# --- the host answers free / busy_later / busy for a request ------------------------------


@pytest.mark.parametrize(
    "cpus, duration, want",
    [
        pytest.param(None, None, "busy", id="whole-host-something-runs"),
        pytest.param(1, None, "busy_later", id="fits-now-reservation-later"),
        pytest.param(1, 200, "busy_later", id="fits-before-the-advance-one"),
        pytest.param(2, 400, "busy", id="collides-with-the-advance-one"),
        pytest.param(3, None, "busy", id="does-not-fit-now"),
    ],
)
def test_host_state_for_a_request(cpus, duration, want) -> None:
    clock = Clock()
    h = host(clock)
    h.make_reservation(req("now", resources=Resources(cpus=2), duration_s=1000))
    h.make_reservation(req("adv", start=clock.t + 300, duration_s=100, resources=Resources(cpus=1)))
    resources = None if cpus is None else Resources(cpus=cpus)
    assert h.state(resources, duration) == want


def test_host_state_free_after_everything_ends() -> None:
    clock = Clock()
    h = host(clock)
    assert h.state() == "free"
    h.make_reservation(req("adv", start=clock.t + 300, duration_s=100))
    assert h.state() == "busy_later" and h.state(Resources(cpus=4), 300) == "busy_later"
    clock.t += 400
    assert h.state() == "free" and h.state(Resources(cpus=4)) == "free"


def test_a_hook_asking_the_host_mid_start_cannot_expire_the_token_being_used() -> None:
    clock = Clock()

    class Slow(HostObject):
        def admit_start(self, token, class_name):
            clock.t = token.expires_at + 1  # the owner's check took a while ...
            self.load()  # ... and asks the host something (no sweep mid-call)
            return ADMIT

    h = Slow("h1", Resources(cpus=4, memory_gb=16), clock=clock)
    tok = h.make_reservation(req(resources=Resources(cpus=4)))
    ref = h.start_object(tok, "Foo", ANN)
    assert isinstance(ref, InstanceRef)
    assert tok.token_id in h.calendar and free_cpus(h) == 0  # the running instance still holds its booking
    assert h.make_reservation(req("b", resources=Resources(cpus=1))).code == codes.CAPACITY
