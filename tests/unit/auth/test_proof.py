"""Call proofs: every refusal code, the order of the checks, tampering, replay."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from legionrm import codes
from legionrm.auth import keys
from legionrm.auth.canonical import payload_digest
from legionrm.auth.proof import (
    CallProof,
    CallSigner,
    VerifiedCaller,
    Verifier,
    sign_call,
)
from legionrm.auth.registry import Registry
from legionrm.models import Refusal, Resources

from .conftest import T0, Clock

ARGS = {"request": {"class_name": "Foo", "count": 2}}
DIGEST = payload_digest(ARGS)
CALL = "scheduleObjects"
TO = "scheduler"  # the verifier fixture's own name: the audience it hears


def good(cred: keys.Credential, **kw: Any) -> CallProof:
    kw.setdefault("to", TO)
    return sign_call(cred, kw.pop("call", CALL), kw.pop("digest", DIGEST), kw.pop("now", T0), kw.pop("ttl_s", 30.0), **kw)


def resign(proof: CallProof, cred: keys.Credential, **update: Any) -> CallProof:
    """``proof`` with ``update`` applied and signed again by ``cred`` (a well-formed proof)."""
    body = proof.model_copy(update=update)
    return body.model_copy(update={"signature": cred.sign(body.signed_bytes())})


def code_of(out: VerifiedCaller | Refusal) -> str:
    return out.code if isinstance(out, Refusal) else "ok"


def test_a_good_proof_proves_the_registry_facts(registry: Registry, ann, verifier: Verifier) -> None:
    out = verifier.verify(good(ann), CALL, DIGEST)
    assert isinstance(out, VerifiedCaller)
    assert (out.name, out.kind, out.groups, out.roles, out.call) == ("ann", "user", ("physics",), ("user",), CALL)
    assert out.identity("Foo").groups == ("physics",)


# --- every code by its own case ----------------------------------------------------------
# Each case: how to make the proof (from the fixtures), how to present it, the code.
Make = Callable[[Registry, keys.Credential, Clock, Verifier], Any]


def _present_twice(reg, ann, clock, v):
    p = good(ann)
    assert code_of(v.verify(p, CALL, DIGEST)) == "ok"
    return p


def _full_cache(reg, ann, clock, v):
    v.nonces.max_entries = 1
    assert code_of(v.verify(good(ann), CALL, DIGEST)) == "ok"
    return good(ann)


CODES: list[tuple[str, Make, str, str, str]] = [
    ("ok", lambda r, a, c, v: good(a), CALL, DIGEST, "ok"),
    ("malformed-not-a-proof", lambda r, a, c, v: "ann says hi", CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-dict-missing-fields", lambda r, a, c, v: {"user": "ann"}, CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-claims-groups", lambda r, a, c, v: {**good(a).model_dump(), "groups": ["root"]}, CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-user-not-text", lambda r, a, c, v: good(a).model_copy(update={"user": 7}), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-empty-audience", lambda r, a, c, v: good(a, to=""), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-audience-not-text", lambda r, a, c, v: good(a).model_copy(update={"to": None}), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-audience-too-long", lambda r, a, c, v: good(a, to="h" * 257), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-short-nonce", lambda r, a, c, v: good(a, nonce="abc"), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-digest", lambda r, a, c, v: good(a, digest="xyz"), CALL, "xyz", codes.AUTH_MALFORMED),
    ("malformed-infinite-time", lambda r, a, c, v: good(a).model_copy(update={"expires_at": float("inf")}), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-bool-time", lambda r, a, c, v: good(a).model_copy(update={"issued_at": True}), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-expires-before-issue", lambda r, a, c, v: resign(good(a), a, expires_at=T0 - 1), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-lives-too-long", lambda r, a, c, v: good(a, ttl_s=61.0), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-signature-not-base64", lambda r, a, c, v: good(a).model_copy(update={"signature": "not base64!"}), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("malformed-signature-short", lambda r, a, c, v: good(a).model_copy(update={"signature": "AAAA"}), CALL, DIGEST, codes.AUTH_MALFORMED),
    ("unknown-user", lambda r, a, c, v: good(keys.Credential("zed", keys.generate_private_key())), CALL, DIGEST, codes.AUTH_UNKNOWN_USER),
    ("unknown-agent", lambda r, a, c, v: good(keys.Credential("host:h9", keys.generate_private_key())), CALL, DIGEST, codes.AUTH_UNKNOWN_USER),
    ("bad-signature-other-key", lambda r, a, c, v: good(keys.Credential("ann", keys.generate_private_key())), CALL, DIGEST, codes.AUTH_BAD_SIGNATURE),
    ("bad-signature-zeroed", lambda r, a, c, v: good(a).model_copy(update={"signature": "A" * 86 + "=="}), CALL, DIGEST, codes.AUTH_BAD_SIGNATURE),
    ("wrong-audience-collection", lambda r, a, c, v: good(a, to="collection"), CALL, DIGEST, codes.AUTH_WRONG_AUDIENCE),
    ("wrong-audience-host-group", lambda r, a, c, v: good(a, to="hostgroup:batch"), CALL, DIGEST, codes.AUTH_WRONG_AUDIENCE),
    ("wrong-audience-near-miss", lambda r, a, c, v: good(a, to="Scheduler"), CALL, DIGEST, codes.AUTH_WRONG_AUDIENCE),
    ("wrong-call", lambda r, a, c, v: good(a), "cancel", DIGEST, codes.AUTH_WRONG_CALL),
    ("wrong-arguments", lambda r, a, c, v: good(a), CALL, payload_digest({"request": {"count": 99}}), codes.AUTH_WRONG_CALL),
    ("clock-skew", lambda r, a, c, v: good(a, now=T0 + 2.5), CALL, DIGEST, codes.AUTH_CLOCK_SKEW),
    ("within-skew-is-fine", lambda r, a, c, v: good(a, now=T0 + 2.0), CALL, DIGEST, "ok"),
    ("expired", lambda r, a, c, v: good(a, now=T0 - 40.0), CALL, DIGEST, codes.AUTH_EXPIRED),
    ("expired-just", lambda r, a, c, v: good(a, now=T0 - 32.0), CALL, DIGEST, codes.AUTH_EXPIRED),
    ("expired-but-within-skew", lambda r, a, c, v: good(a, now=T0 - 31.9), CALL, DIGEST, "ok"),
    ("replayed", _present_twice, CALL, DIGEST, codes.AUTH_REPLAYED),
    ("overloaded", _full_cache, CALL, DIGEST, codes.AUTH_OVERLOADED),
]


@pytest.mark.parametrize("make, call, digest, code", [c[1:] for c in CODES], ids=[c[0] for c in CODES])
def test_each_code(registry, ann, clock, verifier, make: Make, call: str, digest: str, code: str) -> None:
    out = verifier.verify(make(registry, ann, clock, verifier), call, digest)
    assert code_of(out) == code, out
    if isinstance(out, Refusal):
        assert out.by == "scheduler" and out.reason


def test_every_proof_code_has_a_case() -> None:
    assert set(codes.PROOF_CODES) <= {c[-1] for c in CODES}


# --- the order of the checks ---------------------------------------------------------------


def test_a_replayed_proof_of_a_user_since_removed_says_unknown_user(registry, ann, verifier) -> None:
    p = good(ann)
    assert code_of(verifier.verify(p, CALL, DIGEST)) == "ok"
    registry.remove_user("ann")
    assert code_of(verifier.verify(p, CALL, DIGEST)) == codes.AUTH_UNKNOWN_USER


def test_a_stale_replay_says_expired(ann, clock, verifier) -> None:
    p = good(ann)
    verifier.verify(p, CALL, DIGEST)
    clock.t += 100
    assert code_of(verifier.verify(p, CALL, DIGEST)) == codes.AUTH_EXPIRED


ORDER = [
    # (name, make, call, want): each proof is wrong in two ways; the earlier check speaks
    ("malformed-before-unknown", lambda a: good(keys.Credential("zed", keys.generate_private_key()), nonce="x"), CALL, codes.AUTH_MALFORMED),
    ("unknown-before-bad-signature", lambda a: good(a).model_copy(update={"user": "zed"}), CALL, codes.AUTH_UNKNOWN_USER),
    ("bad-signature-before-wrong-audience", lambda a: good(a, to="collection").model_copy(update={"nonce": "f" * 32}), CALL,
     codes.AUTH_BAD_SIGNATURE),
    ("wrong-audience-before-wrong-call", lambda a: good(a, to="collection"), "cancel", codes.AUTH_WRONG_AUDIENCE),
    ("wrong-audience-before-expired", lambda a: good(a, to="collection", now=T0 - 100), CALL, codes.AUTH_WRONG_AUDIENCE),
    ("bad-signature-before-wrong-call", lambda a: good(a).model_copy(update={"nonce": "f" * 32}), "cancel", codes.AUTH_BAD_SIGNATURE),
    ("wrong-call-before-expired", lambda a: good(a, now=T0 - 100), "cancel", codes.AUTH_WRONG_CALL),
    ("bad-signature-before-expired", lambda a: good(a, now=T0 - 100).model_copy(update={"nonce": "f" * 32}), CALL, codes.AUTH_BAD_SIGNATURE),
]


@pytest.mark.parametrize("make, call, want", [c[1:] for c in ORDER], ids=[c[0] for c in ORDER])
def test_order_of_checks(ann, verifier, make, call, want) -> None:
    assert code_of(verifier.verify(make(ann), call, DIGEST)) == want


def test_a_refused_proof_does_not_use_up_its_nonce(ann, verifier) -> None:
    p = good(ann)
    assert code_of(verifier.verify(p, "cancel", DIGEST)) == codes.AUTH_WRONG_CALL
    assert code_of(verifier.verify(p, CALL, DIGEST)) == "ok"
    assert code_of(verifier.verify(p, CALL, DIGEST)) == codes.AUTH_REPLAYED


# --- tampering: every signed field ----------------------------------------------------------

TAMPER: list[tuple[str, Any]] = [
    ("user", "bob"),  # another registered user: the signature, not the lookup, refuses
    ("call", "cancel"),
    ("to", "collection"),
    ("digest", payload_digest({"request": {"count": 99}})),
    ("nonce", "0" * 32),
    ("issued_at", T0 - 1.0),
    ("expires_at", T0 + 31.0),
    ("acting_for", "bob"),  # a user's own proof cannot be turned into one acting for someone else
]


def test_the_tamper_table_covers_every_signed_field() -> None:
    assert {f for f, _ in TAMPER} == set(CallProof.model_fields) - {"signature"}


@pytest.mark.parametrize("field, value", TAMPER, ids=[f for f, _ in TAMPER])
def test_changing_any_signed_field_breaks_the_signature(registry, ann, verifier, field: str, value: Any) -> None:
    registry.add_user("bob")
    p = good(ann)
    bad = p.model_copy(update={field: value})
    call = bad.call
    out = verifier.verify(bad, call, bad.digest)  # presented for the call it now names
    assert code_of(out) == codes.AUTH_BAD_SIGNATURE, out
    assert code_of(verifier.verify(p, CALL, DIGEST)) == "ok"  # the original was not used up


def test_a_proof_for_one_actor_is_refused_at_another(registry, ann, clock) -> None:
    """The replay across actors: each keeps its own nonces, so only the audience stops it."""
    at = {name: Verifier(registry, clock, max_ttl_s=60.0, skew_s=2.0, by=name)
          for name in ("scheduler", "collection", "hostgroup:a", "hostgroup:b")}
    p = good(ann, to="hostgroup:a")
    for name, v in at.items():
        out = v.verify(p, CALL, DIGEST)
        if name == "hostgroup:a":
            assert code_of(out) == "ok"
        else:
            assert code_of(out) == codes.AUTH_WRONG_AUDIENCE and out.by == name and "'hostgroup:a'" in out.reason
    assert code_of(at["hostgroup:a"].verify(p, CALL, DIGEST)) == codes.AUTH_REPLAYED  # and once only where it is for


def test_a_proof_retargeted_to_another_actor_breaks_its_signature(registry, ann, clock) -> None:
    v = Verifier(registry, clock, max_ttl_s=60.0, skew_s=2.0, by="hostgroup:b")
    p = good(ann, to="hostgroup:a")
    assert code_of(v.verify(p.model_copy(update={"to": "hostgroup:b"}), CALL, DIGEST)) == codes.AUTH_BAD_SIGNATURE
    assert code_of(v.verify(p.model_dump() | {"to": "hostgroup:b"}, CALL, DIGEST)) == codes.AUTH_BAD_SIGNATURE


def test_a_host_group_hears_the_hosts_it_carries_and_no_other(registry, ann, clock) -> None:
    v = Verifier(registry, clock, max_ttl_s=60.0, skew_s=2.0, by="hostgroup:a", audience=("n1", "n2"))
    assert [code_of(v.verify(good(ann, to=to), CALL, DIGEST)) for to in ("hostgroup:a", "n1", "n2", "n3", "hostgroup:b")] \
        == ["ok", "ok", "ok", codes.AUTH_WRONG_AUDIENCE, codes.AUTH_WRONG_AUDIENCE]


def test_a_proof_for_one_call_is_refused_for_another(ann, verifier) -> None:
    p = good(ann, call="cancel", digest=payload_digest({"request_id": "r1"}))
    assert code_of(verifier.verify(p, "cancel", payload_digest({"request_id": "r2"}))) == codes.AUTH_WRONG_CALL
    assert code_of(verifier.verify(p, "scheduleObjects", payload_digest({"request_id": "r1"}))) == codes.AUTH_WRONG_CALL
    assert code_of(verifier.verify(p, "cancel", payload_digest({"request_id": "r1"}))) == "ok"


# --- groups and roles come from the registry ---------------------------------------------


def test_groups_and_roles_are_the_registrys_not_the_callers(registry, ann, verifier) -> None:
    out = verifier.verify(good(ann), CALL, DIGEST)
    assert out.groups == ("physics",) and out.roles == ("user",)
    registry.update_user("ann", groups=["genomics"], roles=["admin"])  # the administrator changes them
    out = verifier.verify(good(ann), CALL, DIGEST)
    assert out.groups == ("genomics",) and out.roles == ("admin", "user") and out.is_admin
    claim = {**good(ann).model_dump(), "roles": ["admin"], "groups": ["root"]}
    assert code_of(verifier.verify(claim, CALL, DIGEST)) == codes.AUTH_MALFORMED  # a proof cannot even carry a claim


def test_a_proof_crossing_as_a_dict_still_verifies(ann, verifier) -> None:
    assert code_of(verifier.verify(good(ann).model_dump(), CALL, DIGEST)) == "ok"


def test_signer_digests_models_and_mappings_alike(ann, clock, verifier) -> None:
    signer = CallSigner(ann, clock, ttl_s=10)
    proof = signer.sign("reserve", {"resources": Resources(cpus=2)}, to=TO)
    assert code_of(verifier.verify_args(proof, "reserve", {"resources": {"cpus": 2.0, "memory_gb": 0.0, "gpus": 0,
                                                                         "storage_gb": 0.0, "exclusive": False,
                                                                         "custom": []}})) == "ok"


# --- time ----------------------------------------------------------------------------------------


def test_a_clock_stepped_back_does_not_revive_a_nonce(ann, clock, verifier) -> None:
    p = good(ann)
    assert code_of(verifier.verify(p, CALL, DIGEST)) == "ok"
    clock.t += 100
    verifier.verify(good(ann, now=clock.t), CALL, DIGEST)  # prunes p's nonce
    assert len(verifier.nonces) == 1
    clock.t = T0  # the wall clock steps back
    assert code_of(verifier.verify(p, CALL, DIGEST)) == codes.AUTH_EXPIRED


def test_only_one_of_many_concurrent_presentations_passes(ann, verifier) -> None:
    p = good(ann)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(code_of(verifier.verify(p, CALL, DIGEST)))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(["ok"] + [codes.AUTH_REPLAYED] * 7)


def test_a_restarted_verifier_refuses_proofs_from_before_it_started(registry, ann, clock) -> None:
    p = good(ann)
    first = Verifier(registry, clock, max_ttl_s=60.0, skew_s=2.0, by=TO)
    assert code_of(first.verify(p, CALL, DIGEST)) == "ok"
    clock.t += 5  # the verifier restarts, its replay cache empty
    again = Verifier(registry, clock, max_ttl_s=60.0, skew_s=2.0, accept_from=clock.t - 2.0, by=TO)
    assert code_of(again.verify(p, CALL, DIGEST)) == codes.AUTH_EXPIRED
    assert code_of(again.verify(good(ann, now=clock.t), CALL, DIGEST)) == "ok"


def test_verifier_rejects_nonsense_limits(registry, clock) -> None:
    with pytest.raises(ValueError):
        Verifier(registry, clock, max_ttl_s=0)


# --- the gateway acting for a user ----------------------------------------------------------


@pytest.mark.parametrize("signer_kind, acting_for, want", [
    ("gateway", "ann", "ok"),
    ("gateway", "nobody", codes.AUTH_UNKNOWN_USER),
    ("dashboard", "ann", codes.AUTH_FORBIDDEN),
    ("user", "ann", codes.AUTH_FORBIDDEN),
], ids=["gateway-for-a-user", "gateway-for-a-stranger", "another-agent", "a-user"])
def test_only_the_gateway_acts_for_a_user(registry, ann, verifier, signer_kind, acting_for, want) -> None:
    signer = registry.add_agent(signer_kind, signer_kind) if signer_kind != "user" else registry.add_user("bob")
    out = verifier.verify(good(signer, acting_for=acting_for), CALL, DIGEST)
    assert code_of(out) == want, out
    if want == "ok":  # the call is the user's, with the registry's facts
        assert (out.name, out.kind, out.groups) == ("ann", "user", ("physics",))


def test_a_signer_acting_for_a_user_signs_for_them(registry, ann, verifier, clock) -> None:
    gw = CallSigner(registry.add_agent("gateway", "gateway"), clock)
    out = verifier.verify_args(gw.acting("ann").sign(CALL, ARGS, to=TO), CALL, ARGS)
    assert isinstance(out, VerifiedCaller) and out.name == "ann"
    assert verifier.verify_args(gw.sign(CALL, ARGS, to=TO), CALL, ARGS).name == "gateway:gateway"
