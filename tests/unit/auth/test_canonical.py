"""The canonical signed form and payload digests: stable, and different for different things."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from legionrm.auth.canonical import (
    ATTEST_DOMAIN,
    CALL_DOMAIN,
    canonical,
    payload_digest,
)
from legionrm.models import Resources

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
fields = st.dictionaries(st.text(max_size=6), scalars, max_size=6)


@given(fields, fields)
def test_canonical_is_equal_exactly_for_equal_fields(a, b) -> None:
    same = {k: (type(v), repr(v)) for k, v in a.items()} == {k: (type(v), repr(v)) for k, v in b.items()}  # 1 vs 1.0, -0.0 vs 0.0 differ
    assert (canonical(CALL_DOMAIN, a) == canonical(CALL_DOMAIN, b)) == same


@given(fields)
def test_canonical_ignores_key_order_but_not_the_domain(a) -> None:
    backwards = dict(reversed(list(a.items())))
    assert canonical(CALL_DOMAIN, a) == canonical(CALL_DOMAIN, backwards) != canonical(ATTEST_DOMAIN, a)


def test_payload_digest_treats_models_tuples_and_key_order_alike() -> None:
    r = Resources(cpus=2)
    assert payload_digest({"r": r, "xs": (1, 2)}) == payload_digest({"xs": [1, 2], "r": r.model_dump(mode="json")})
    assert payload_digest({"r": r}) != payload_digest({"r": Resources(cpus=3)})
    assert payload_digest({"d": float("inf")}) == payload_digest({"d": float("inf")})
    assert len(payload_digest(None)) == 64
