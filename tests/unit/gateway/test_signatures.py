"""The door's check of a signed call: each way a call can be wrong is refused with its own code."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.auth.guard import ReloadingRegistry
from legionrm.auth.registry import Registry
from legionrm.client.signing import RequestSigner
from legionrm.gateway import signatures
from legionrm.gateway.intake import quickcheck
from legionrm.gateway.signatures import (
    RateLimit,
    Refused,
    SignatureCheck,
)

BODY = b'{"request": {"object": [{"class_name": "Worker", "count": 1}]}}'
PATH = "/api/v1/requests?x=1"


class Clock:
    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.time() + self.shift


@pytest.fixture(params=["quick", "general"])
def world(tmp_path, request, monkeypatch) -> dict[str, Any]:
    """A registry of ann and bob, and the check over it: with its quick path for legionrm's own
    clients' calls, and with the general RFC 9421 verifier alone (each call must be judged the same)."""
    if request.param == "general":
        monkeypatch.setattr(signatures, "quick_verify", lambda *a, **k: None)
    reg = Registry(tmp_path)
    keys = {name: reg.add_user(name).private_key for name in ("ann", "bob")}
    clock = Clock()
    check = SignatureCheck(ReloadingRegistry(Registry(tmp_path)), clock=clock, rate=RateLimit(rate=0.001, burst=3))
    return {"registry": reg, "keys": keys, "clock": clock, "check": check}


def signed(key: Any, user: str = "ann", method: str = "POST", path: str = PATH, body: bytes = BODY) -> httpx.Request:
    req = httpx.Request(method, "http://gw" + path, content=body or None)
    RequestSigner(user, key).sign(req, body)
    return req


def present(w: dict[str, Any], req: httpx.Request, *, method: str | None = None, path: str | None = None,
            body: bytes | None = None) -> str:
    """The check's answer to ``req`` (as sent, or with its method, path or body changed): the user or the code."""
    raw = req.url.raw_path.decode()
    try:
        return str(w["check"].verify(method or req.method, path or raw, req.headers, BODY if body is None else body).name)
    except Refused as r:
        return r.code


def _twice(w):
    req = signed(w["keys"]["ann"])
    assert present(w, req) == "ann"
    return present(w, req)


def _unsigned(w):
    req = signed(w["keys"]["ann"])
    for h in ("signature", "signature-input"):
        del req.headers[h]
    return present(w, req)


def _removed(w):
    req = signed(w["keys"]["bob"], "bob")
    w["registry"].remove_user("bob")
    return present(w, req)


def _shifted(seconds: float) -> Callable[[dict[str, Any]], str]:
    def run(w):
        w["clock"].shift = seconds
        return present(w, signed(w["keys"]["ann"]))
    return run


def _over_rate(w):
    for _ in range(3):
        assert present(w, signed(w["keys"]["ann"])) == "ann"
    return present(w, signed(w["keys"]["ann"]))


def _no_nonce(w):
    req = signed(w["keys"]["ann"])
    req.headers["signature-input"] = req.headers["signature-input"].replace(";nonce=", ";x=")
    return present(w, req)


CASES: list[tuple[str, Callable[[dict[str, Any]], str], str]] = [
    ("good", lambda w: present(w, signed(w["keys"]["ann"])), "ann"),
    ("good-get", lambda w: present(w, signed(w["keys"]["ann"], method="GET", body=b""), body=b""), "ann"),
    ("replayed", _twice, "auth.replayed"),
    ("tampered-body", lambda w: present(w, signed(w["keys"]["ann"]), body=BODY.replace(b"1", b"9")),
     "auth.bad_signature"),
    ("tampered-path", lambda w: present(w, signed(w["keys"]["ann"]), path="/api/v1/users?x=1"), "auth.bad_signature"),
    ("tampered-query", lambda w: present(w, signed(w["keys"]["ann"]), path="/api/v1/requests?x=2"),
     "auth.bad_signature"),
    ("tampered-method", lambda w: present(w, signed(w["keys"]["ann"]), method="DELETE"), "auth.bad_signature"),
    ("expired", _shifted(+120), "auth.expired"),
    ("future", _shifted(-120), "auth.clock_skew"),
    ("unsigned", _unsigned, "auth.unsigned"),
    ("wrong-key", lambda w: present(w, signed(w["keys"]["bob"], "ann")), "auth.bad_signature"),
    ("unknown-user", lambda w: present(w, signed(w["keys"]["bob"], "carl")), "auth.unknown_user"),
    ("revoked", _removed, "auth.unknown_user"),
    ("no-nonce", _no_nonce, "auth.malformed"),
    ("rate-limited", _over_rate, "rate.limited"),
]


@pytest.mark.parametrize("make, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_bad_call_is_refused_with_its_code(world, make, want) -> None:
    assert make(world) == want


def test_a_refused_call_does_not_use_up_its_nonce(world) -> None:
    req = signed(world["keys"]["ann"])
    assert present(world, req, body=b"{}") == "auth.bad_signature"
    assert present(world, req) == "ann"


def test_the_rate_refills(world) -> None:
    limit = RateLimit(rate=10.0, burst=1.0, clock=lambda: now[0])
    now = [0.0]
    assert limit.take("ann") and not limit.take("ann")
    now[0] = 0.2
    assert limit.take("ann") and limit.take("bob")


def test_the_quick_path_judges_a_call_of_its_shape_alone(tmp_path, monkeypatch) -> None:
    """A good call of legionrm's own shape never reaches the general verifier; a tampered one does
    (and is refused there, with its code)."""
    reg = Registry(tmp_path)
    key = reg.add_user("ann").private_key
    check = SignatureCheck(ReloadingRegistry(Registry(tmp_path)))
    general: list[str] = []
    real = check._verify_general
    monkeypatch.setattr(check, "_verify_general", lambda *a: general.append("x") or real(*a))
    w = {"check": check}
    assert present(w, signed(key)) == "ann" and general == []
    assert present(w, signed(key), body=BODY + b" ") == "auth.bad_signature" and general == ["x"]
    assert present(w, signed(key, method="GET", body=b"", path="/api/v1/requests"), body=b"") == "ann"
    assert general == ["x"]


def test_the_quick_path_uses_libsodium_when_installed(tmp_path) -> None:
    """The door's keys are libsodium's (PyNaCl is a dependency), and the quick path still judges alone."""
    reg = Registry(tmp_path)
    key = reg.add_user("ann").private_key
    check = SignatureCheck(ReloadingRegistry(Registry(tmp_path)))
    assert present({"check": check}, signed(key)) == "ann"
    found = check._key_of("ann")
    assert found is not None and isinstance(found[1], quickcheck.SodiumKey)


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300), flip=st.integers(min_value=0, max_value=64 * 8 - 1))
def test_libsodium_accepts_what_openssl_accepts_and_refuses_an_altered_signature(data: bytes, flip: int) -> None:
    """The same verdict as OpenSSL's on a good signature, on the same one with any bit flipped, and on other data."""
    private = Ed25519PrivateKey.generate()
    sig = private.sign(data)
    quick = quickcheck.SodiumKey(private.public_key().public_bytes_raw())
    quick.verify(sig, data)
    bad = bytearray(sig)
    bad[flip // 8] ^= 1 << (flip % 8)
    for key in (quick, private.public_key()):
        with pytest.raises(InvalidSignature):
            key.verify(bytes(bad), data)
    with pytest.raises(InvalidSignature):
        quick.verify(sig, data + b"x")
