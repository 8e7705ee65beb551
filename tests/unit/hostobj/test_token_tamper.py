"""Reservation tokens: changing any one signed field, at any depth, is refused as forged.

Every leaf field of :class:`~legionrm.models.ReservationToken` (the nested
``holder`` and ``resources`` fields one by one, ``vault`` and ``reusable``
included) is changed in turn, and the changed token is presented to the host
that issued it, by the holder the token now names, for the class it now names.
The host must say ``token.forged``: nothing else (an unknown token, a vault
that does not pair) would show that the field is signed.

The table is checked against the model, so a field added to the token without
a case here fails :func:`test_the_table_covers_every_field`.  And
:func:`test_the_check_depends_on_the_canonical_form` drops each field from
the signed form in turn (``tokens.canonical`` patched for that test only) and
shows the tampered token is then *not* refused as forged: the main test would
fail if any field fell out of what is signed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from legionrm import codes
from legionrm.hostobj import tokens
from legionrm.hostobj.host import HostObject
from legionrm.models import (
    Holder,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

SECRET = b"s" * 32
T0 = 10_000.0
HOLDER = Holder(user="ann", class_name="Foo", enactor="enactor", groups=("physics",))
ASK = Resources(cpus=1.0, memory_gb=2.0, gpus=1, storage_gb=0.0, exclusive=False)

# (dotted field, new value); each value is a well-formed token value that
# the host would accept if it were not signed.
MUTATIONS: list[tuple[str, Any]] = [
    ("token_id", "h1~00000000000000000000"),
    ("issuer", "h2"),  # presented to h2, which shares h1's secret: only the signature can tell
    ("holder.user", "bob"),
    ("holder.class_name", "Bar"),
    ("holder.enactor", "rogue-enactor"),
    ("holder.groups", ("physics", "wheel")),
    ("resources.cpus", 4.0),
    ("resources.memory_gb", 8.0),
    ("resources.gpus", 2),
    ("resources.storage_gb", 100.0),
    ("resources.exclusive", True),
    ("resources.custom", (("tpu", 1.0),)),
    ("vault", "v2"),
    ("start", T0 - 10.0),
    ("end", T0 + 10_000.0),
    ("expires_at", T0 + 5_000.0),
    ("reusable", True),
]


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def leaf_fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every leaf field of ``model``, nested models walked, as dotted paths."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out |= leaf_fields(ann, f"{prefix}{name}.")
        else:
            out.add(f"{prefix}{name}")
    return out


def mutate(token: BaseModel, path: str, value: Any) -> Any:
    """``token`` with the field at dotted ``path`` set to ``value`` (signature untouched)."""
    head, _, rest = path.partition(".")
    new = mutate(getattr(token, head), rest, value) if rest else value
    return token.model_copy(update={head: new})


def issue() -> tuple[HostObject, HostObject, ReservationToken]:
    """Host h1 (and h2 with the same secret), both pairing with v1 and v2, and a token from h1."""
    clock = Clock()
    kw: dict[str, Any] = {"vaults": ("v*",), "secret": SECRET, "clock": clock}
    h1 = HostObject("h1", Resources(cpus=8, memory_gb=16, gpus=4), **kw)
    h2 = HostObject("h2", Resources(cpus=8, memory_gb=16, gpus=4), **kw)
    tok = h1.make_reservation(
        ReservationRequest(request_id="r1", resource="h1", holder=HOLDER, resources=ASK, vault="v1",
                           duration_s=600.0, timeout_s=300.0)
    )
    assert isinstance(tok, ReservationToken), tok
    assert tok.vault == "v1" and tok.end is not None and tok.reusable is False
    return h1, h2, tok


def present(path: str, value: Any) -> tuple[ReservationToken, InstanceRef | Refusal]:
    """Tamper with ``path`` and present the token as its (new) holder to its (new) issuer."""
    h1, h2, tok = issue()
    bad = mutate(tok, path, value)
    assert bad != tok and (path == "signature" or bad.signature == tok.signature)
    host = {"h1": h1, "h2": h2}[bad.issuer]
    return bad, host.start_object(bad, bad.holder.class_name or "Foo", bad.holder)


def test_the_table_covers_every_field() -> None:
    assert {p for p, _ in MUTATIONS} == leaf_fields(ReservationToken) - {"signature"}


def test_the_untampered_token_starts() -> None:
    h1, _, tok = issue()
    out = h1.start_object(tok, "Foo", HOLDER)
    assert isinstance(out, InstanceRef) and out.vault == "v1"


@pytest.mark.parametrize("path, value", MUTATIONS, ids=[p for p, _ in MUTATIONS])
def test_a_changed_field_is_refused_as_forged(path: str, value: Any) -> None:
    bad, out = present(path, value)
    assert not tokens.verify(bad, SECRET)
    assert isinstance(out, Refusal) and out.code == codes.TOKEN_FORGED, out


@pytest.mark.parametrize("value", [None, T0 + 1.0], ids=["open-ended", "earlier"])
def test_end_changed_either_way_is_forged(value) -> None:
    _, out = present("end", value)
    assert isinstance(out, Refusal) and out.code == codes.TOKEN_FORGED, out


@pytest.mark.parametrize("signature", ["", "0" * 64, "A" * 64], ids=["empty", "zeros", "upper"])
def test_a_changed_signature_is_forged(signature: str) -> None:
    _, out = present("signature", signature)
    assert isinstance(out, Refusal) and out.code == codes.TOKEN_FORGED, out


@pytest.mark.parametrize("signature", ["é" * 64, "\ud800" * 64, "€" + "0" * 63],
                         ids=["non-ascii", "lone-surrogate", "one-non-ascii"])
def test_a_non_ascii_signature_is_forged_not_an_exception(signature: str) -> None:
    _, out = present("signature", signature)
    assert isinstance(out, Refusal) and out.code == codes.TOKEN_FORGED, out


def _dropping(path: str) -> Callable[[ReservationToken], bytes]:
    """A canonical form that leaves ``path`` out of what is signed (only for the test below)."""

    def canonical(token: ReservationToken) -> bytes:
        body = token.model_dump(mode="json", exclude={"signature"})
        *parents, leaf = path.split(".")
        node = body
        for p in parents:
            node = node[p]
        del node[leaf]
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    return canonical


@pytest.mark.parametrize("path, value", MUTATIONS, ids=[p for p, _ in MUTATIONS])
def test_the_check_depends_on_the_canonical_form(monkeypatch, path: str, value: Any) -> None:
    monkeypatch.setattr(tokens, "canonical", _dropping(path))
    bad, out = present(path, value)
    assert tokens.verify(bad, SECRET)  # with the field unsigned, the change goes unseen...
    assert not (isinstance(out, Refusal) and out.code == codes.TOKEN_FORGED), out  # ...and the main test would fail
