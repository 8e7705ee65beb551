"""Reservation tokens: signing, and every refusal start_object gives a bad token."""

from __future__ import annotations

from typing import Callable

import pytest

from legionrm import codes
from legionrm.hostobj import tokens
from legionrm.hostobj.host import HostObject
from legionrm.models import (
    Holder,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

ANN = Holder(user="ann", class_name="Foo")
BOB = Holder(user="bob", class_name="Foo")


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def req(rid: str = "r1", **kw) -> ReservationRequest:
    base = dict(request_id=rid, resource="h1", holder=ANN, resources=Resources(cpus=1), timeout_s=10.0)
    return ReservationRequest(**{**base, **kw})


def test_sign_and_verify_round_trip() -> None:
    secret = tokens.new_secret()
    t = ReservationToken(token_id="h~1", issuer="h", holder=ANN, resources=Resources(cpus=1), start=1.0, end=None, expires_at=2.0)
    s = tokens.sign(t, secret)
    assert tokens.verify(s, secret)
    assert not tokens.verify(s, tokens.new_secret())
    assert not tokens.verify(s.model_copy(update={"expires_at": 3.0}), secret)
    assert tokens.issuer_of("a~b~c") == "a~b" and tokens.issuer_of("plain") == ""


def test_token_ids_are_per_request_and_stable() -> None:
    secret = b"k" * 32
    a = tokens.make_token_id("h", "r1", secret)
    assert a == tokens.make_token_id("h", "r1", secret) != tokens.make_token_id("h", "r2", secret)
    assert a.startswith("h~")


# Each case: how to spoil a good token (or the host's view of it) before
# start_object, who presents it, the class started, and the refusal code.
Spoil = Callable[[HostObject, HostObject, ReservationToken, Clock], ReservationToken]


def _other_issuer(h, other, tok, clock):
    return other.make_reservation(req(resource="h2"))


CASES: list[tuple[str, Spoil, Holder, str, str]] = [
    ("altered-resources", lambda h, o, t, c: t.model_copy(update={"resources": Resources(cpus=4)}), ANN, "Foo", codes.TOKEN_FORGED),
    ("altered-holder", lambda h, o, t, c: t.model_copy(update={"holder": BOB}), BOB, "Foo", codes.TOKEN_FORGED),
    ("bad-signature", lambda h, o, t, c: t.model_copy(update={"signature": "0" * 64}), ANN, "Foo", codes.TOKEN_FORGED),
    ("made-up", lambda h, o, t, c: tokens.sign(t.model_copy(update={"token_id": "h1~zz"}), b"guess" * 8), ANN, "Foo", codes.TOKEN_FORGED),
    ("other-issuer", _other_issuer, ANN, "Foo", codes.TOKEN_WRONG_ISSUER),
    ("wrong-holder", lambda h, o, t, c: t, BOB, "Foo", codes.TOKEN_WRONG_HOLDER),
    ("wrong-class", lambda h, o, t, c: t, ANN, "Bar", codes.TOKEN_WRONG_CLASS),
    ("expired", lambda h, o, t, c: (setattr(c, "t", c.t + 11), t)[1], ANN, "Foo", codes.TOKEN_EXPIRED),
    ("cancelled", lambda h, o, t, c: (h.cancel_reservation(t.token_id), t)[1], ANN, "Foo", codes.TOKEN_CANCELLED),
    ("used", lambda h, o, t, c: (h.start_object(t, "Foo", ANN), t)[1], ANN, "Foo", codes.TOKEN_USED),
]


@pytest.mark.parametrize("spoil, presenter, class_name, code", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_start_object_refuses(spoil: Spoil, presenter: Holder, class_name: str, code: str) -> None:
    clock = Clock()
    h = HostObject("h1", Resources(cpus=4), clock=clock)
    other = HostObject("h2", Resources(cpus=4), clock=clock)
    tok = h.make_reservation(req())
    assert isinstance(tok, ReservationToken)
    bad = spoil(h, other, tok, clock)
    out = h.start_object(bad, class_name, presenter)
    assert isinstance(out, Refusal) and out.code == code, out
    assert out.by == "h1" and out.reason


def test_good_token_starts_once() -> None:
    h = HostObject("h1", Resources(cpus=4), clock=Clock())
    tok = h.make_reservation(req())
    ref = h.start_object(tok, "Foo", ANN)
    assert not isinstance(ref, Refusal) and ref.token_id == tok.token_id and ref.user == "ann"


def test_advance_token_before_its_start() -> None:
    clock = Clock()
    h = HostObject("h1", Resources(cpus=4), clock=clock)
    tok = h.make_reservation(req(start=clock.t + 100, duration_s=50))
    assert h.start_object(tok, "Foo", ANN).code == codes.TOKEN_NOT_YET
    clock.t += 100
    assert not isinstance(h.start_object(tok, "Foo", ANN), Refusal)


def test_reusable_token_in_use_then_again() -> None:
    h = HostObject("h1", Resources(cpus=4), clock=Clock())
    tok = h.make_reservation(req(reusable=True))
    ref = h.start_object(tok, "Foo", ANN)
    assert h.start_object(tok, "Foo", ANN).code == codes.TOKEN_IN_USE
    h.stop_object(ref.instance_id, "done")
    assert not isinstance(h.start_object(tok, "Foo", ANN), Refusal)


def test_token_from_a_host_restarted_with_its_secret_is_unknown() -> None:
    secret = tokens.new_secret()
    tok = HostObject("h1", Resources(cpus=4), secret=secret, clock=Clock()).make_reservation(req())
    fresh = HostObject("h1", Resources(cpus=4), secret=secret, clock=Clock())
    assert fresh.start_object(tok, "Foo", ANN).code == codes.TOKEN_UNKNOWN


def test_check_reservation_codes() -> None:
    clock = Clock()
    h = HostObject("h1", Resources(cpus=4), clock=clock)
    tok = h.make_reservation(req())
    assert h.check_reservation(tok.token_id) == tok
    assert h.check_reservation("h1~nope").code == codes.TOKEN_UNKNOWN
    h.start_object(tok, "Foo", ANN)
    assert h.check_reservation(tok.token_id).code == codes.TOKEN_USED
    t2 = h.make_reservation(req("r2"))
    clock.t += 60
    assert h.check_reservation(t2.token_id).code == codes.TOKEN_EXPIRED


# A host forgets a closed reservation some time after it closed; a token
# presented after that is still refused for what its signed fields say.
FORGOTTEN: list[tuple[str, float, Callable[[HostObject, ReservationToken], object], float, str]] = [
    ("expired-long-ago", 10.0, lambda h, t: None, 500.0, codes.TOKEN_EXPIRED),
    ("cancelled-long-ago", 10.0, lambda h, t: h.cancel_reservation(t), 500.0, codes.TOKEN_EXPIRED),
    ("cancelled-still-unexpired", 1000.0, lambda h, t: h.cancel_reservation(t), 500.0, codes.TOKEN_CANCELLED),
    ("ended-long-ago", 10.0, lambda h, t: h.stop_object(h.start_object(t, "Foo", ANN).instance_id), 500.0, codes.TOKEN_EXPIRED),
]


@pytest.mark.parametrize(
    "timeout, before, wait, code", [c[1:] for c in FORGOTTEN], ids=[c[0] for c in FORGOTTEN]
)
def test_token_refused_by_its_own_fields_after_the_record_is_forgotten(timeout, before, wait, code) -> None:
    clock = Clock()
    h = HostObject("h1", Resources(cpus=4), clock=clock, retain_s=60.0)
    tok = h.make_reservation(req(timeout_s=timeout))
    before(h, tok)
    for _ in range(3):  # sweeps on the way (the actor's timer)
        clock.t += wait / 3
        h.expire()
    out = h.start_object(tok, "Foo", ANN)
    assert isinstance(out, Refusal) and out.code == code, out


# A request id may be granted again once the host has forgotten its first
# reservation.  The first token (well signed by this host) must never stand in
# for the second reservation: not to start, not to cancel it.
def _reissued(action: str) -> tuple[object, HostObject, ReservationToken]:
    clock = Clock()
    h = HostObject("h1", Resources(cpus=4), clock=clock, retain_s=60.0)
    old = h.make_reservation(req(holder=BOB))
    h.cancel_reservation(old)
    clock.t += 500
    h.expire()  # the first record is forgotten
    new = h.make_reservation(req(holder=ANN, resources=Resources(cpus=4)))
    if action == "start-old":
        return h.start_object(old, "Foo", BOB), h, new
    if action == "cancel-old-token":
        return h.cancel_reservation(old), h, new
    return h.cancel_reservation(old.token_id), h, new


REISSUED = [
    ("start-with-the-old-token", "start-old", codes.TOKEN_EXPIRED),
    ("cancel-with-the-old-token", "cancel-old-token", False),
    ("cancel-with-the-old-token-id", "cancel-old-id", False),
]


@pytest.mark.parametrize("action, want", [c[1:] for c in REISSUED], ids=[c[0] for c in REISSUED])
def test_a_token_of_an_earlier_grant_of_the_same_request_id_is_not_the_new_one(action: str, want) -> None:
    out, h, new = _reissued(action)
    assert (out.code if isinstance(out, Refusal) else out) == want
    assert h.list_instances() == []
    assert not isinstance(h.start_object(new, "Foo", ANN), Refusal)  # the new holder's reservation is intact
