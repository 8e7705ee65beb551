"""The signed bytes of a token, written directly, are byte for byte the model's JSON dump."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.hostobj import tokens
from legionrm.models import Holder, ReservationToken, Resources

_DUMP = json.JSONEncoder(sort_keys=True, separators=(",", ":"))

text = st.text(max_size=12)
times = st.floats(allow_nan=True, allow_infinity=True)
holders = st.builds(Holder, user=text, class_name=st.none() | text, enactor=text, groups=st.tuples(text) | st.just(()))
amounts = st.builds(Resources, cpus=st.floats(0, 1e6), memory_gb=st.floats(0, 1e6), gpus=st.integers(0, 64),
                    exclusive=st.booleans(), custom=st.just(()) | st.just((("fpga", 2.0),)))


def dumped(token: ReservationToken) -> bytes:
    """What the canonical form was defined as: the model's JSON dump without the signature."""
    return _DUMP.encode(token.model_dump(mode="json", exclude={"signature"})).encode()


@settings(max_examples=300, deadline=None)
@given(tid=text, issuer=text, holder=holders, amount=amounts, vault=st.none() | text, start=times,
       end=st.none() | times, expires=times, reusable=st.booleans())
def test_the_canonical_bytes_are_the_dump(tid, issuer, holder, amount, vault, start, end, expires, reusable) -> None:
    fields = dict(token_id=tid, issuer=issuer, holder=holder, resources=amount, vault=vault, start=start, end=end,
                  expires_at=expires, reusable=reusable)
    token = ReservationToken.model_construct(**fields, signature="")
    assert tokens.canonical(token) == dumped(token)
    if all(math.isfinite(x) for x in (start, expires, *([] if end is None else [end]))):
        signed = tokens.Signer(b"k" * 32).signed(**fields)
        assert tokens.verify(signed, b"k" * 32) and not tokens.verify(signed, b"j" * 32)
        assert signed.signature == tokens.signature(signed, b"k" * 32)
        # a resource's own grant, built without validation from valid values: the same token
        granted = tokens.Signer(b"k" * 32).granted(**fields)
        assert granted == signed and granted.signature == signed.signature
        assert granted.model_dump_json() == signed.model_dump_json()


def test_a_change_of_any_field_breaks_the_signature() -> None:
    signer = tokens.Signer(tokens.new_secret())
    good = signer.signed(token_id="h~1", issuer="h", holder=Holder(user="ann"), resources=Resources(cpus=1), vault=None,
                         start=1.0, end=None, expires_at=2.0, reusable=False)
    assert signer.verify(good)
    for change in ({"start": 1.5}, {"end": 3.0}, {"holder": Holder(user="bob")}, {"resources": Resources(cpus=2)},
                   {"vault": "v"}, {"reusable": True}, {"token_id": "h~2"}, {"issuer": "g"}, {"expires_at": 9.0}):
        assert not signer.verify(good.model_copy(update=change)), change
