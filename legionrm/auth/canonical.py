"""The one canonical form that every auth signature covers, and payload digests.

A signature is made over ``canonical(domain, fields)``: sorted-key, compact,
ASCII JSON of ``{"domain": domain, "fields": fields}``.  The domain names what
is signed and its version (``legionrm.call.v1``, ``legionrm.attest.v1``), so a
signature made for one kind of statement can never be presented as another
(an attestation is not a call proof, even if the fields happened to line up).

:func:`payload_digest` is how a caller and a verifier agree on "the arguments
of this call": SHA-256 of the canonical JSON of the arguments (pydantic models
as their JSON dump, tuples as lists).  Both sides compute it from the same
values; the proof carries it and is bound to it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

CALL_DOMAIN = "legionrm.call.v1"
ATTEST_DOMAIN = "legionrm.attest.v1"


def canonical(domain: str, fields: Mapping[str, Any]) -> bytes:
    """The bytes signed for ``fields`` under ``domain``.

    Contract: equal inputs give equal bytes on every machine; any change to
    any field or to the domain changes the bytes.  Floats must be finite
    (``ValueError`` otherwise): a signed time is always a time.
    """
    for key, value in fields.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"signed field {key!r} is not finite: {value!r}")
    doc = {"domain": domain, "fields": dict(fields)}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


_SCALARS = frozenset((str, int, float, bool, type(None)))
"""The exact types JSON writes as they are: what :func:`_plain` hands back unchanged."""


_TUPLES: dict[type, bool] = {}
"""Per type met: is it a tuple the checks below would walk as a list (a NamedTuple; not a Mapping too)?"""


def _a_tuple(kind: type) -> bool:
    """Is ``kind`` a tuple subclass and nothing :func:`_plain` checks first (asked once a type: the
    abstract-class check of ``Mapping`` costs microseconds each time)?"""
    got = _TUPLES.get(kind)
    if got is None:
        if len(_TUPLES) > 1000:  # types made on the fly: start afresh
            _TUPLES.clear()
        got = _TUPLES[kind] = issubclass(kind, tuple) and not issubclass(kind, (BaseModel, Mapping))
    return got


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data: models dumped, mappings and sequences walked.

    The exact built-in types come first, by ``type()`` (what every call's arguments mostly are:
    a group of the gateway's items is tuples of text), before the ``isinstance`` checks against
    ``BaseModel`` and ``Mapping``, whose abstract-class machinery cost most of a digest; the
    answer is the same (a test holds it to the checks alone)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {str(k): _plain(v) for k, v in value.items()}
    if kind is list or kind is tuple or _a_tuple(kind):
        return [v if type(v) in _SCALARS else _plain(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def payload_digest(args: Any) -> str:
    """Hex SHA-256 of the canonical JSON of a call's arguments.

    ``args`` is anything JSON-like: a pydantic model, a mapping of argument
    names to values, a list, a scalar.  Non-finite floats are written as JSON's
    ``NaN``/``Infinity`` extensions, deterministically.  ``TypeError`` for a
    value that has no JSON form.
    """
    body = json.dumps(_plain(args), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(body.encode("ascii")).hexdigest()
