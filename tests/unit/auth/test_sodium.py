"""libsodium signs and checks for :mod:`legionrm.auth.keys`: the same signatures, OpenSSL's verdicts."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.auth import keys
from legionrm.auth.proof import Verifier, sign_call
from legionrm.auth.registry import Registry


def test_libsodium_is_installed() -> None:
    """PyNaCl is a dependency: without it every signature would quietly take OpenSSL's slower way."""
    assert keys.crypto_sign is not None and keys.crypto_sign_open is not None


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=600), flip=st.integers(min_value=0, max_value=64 * 8 - 1))
def test_libsodium_signs_the_bytes_openssl_signs_and_verify_keeps_openssl_verdicts(data: bytes, flip: int) -> None:
    private = Ed25519PrivateKey.generate()
    assert keys.sign_raw(private, data) == private.sign(data)  # Ed25519 is deterministic: the very same bytes
    good = keys.sign_bytes(private, data)
    assert keys.verify_bytes(private.public_key(), data, good)
    bad = bytearray(base64.b64decode(good))
    bad[flip // 8] ^= 1 << (flip % 8)
    assert not keys.verify_bytes(private.public_key(), data, base64.b64encode(bytes(bad)).decode())
    assert not keys.verify_bytes(private.public_key(), data + b"x", good)
    assert not keys.verify_bytes(Ed25519PrivateKey.generate().public_key(), data, good)


def test_what_libsodium_refuses_openssl_decides() -> None:
    """The identity point as a key, with the identity and 0 as its signature: OpenSSL accepts it for any
    message, libsodium refuses it (a small-order key); verify_bytes answers as OpenSSL does, as it always did."""
    raw = bytes([1] + [0] * 31)
    signature = bytes([1] + [0] * 31) + bytes(32)
    key = Ed25519PublicKey.from_public_bytes(raw)
    key.verify(signature, b"any message")  # OpenSSL: valid
    assert not keys.sodium_accepts(raw, signature, b"any message")
    assert keys.verify_bytes(key, b"any message", base64.b64encode(signature).decode())


def test_without_libsodium_openssl_signs_and_checks_alone(monkeypatch) -> None:
    private = Ed25519PrivateKey.generate()
    with_sodium = keys.sign_bytes(private, b"m")
    monkeypatch.setattr(keys, "crypto_sign", None)
    monkeypatch.setattr(keys, "crypto_sign_open", None)
    assert keys.sign_bytes(private, b"m") == with_sodium
    assert keys.verify_bytes(private.public_key(), b"m", with_sodium)
    assert not keys.verify_bytes(private.public_key(), b"n", with_sodium)


@pytest.mark.parametrize("tamper", ["none", "call", "digest", "signature"])
def test_a_call_proof_signed_and_checked_by_libsodium(tmp_path, tamper: str) -> None:
    reg = Registry(tmp_path)
    cred = reg.add_user("ann")
    proof = sign_call(cred, "submit", "a" * 64, 1000.0, to="scheduler")
    if tamper == "signature":
        sig = bytearray(base64.b64decode(proof.signature))
        sig[5] ^= 4
        proof = proof.model_copy(update={"signature": base64.b64encode(bytes(sig)).decode()})
    got = Verifier(Registry(tmp_path), lambda: 1001.0, by="scheduler").verify(
        proof, "cancel" if tamper == "call" else "submit", "b" * 64 if tamper == "digest" else "a" * 64)
    expected = {"none": "ann", "call": "auth.wrong_call", "digest": "auth.wrong_call", "signature": "auth.bad_signature"}
    assert getattr(got, "name", None) == expected[tamper] or getattr(got, "code", None) == expected[tamper]
