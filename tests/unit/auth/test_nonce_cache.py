"""The replay cache stays bounded: entries leave once their proof has expired."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm import codes
from legionrm.auth.canonical import payload_digest
from legionrm.auth.proof import NonceCache, VerifiedCaller, Verifier, sign_call
from legionrm.auth.registry import Registry
from legionrm.models import Refusal

from .conftest import T0, Clock

MAX_TTL, SKEW = 30.0, 2.0
DIGEST = payload_digest({})

# One step: let time pass, then present a fresh proof (issued with some clock
# offset and life) or an earlier one again.
step = st.tuples(
    st.floats(0.0, 20.0),  # time passing
    st.floats(-SKEW - 5, SKEW + 1),  # the signer's clock offset
    st.floats(0.5, MAX_TTL),  # life
    st.one_of(st.none(), st.integers(0, 1000)),  # None: fresh; n: replay an earlier proof
)

REG = Registry(None)
CRED = REG.add_user("ann")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=60))
def test_cache_is_bounded_and_never_accepts_twice(steps) -> None:
    clock = Clock()
    v = Verifier(REG, clock, max_ttl_s=MAX_TTL, skew_s=SKEW)
    sent, accepted = [], set()
    for dt, offset, life, replay in steps:
        clock.t += dt
        if replay is None or not sent:
            proof = sign_call(CRED, "c", DIGEST, clock.t + offset, life, to="auth")
            sent.append(proof)
        else:
            proof = sent[replay % len(sent)]
        out = v.verify(proof, "c", DIGEST)
        if isinstance(out, VerifiedCaller):
            assert proof.nonce not in accepted, "a proof was accepted twice"
            accepted.add(proof.nonce)
        else:
            assert out.code in (codes.AUTH_REPLAYED, codes.AUTH_EXPIRED, codes.AUTH_CLOCK_SKEW), out
        live = v.nonces.drop_times()
        # every entry belongs to a proof that has not yet expired, and none outlives the window
        assert all(clock.t < d <= clock.t + MAX_TTL + 2 * SKEW for d in live)
        assert len(v.nonces) <= len(accepted)


def test_many_proofs_over_a_long_time_leave_a_small_cache() -> None:
    clock = Clock()
    v = Verifier(REG, clock, max_ttl_s=10.0, skew_s=0.0)
    for _ in range(2000):
        clock.t += 1.0
        assert isinstance(v.verify(sign_call(CRED, "c", DIGEST, clock.t, 10.0, to="auth"), "c", DIGEST), VerifiedCaller)
    assert len(v.nonces) == 10 and len(v.nonces._heap) == 10


@given(st.lists(st.tuples(st.text(min_size=1, max_size=3), st.floats(0, 100)), max_size=50), st.floats(0, 100))
def test_prune_drops_exactly_the_due_entries(entries, now) -> None:
    cache = NonceCache()
    want: dict[tuple[str, str], float] = {}
    for nonce, drop_at in entries:
        key = ("u", nonce)
        if key not in cache:
            cache.add(key, drop_at)
            want[key] = drop_at
    cache.prune(now)
    assert {k for k in want if want[k] > now} == {k for k in want if k in cache}


def test_a_full_cache_refuses_instead_of_forgetting() -> None:
    clock = Clock()
    v = Verifier(REG, clock, max_ttl_s=10.0, skew_s=0.0, max_nonces=2)
    first = sign_call(CRED, "c", DIGEST, T0, 10.0, to="auth")
    assert isinstance(v.verify(first, "c", DIGEST), VerifiedCaller)
    assert isinstance(v.verify(sign_call(CRED, "c", DIGEST, T0, 10.0, to="auth"), "c", DIGEST), VerifiedCaller)
    out = v.verify(sign_call(CRED, "c", DIGEST, T0, 10.0, to="auth"), "c", DIGEST)
    assert isinstance(out, Refusal) and out.code == codes.AUTH_OVERLOADED
    assert v.verify(first, "c", DIGEST).code == codes.AUTH_REPLAYED  # the first is still remembered
    clock.t += 10.0
    assert isinstance(v.verify(sign_call(CRED, "c", DIGEST, clock.t, 10.0, to="auth"), "c", DIGEST), VerifiedCaller)
