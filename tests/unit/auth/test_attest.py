"""Attestations: a host checks the Scheduler's word with a public key alone."""

from __future__ import annotations

from typing import Any

import pytest

from legionrm import codes
from legionrm.auth import keys
from legionrm.auth.attest import Attestation, AttestationVerifier, attest
from legionrm.auth.canonical import ATTEST_DOMAIN, CALL_DOMAIN, canonical
from legionrm.auth.proof import VerifiedCaller
from legionrm.auth.registry import Registry
from legionrm.models import Holder, Identity, Refusal, ReservationRequest, Resources

from .conftest import T0, Clock


@pytest.fixture
def world():
    reg = Registry(None)
    reg.add_user("ann", groups=["genomics"])
    sched = reg.add_agent("scheduler", "main")
    other = reg.add_agent("scheduler", "backup")
    clock = Clock()
    host = AttestationVerifier(
        {sched.name: sched.public_key_b64, other.name: other.public_key}, clock, max_ttl_s=120.0, skew_s=2.0, by="h1"
    )
    caller = VerifiedCaller.of(reg.user("ann"))
    return reg, sched, other, clock, host, caller


RES, ASK = "r1/k0/host", Resources(cpus=2, memory_gb=4)  # the one reservation attested, and its amount


def make(world, **kw: Any) -> Attestation:
    sched, caller = world[1], world[5]
    return attest(sched, caller, kw.pop("request_id", "r1"), kw.pop("host", "h1"), kw.pop("now", T0),
                  kw.pop("ttl_s", 60.0), class_name=kw.pop("class_name", "Foo"),
                  reservation=kw.pop("reservation", RES), resources=kw.pop("resources", ASK))


def code_of(out: Identity | Refusal) -> str:
    return out.code if isinstance(out, Refusal) else "ok"


def test_the_host_gets_the_registrys_identity(world) -> None:
    out = world[4].verify(make(world), "h1", "r1")
    assert out == Identity(user="ann", class_name="Foo", groups=("genomics",))


def _stranger(world):
    rogue = keys.Credential("scheduler:rogue", keys.generate_private_key())
    return attest(rogue, world[5], "r1", "h1", T0, reservation=RES, resources=ASK)


def _resigned(world, **update):
    a = make(world).model_copy(update=update)
    return a.model_copy(update={"signature": world[1].sign(a.signed_bytes())})


CODES = [
    ("ok", lambda w: make(w), "h1", "r1", "ok"),
    ("ok-any-request", lambda w: make(w), "h1", None, "ok"),
    ("malformed-not-one", lambda w: {"user": "ann"}, "h1", "r1", codes.AUTH_MALFORMED),
    ("malformed-lives-too-long", lambda w: make(w, ttl_s=500.0), "h1", "r1", codes.AUTH_MALFORMED),
    ("malformed-bad-signature-text", lambda w: make(w).model_copy(update={"signature": "zz"}), "h1", "r1", codes.AUTH_MALFORMED),
    ("malformed-groups", lambda w: make(w).model_copy(update={"groups": "genomics"}), "h1", "r1", codes.AUTH_MALFORMED),
    ("unknown-issuer", _stranger, "h1", "r1", codes.AUTH_UNKNOWN_ISSUER),
    ("bad-signature-claimed-issuer", lambda w: make(w).model_copy(update={"issuer": "scheduler:backup"}), "h1", "r1", codes.AUTH_BAD_SIGNATURE),
    ("wrong-host", lambda w: make(w), "h2", "r1", codes.AUTH_WRONG_HOST),
    ("wrong-request", lambda w: make(w), "h1", "r2", codes.AUTH_WRONG_CALL),
    ("clock-skew", lambda w: make(w, now=T0 + 3.0), "h1", "r1", codes.AUTH_CLOCK_SKEW),
    ("expired", lambda w: make(w, now=T0 - 62.0), "h1", "r1", codes.AUTH_EXPIRED),
    ("wrong-host-before-expired", lambda w: make(w, now=T0 - 100.0), "h2", "r1", codes.AUTH_WRONG_HOST),
    ("unknown-issuer-before-bad-signature", lambda w: make(w).model_copy(update={"issuer": "scheduler:rogue"}), "h1", "r1", codes.AUTH_UNKNOWN_ISSUER),
]


@pytest.mark.parametrize("build, host, request_id, code", [c[1:] for c in CODES], ids=[c[0] for c in CODES])
def test_each_code(world, build, host: str, request_id: str | None, code: str) -> None:
    out = world[4].verify(build(world), host, request_id)
    assert code_of(out) == code, out
    if isinstance(out, Refusal):
        assert out.by == "h1"


def test_every_attestation_code_has_a_case() -> None:
    assert set(codes.ATTESTATION_CODES) <= {c[-1] for c in CODES} | {c[-1] for c in ADMIT}


# --- one attestation, one reservation -------------------------------------------------------
# Each case: the reservation requests presented in turn (request id, user, amount, whether the
# reservation it gets still holds or was used), all with the one attestation; the last one's code.

def ask(rid: str, user: str = "ann", resources: Resources = ASK) -> ReservationRequest:
    return ReservationRequest(request_id=rid, resource="h1", holder=Holder(user=user, groups=("claimed",)),
                              resources=resources)


