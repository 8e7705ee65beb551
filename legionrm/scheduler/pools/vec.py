"""Resource vectors for resource pools: four kinds, Peloton's arithmetic.

A resource vector is a numpy array of four floats in the order of
:data:`KINDS` (cpu, memory, disk, gpu).  Several vectors stack into a
``(n, 4)`` matrix, so a parent's children are handled in one operation.

The arithmetic follows Peloton's ``scalar`` package because admission and
entitlement results depend on it:

* subtraction floors at 0, and a difference below :data:`EPS` is 0;
* ``a <= b`` holds per kind when ``a < b`` or ``|a - b| < EPS``;
* equality is exact.

:func:`go_num` prints a float the way Go's ``%v`` does, so that error
messages read like the upstream ones (``101``, ``0.5``, ``1e+06``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Iterable, Mapping

import numpy as np
import numpy.typing as npt

KINDS: tuple[str, ...] = ("cpu", "memory", "disk", "gpu")
"""The four resource kinds, in vector order."""

KIND_INDEX: dict[str, int] = {k: i for i, k in enumerate(KINDS)}

EPS: float = 0.0009
"""Peloton's ``ResourceEpsilon``: differences below this count as zero."""

Vec = npt.NDArray[np.float64]


def zeros(*lead: int) -> Vec:
    """A zero vector (or a stack of ``lead`` zero vectors)."""
    return np.zeros((*lead, len(KINDS)), dtype=np.float64)


def vec(values: Mapping[str, float] | Iterable[float] | None = None) -> Vec:
    """A vector from a ``{kind: value}`` mapping (missing kinds are 0) or a sequence of four."""
    if values is None:
        return zeros()
    if isinstance(values, Mapping):
        out = zeros()
        for kind, value in values.items():
            out[KIND_INDEX[kind]] = float(value)
        return out
    arr = np.asarray(list(values), dtype=np.float64)
    if arr.shape != (len(KINDS),):
        raise ValueError(f"a resource vector has {len(KINDS)} values, got {arr.shape}")
    return arr


def as_dict(v: Vec) -> dict[str, float]:
    """``{kind: value}`` with plain floats (JSON-ready)."""
    return {k: float(v[i]) for i, k in enumerate(KINDS)}


def sub_floor(a: Vec, b: Vec) -> Vec:
    """``a - b`` kind by kind; negative or below-EPS differences are 0 (works on stacks too)."""
    d = np.asarray(a, dtype=np.float64) - b
    return np.where(d < EPS, 0.0, d)


def le(a: Vec, b: Vec) -> bool:
    """Peloton's ``LessThanOrEqual``: every kind has ``a < b`` or ``|a - b| < EPS``."""
    return bool(np.all(np.asarray(a) - b < EPS))


def exceeds(a: Vec, b: Vec) -> npt.NDArray[np.bool_]:
    """Row-wise negation of :func:`le` over stacks: True where some kind is over by ``EPS`` or more."""
    return np.any(np.asarray(a) - b >= EPS, axis=-1)


def is_zero(v: Vec) -> bool:
    """True when every kind is exactly 0."""
    return bool(np.all(np.asarray(v) == 0.0))


def go_num(value: float) -> str:
    """Format a float like Go's ``%v`` (``strconv.FormatFloat(v, 'g', -1, 64)``).

    Shortest round-trip digits; the exponent form when the decimal exponent
    is below -4 or at least 6 (``1e+06``, ``1.5e-05``), else plain decimals
    without a trailing ``.0``.
    """
    v = float(value)
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0.0:
        return "-0" if str(v).startswith("-") else "0"
    sign, digits, exp = Decimal(repr(v)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    nd = len(ds)
    dp = nd + int(exp)  # position of the decimal point relative to the digit string
    x = dp - 1  # decimal exponent of the first digit
    head = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        return f"{head}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if dp <= 0:
        return f"{head}0.{'0' * -dp}{ds}"
    if dp >= nd:
        return f"{head}{ds}{'0' * (dp - nd)}"
    return f"{head}{ds[:dp]}.{ds[dp:]}"
