"""The signature check for calls shaped as legionrm's own clients sign them, without a general parser.

:mod:`legionrm.client.signing` signs every call the same way: one
signature labelled ``legionrm`` over ``@method``, ``@path``, ``@query``,
(``legionrm-as``,) ``content-digest``, with ``created``, ``keyid``,
``alg="ed25519"`` and ``nonce`` in that order.  For a call whose
``Signature-Input`` is exactly that shape (one field line, matched whole;
a key id and nonce with no character that needs escaping), whose one
``Content-Digest`` is the SHA-256 of its body, and whose one ``Signature``
is one Ed25519 signature, :func:`quick_verify` builds the signature base
(RFC 9421 section 2.5) from the call's own method, path, query and fields
and checks the signature with the user's key: the same base, byte for
byte, as the general ``http-message-signatures`` verifier builds.  Any
call of another shape, or one that does not verify here, goes to that
verifier (:class:`~legionrm.gateway.signatures.SignatureCheck`), which
accepts or refuses it with its own reasons: this path only accepts.
The policy checks (clock, nonce, rate) are the caller's, the same for
both paths.

:func:`fast_key` makes the key this path verifies with: libsodium's Ed25519
(PyNaCl) when it is installed, which checks a signature in about half the
CPU of OpenSSL's (two checks a submit+cancel pair were a tenth of a busy
gateway).  libsodium accepts no signature OpenSSL refuses (it refuses more:
small-order keys and points, non-canonical encodings), and a call it refuses
goes to the general verifier, which decides with OpenSSL: what the door
accepts is what it accepted before.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from legionrm.auth import keys
from legionrm.client.signing import content_digest
from legionrm.protocol import AS_HEADER, SIGNATURE_LABEL

W = TypeVar("W")


class Verifying(Protocol):
    """A public key that checks a signature (``verify`` raises :class:`InvalidSignature`)."""

    def verify(self, signature: bytes, data: bytes) -> None: ...


class SodiumKey:
    """An Ed25519 public key checked by libsodium, as :class:`Ed25519PublicKey` is checked."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def verify(self, signature: bytes, data: bytes) -> None:
        """Nothing when ``signature`` is this key's over ``data``; else :class:`InvalidSignature`."""
        if not keys.sodium_accepts(self.raw, signature, data):
            raise InvalidSignature


def fast_key(key: Ed25519PublicKey) -> Verifying:
    """``key`` as :func:`quick_verify` checks with it (see the module doc): libsodium's when installed."""
    return SodiumKey(key.public_bytes_raw()) if keys.crypto_sign_open is not None else key


_SAFE = r'[ !#-\[\]-~]'  # printable ASCII but '"' and '\\': a structured-field string with nothing escaped
_INPUT = re.compile(
    re.escape(SIGNATURE_LABEL) + r'=\("@method" "@path" "@query"(?P<as> "' + re.escape(AS_HEADER.lower())
    + r'")? "content-digest"\);created=(?P<created>[0-9]{1,15});keyid="(?P<keyid>' + _SAFE + r'{1,256})"'
    + r';alg="ed25519";nonce="(?P<nonce>' + _SAFE + r'{16,128})"')
_SIGNATURE = re.compile(re.escape(SIGNATURE_LABEL) + r'=:(?P<sig>[A-Za-z0-9+/]{86}==):')


def quick_verify(method: str, path_qs: str, headers: Any, body: bytes,
                 key_of: Callable[[str], tuple[W, Verifying] | None]) -> tuple[W, str, int] | None:
    """``(who, nonce, created)`` of a call of the shape above signed by the key of ``key_of(user)``
    (``(who, key)``: the user as the caller knows them, and their key) over its base; None for
    anything else (the general verifier then decides).  ``headers`` has
    ``getall`` (aiohttp's) or ``get_list`` (httpx's); ``path_qs`` is the request target as sent.
    (Every call but the open ones comes this way: it is written for the few microseconds.)"""
    lines = headers.getall if hasattr(headers, "getall") else _get_list(headers)
    inputs, signatures, digests = lines("Signature-Input", ()), lines("Signature", ()), lines("Content-Digest", ())
    if len(inputs) != 1 or len(signatures) != 1 or len(digests) != 1:
        return None
    params_line, sig_line, digest = inputs[0].strip(), signatures[0].strip(), digests[0].strip()
    m, s = _INPUT.fullmatch(params_line), _SIGNATURE.fullmatch(sig_line)
    if m is None or s is None or digest != content_digest(body):
        return None
    as_values = lines(AS_HEADER, ())
    if m.group("as"):
        if len(as_values) != 1:
            return None
        as_line = f'\n"{AS_HEADER.lower()}": {as_values[0].strip()}'
    elif as_values:
        return None  # acting as someone, unsigned: the general verifier refuses it with its reason
    else:
        as_line = ""
    path, _, query = path_qs.partition("?")
    # each covered value printable ASCII with no line break (the digest is, by its match above): the
    # concatenation is exactly when each part is
    if not _printable(method + path_qs + as_line[1:]):
        return None
    base = (f'"@method": {method.upper()}\n"@path": {path or "/"}\n"@query": ?{query}{as_line}\n'
            f'"content-digest": {digest}\n"@signature-params": {params_line[len(SIGNATURE_LABEL) + 1:]}')
    found = key_of(m.group("keyid"))
    if found is None:
        return None
    try:
        found[1].verify(binascii.a2b_base64(s.group("sig")), base.encode("ascii"))
    except (InvalidSignature, binascii.Error, ValueError):
        return None
    return found[0], m.group("nonce"), int(m.group("created"))


def _get_list(headers: Any) -> Callable[[str, Any], list[str]]:
    """httpx's ``get_list`` as aiohttp's ``getall(name, default)`` (every line of a field, any case)."""
    return lambda name, _default: list(headers.get_list(name))


def _printable(text: str) -> bool:
    """Can ``text`` stand in a signature base line as it is (printable ASCII, no line break)?"""
    return text.isascii() and text.isprintable()
