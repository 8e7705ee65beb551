"""The canonical signed form and payload digests: stable, and different for different things."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from legionrm.auth.canonical import (
    _plain,
    ATTEST_DOMAIN,
    CALL_DOMAIN,
    canonical,
    payload_digest,
)
from legionrm.models import Identity, Resources
from legionrm.models.intake import Cancel, Submit

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



# --- the digest's fast path (exact built-in types first) gives the checks' own answer --------------

def _plain_by_checks(value: Any) -> Any:
    """``canonical._plain`` as it was written before its fast path: the isinstance checks alone."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain_by_checks(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_by_checks(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain_by_checks(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


_SCALAR_ARGS = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
_ARGS = st.recursive(
    st.one_of(_SCALAR_ARGS, st.builds(Identity, user=st.text(min_size=1, max_size=6)),
              st.builds(Submit, st.text(max_size=5), st.text(max_size=5)),
              st.builds(Cancel, st.text(max_size=5), st.text(max_size=5), st.text(max_size=5))),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
                            st.dictionaries(st.one_of(st.text(max_size=4), st.integers(-3, 3)), inner, max_size=4),
                            st.frozensets(st.text(max_size=4), max_size=3)),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_ARGS)
def test_the_digest_fast_path_gives_the_checks_answer(value: Any) -> None:
    assert _plain(value) == _plain_by_checks(value)
    assert (json.dumps(_plain(value), sort_keys=True)
            == json.dumps(_plain_by_checks(value), sort_keys=True))