ADMIT: list[tuple[str, list[tuple[ReservationRequest, bool]], str]] = [
    ("ok-first-try", [(ask(f"{RES}/0"), True)], "ok"),
    ("ok-the-reservation-itself", [(ask(RES), True)], "ok"),
    ("ok-the-same-request-again", [(ask(f"{RES}/0"), True), (ask(f"{RES}/0"), True)], "ok"),
    ("ok-a-renewal-after-an-unused-end", [(ask(f"{RES}/0"), False), (ask(f"{RES}/1"), True)], "ok"),
    ("another-placement-key", [(ask("r1/k1/host/0"), True)], codes.AUTH_WRONG_RESERVATION),
    ("another-kind", [(ask("r1/k0/vault/0"), True)], codes.AUTH_WRONG_RESERVATION),
    ("another-request", [(ask("r2/k0/host/0"), True)], codes.AUTH_WRONG_RESERVATION),
    ("a-made-up-try", [(ask(f"{RES}/x"), True)], codes.AUTH_WRONG_RESERVATION),
    ("a-try-of-a-try", [(ask(f"{RES}/0/1"), True)], codes.AUTH_WRONG_RESERVATION),
    ("a-prefix-only", [(ask("r1/k0/ho"), True)], codes.AUTH_WRONG_RESERVATION),
    ("more-than-attested", [(ask(f"{RES}/0", resources=Resources(cpus=64, memory_gb=4)), True)], codes.AUTH_WRONG_RESERVATION),
    ("another-user", [(ask(f"{RES}/0", user="bob"), True)], codes.AUTH_WRONG_CALL),
    ("spent-on-one-that-holds", [(ask(f"{RES}/0"), True), (ask(f"{RES}/1"), True)], codes.AUTH_ATTESTATION_SPENT),
    ("spent-twice-after-a-renewal", [(ask(f"{RES}/0"), False), (ask(f"{RES}/1"), True), (ask(f"{RES}/2"), True)],
     codes.AUTH_ATTESTATION_SPENT),
]


@pytest.mark.parametrize("steps, code", [c[1:] for c in ADMIT], ids=[c[0] for c in ADMIT])
def test_an_attestation_admits_one_reservation(world, steps, code: str) -> None:
    att = make(world).model_dump(mode="json")
    holds: dict[str, bool] = {}
    out: ReservationRequest | Refusal | None = None
    for request, kept in steps:
        out = world[4].admit(request.model_copy(update={"attestation": att}), lambda rid: holds.get(rid, False))
        if isinstance(out, ReservationRequest):
            holds[request.request_id] = kept
    assert code_of(out) == code, out
    if isinstance(out, ReservationRequest):
        assert out.holder.groups == ("genomics",)  # the registry's groups, not the claimed ones
    else:
        assert out.by == "h1" and out.reason


def test_a_restarted_host_refuses_attestations_from_before_it_started(world) -> None:
    """What a host spent lives in its memory: after a restart, an attestation it may have spent is refused."""
    reg, sched, _, clock, first, _ = world
    att = make(world, now=clock.t - 10.0).model_dump(mode="json")
    request = ask(f"{RES}/0").model_copy(update={"attestation": att})
    assert isinstance(first.admit(request, lambda rid: True), ReservationRequest)
    again = AttestationVerifier({sched.name: sched.public_key}, clock, max_ttl_s=120.0, skew_s=2.0, by="h1",
                                accept_from=clock.t - 2.0)
    out = again.admit(ask(f"{RES}/1").model_copy(update={"attestation": att}), lambda rid: True)
    assert code_of(out) == codes.AUTH_EXPIRED and "before this resource started" in out.reason
    fresh = make(world, now=clock.t).model_dump(mode="json")
    assert isinstance(again.admit(ask(f"{RES}/1").model_copy(update={"attestation": fresh}), lambda rid: True),
                      ReservationRequest)


def test_an_unattested_reservation_has_no_proof(world) -> None:
    assert code_of(world[4].admit(ask(f"{RES}/0"), lambda rid: False)) == codes.AUTH_NO_PROOF


def test_a_bad_attestation_is_refused_before_its_binding_is_read(world) -> None:
    forged = {**make(world).model_dump(mode="json"), "reservation": "r9/k0/host"}
    out = world[4].admit(ask("r9/k0/host/0").model_copy(update={"attestation": forged}), lambda rid: False)
    assert code_of(out) == codes.AUTH_BAD_SIGNATURE


TAMPER: list[tuple[str, Any]] = [
    ("issuer", "scheduler:backup"),  # another trusted scheduler: the signature refuses
    ("request_id", "r2"),
    ("user", "bob"),
    ("groups", ("genomics", "wheel")),
    ("class_name", "Bar"),
    ("host", "h2"),
    ("reservation", "r1/k1/host"),
    ("resources", Resources(cpus=64, memory_gb=4)),
    ("issued_at", T0 - 1.0),
    ("expires_at", T0 + 61.0),
]


def test_the_tamper_table_covers_every_signed_field() -> None:
    assert {f for f, _ in TAMPER} == set(Attestation.model_fields) - {"signature"}


@pytest.mark.parametrize("field, value", TAMPER, ids=[f for f, _ in TAMPER])
def test_changing_any_signed_field_breaks_the_signature(world, field: str, value: Any) -> None:
    bad = make(world).model_copy(update={field: value})
    assert code_of(world[4].verify(bad, bad.host, bad.request_id)) == codes.AUTH_BAD_SIGNATURE


def test_only_users_are_attested(world) -> None:
    reg = world[0]
    agent = VerifiedCaller.of(reg.principal("scheduler:backup"))
    with pytest.raises(ValueError, match="only users"):
        attest(world[1], agent, "r1", "h1", T0, reservation=RES, resources=ASK)


def test_a_call_proof_signature_is_not_an_attestation_signature() -> None:
    fields = {"a": 1}
    assert canonical(CALL_DOMAIN, fields) != canonical(ATTEST_DOMAIN, fields)
    with pytest.raises(ValueError, match="not finite"):
        canonical(CALL_DOMAIN, {"t": float("nan")})
