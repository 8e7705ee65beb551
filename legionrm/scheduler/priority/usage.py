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
from itertools import repeat
from operator import attrgetter

import numpy as np


def decay(value: float, dt: float, half_life_s: float) -> float:
    """``value`` after ``dt`` seconds of decay (``half_life_s`` 0: none)."""
    if half_life_s <= 0 or dt <= 0:
        return value
    return value * 2.0 ** (-dt / half_life_s)


def _decayed_terms(cpus: np.ndarray, start: np.ndarray, end: np.ndarray, now: float, half_life_s: float) -> np.ndarray:
    """:func:`decayed_cpu_seconds` of each stretch, ``end`` already capped at ``now``
    (bit for bit: ``math``'s exp and expm1 on each, numpy's arithmetic in the same order)."""
    out = np.zeros(len(end))
    live = np.flatnonzero(~(cpus <= 0) & ~(end <= start))  # (the others count 0, as there)
    cpus, start, end = cpus[live], start[live], end[live]
    if half_life_s <= 0:
        out[live] = cpus * (end - start)
        return out
    k = math.log(2.0) / half_life_s
    grow = np.ones(len(end))  # (exp(-k * 0.0) is 1.0 exactly: work running until now, most stretches here)
    past = np.flatnonzero(end != now)
    grow[past] = np.fromiter(map(math.exp, (-k * (now - end[past])).tolist()), np.float64, len(past))
    part = np.fromiter(map(math.expm1, (-k * (end - start)).tolist()), np.float64, len(end))
    out[live] = cpus * grow * -part / k
    return out


def _terms_until_now(cpus: np.ndarray, start: np.ndarray, now: float, half_life_s: float) -> np.ndarray:
    """:func:`_decayed_terms` of stretches that run until ``now`` (bit for bit: there, each one's
    factor for the time since it ended is exp(0) = 1, which changes nothing it multiplies)."""
    if not (~(cpus <= 0) & ~(now <= start)).all():  # (one that counts 0: worked out as there)
        return _decayed_terms(cpus, start, np.full(len(start), now), now, half_life_s)
    if half_life_s <= 0:
        return cpus * (now - start)
    k = math.log(2.0) / half_life_s
    return cpus * -np.fromiter(map(math.expm1, (-k * (now - start)).tolist()), np.float64, len(start)) / k


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


_USER, _CPUS, _START, _END = (attrgetter(a) for a in ("user", "cpus", "start", "end"))


@dataclass(frozen=True, eq=False)
class Stretches:
    """Stretches of work as columns: distinct ones as rows (``users`` in the order they
    first appear, then each row's user as its index in ``users``, its cpus, start and
    end), and ``each`` stretch in order as its row (a row holds the same numbers, so
    its terms are worked out once and counted once per stretch); ``until_now`` when
    every stretch runs until now (each end is infinity: what runs)."""

    users: list[str]
    who: np.ndarray
    cpus: np.ndarray
    start: np.ndarray
    end: np.ndarray
    each: np.ndarray
    until_now: bool = False

    @classmethod
    def of(cls, uses: list[Use]) -> Stretches:
        """``uses`` as columns, a row each."""
        users = list(dict.fromkeys(map(_USER, uses)))
        n = len(uses)
        number = {u: i for i, u in enumerate(users)}
        return cls(users, np.fromiter(map(number.__getitem__, map(_USER, uses)), np.int64, n),
                   np.fromiter(map(_CPUS, uses), np.float64, n), np.fromiter(map(_START, uses), np.float64, n),
                   np.fromiter(map(_END, uses), np.float64, n), np.arange(n))


class UsageLedger:
    """Every user's usage of finished work, aged as time goes (see the module).  Not thread-safe."""

    def __init__(self, half_life_s: float) -> None:
        self.half_life_s = half_life_s
        self._at: float | None = None
        self._raw: dict[str, float] = {}
        self._decayed: dict[str, float] = {}
        # what _sums read of the last running columns while the users with finished work stay the same:
        # (those columns, how many such users, the users in order, each stretch's user's place there)
        self._read: tuple[Stretches, int, list[str], np.ndarray] | None = None

    def add(self, uses: Iterable[Use], now: float) -> None:
        """Count finished work (each stretch once: the caller reads each record once)."""
        self._age(now)
        for u in uses:
            self._raw[u.user] = self._raw.get(u.user, 0.0) + u.cpus * max(0.0, u.end - u.start)
            self._decayed[u.user] = self._decayed.get(u.user, 0.0) + decayed_cpu_seconds(
                u.cpus, u.start, u.end, now, self.half_life_s)

    def usage(self, now: float, running: Iterable[Use] | Stretches = ()) -> dict[str, Usage]:
        """Each user's usage at ``now``: finished work, plus ``running`` work up to ``now``
        (stretches, or the same as :class:`Stretches` columns).

        As numpy columns (a pass reads every running instance), the same numbers
        as adding the stretches one by one in their order: each stretch's terms as
        :func:`decayed_cpu_seconds` works them out (``math``'s exp and expm1, the
        same operations in the same order), summed into its user's total in order
        (``np.add.at`` adds unbuffered, one index after another)."""
        users, raw, dec = self._sums(now, running, True)
        assert raw is not None
        return {u: Usage(r, d) for u, r, d in zip(users, raw.tolist(), dec.tolist())}

    def decayed(self, now: float, running: Stretches) -> dict[str, float]:
        """Each user's decayed usage at ``now``, as :meth:`usage` gives it (the same figures, users in the
        same order), without the raw usage (the fair-share factors read only this)."""
        users, _, dec = self._sums(now, running, False)
        return dict(zip(users, dec.tolist()))

    def _sums(self, now: float, running: Iterable[Use] | Stretches, raw_too: bool
              ) -> tuple[list[str], np.ndarray | None, np.ndarray]:
        """:meth:`usage`'s users and their raw (when ``raw_too``) and decayed sums, as columns."""
        self._age(now)
        if not isinstance(running, Stretches):
            running = Stretches.of(running if isinstance(running, list) else list(running))
        read = self._read  # (users are only ever added to _raw: the same count, the same users)
        if read is None or read[0] is not running or read[1] != len(self._raw):
            users = list(self._raw)  # the finished users first, then the running ones as they first appear
            users += [u for u in running.users if u not in self._raw]
            number = np.fromiter(map({u: i for i, u in enumerate(users)}.__getitem__, running.users), np.int64,
                                 len(running.users))
            read = self._read = (running, len(self._raw), users, number[running.who][running.each])
        _, _, users, who = read
        raw = np.fromiter(map(self._raw.get, users, repeat(0.0)), np.float64, len(users)) if raw_too else None
        dec = np.fromiter(map(self._decayed.get, users, repeat(0.0)), np.float64, len(users))
        if len(running.each):
            each, cpus, start = running.each, running.cpus, running.start
            end = np.minimum(running.end, now) if raw is not None or not running.until_now else None
            if raw is not None:
                ran = end - start
                np.add.at(raw, who, (cpus * np.where(ran > 0.0, ran, 0.0))[each])  # (max(0.0, ran), as Python's max)
            terms = (_terms_until_now(cpus, start, now, self.half_life_s) if end is None
                     else _decayed_terms(cpus, start, end, now, self.half_life_s))
            np.add.at(dec, who, terms[each])
        return users, raw, dec

    def _age(self, now: float) -> None:
        if self._at is not None and now > self._at:
            self._decayed = {u: decay(v, now - self._at, self.half_life_s) for u, v in self._decayed.items()}
        if self._at is None or now > self._at:
            self._at = now
