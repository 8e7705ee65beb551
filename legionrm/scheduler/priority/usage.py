"""Fair-share usage that remembers: cpu-seconds, decayed with a half-life.

A finished instance that held ``c`` cpus from ``start`` to ``end`` has used
``c * (end - start)`` cpu-seconds (its *raw* usage).  Its *decayed* usage at
``now`` counts each second it ran by ``2^(-(now - t) / H)``, ``H`` being
``[fairshare] half_life_s``::

    decayed = c * H / ln 2 * (2^(-(now - end) / H) - 2^(-(now - start) / H))

so a day's work a half-life ago counts half as much as the same work today.
Running work counts the same way, up to ``now``.  ``H = 0`` means no decay:
usage is never forgotten.

:class:`UsageLedger` keeps every user's sums from the records of finished
work, read once each (it ages what it holds instead of re-reading the
records).  Pure: no Ray.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


def decay(value: float, dt: float, half_life_s: float) -> float:
    """``value`` after ``dt`` seconds of decay (``half_life_s`` 0: none)."""
    if half_life_s <= 0 or dt <= 0:
        return value
    return value * 2.0 ** (-dt / half_life_s)


def decayed_cpu_seconds(cpus: float, start: float, end: float, now: float, half_life_s: float) -> float:
    """The decayed cpu-seconds at ``now`` of ``cpus`` held from ``start`` to
    ``end`` (the part after ``now`` is not counted; see the module)."""
    end = min(end, now)
    if cpus <= 0 or end <= start:
        return 0.0
    if half_life_s <= 0:
        return cpus * (end - start)
    k = math.log(2.0) / half_life_s
    # 2^(-(now-end)/H) * (1 - 2^(-(end-start)/H)) / k, with expm1: exact for short stretches too
    return cpus * math.exp(-k * (now - end)) * -math.expm1(-k * (end - start)) / k


@dataclass(frozen=True)
class Use:
    """One stretch of work: ``cpus`` held by ``user`` from ``start`` to ``end``."""

    user: str
    cpus: float
    start: float
    end: float


@dataclass(frozen=True)
class Usage:
    """One user's usage: raw cpu-seconds and decayed cpu-seconds."""

    raw: float = 0.0
    decayed: float = 0.0


class UsageLedger:
    """Every user's usage of finished work, aged as time goes (see the module).  Not thread-safe."""

    def __init__(self, half_life_s: float) -> None:
        self.half_life_s = half_life_s
        self._at: float | None = None
        self._raw: dict[str, float] = {}
        self._decayed: dict[str, float] = {}

    def add(self, uses: Iterable[Use], now: float) -> None:
        """Count finished work (each stretch once: the caller reads each record once)."""
        self._age(now)
        for u in uses:
            self._raw[u.user] = self._raw.get(u.user, 0.0) + u.cpus * max(0.0, u.end - u.start)
            self._decayed[u.user] = self._decayed.get(u.user, 0.0) + decayed_cpu_seconds(
                u.cpus, u.start, u.end, now, self.half_life_s)

    def usage(self, now: float, running: Iterable[Use] = ()) -> dict[str, Usage]:
        """Each user's usage at ``now``: finished work, plus ``running`` work up to ``now``."""
        self._age(now)
        raw, dec = dict(self._raw), dict(self._decayed)
        terms: dict[tuple[float, float, float], float] = {}  # each stretch's decayed cpu-seconds, worked out once
        for u in running:
            raw[u.user] = raw.get(u.user, 0.0) + u.cpus * max(0.0, min(u.end, now) - u.start)
            key = (u.cpus, u.start, u.end)
            term = terms.get(key)
            if term is None:
                term = terms[key] = decayed_cpu_seconds(u.cpus, u.start, u.end, now, self.half_life_s)
            dec[u.user] = dec.get(u.user, 0.0) + term
        return {user: Usage(raw[user], dec.get(user, 0.0)) for user in raw}

    def _age(self, now: float) -> None:
        if self._at is not None and now > self._at:
            self._decayed = {u: decay(v, now - self._at, self.half_life_s) for u, v in self._decayed.items()}
        if self._at is None or now > self._at:
            self._at = now
