"""A reservation calendar: bookings of a capacity vector over time.

A booking holds an amount (one number per dimension: cpus, memory, gpus ... or
storage for a vault) over the half-open interval ``[start, end)``; ``end`` is
``math.inf`` for an open-ended booking.  Usage at a time is the sum of the
bookings covering it, and it only rises at booking starts, so the peak over a
window is the maximum over the window's start and the booking starts inside it.
The work is numpy over the bookings (a cached matrix), never a loop over time;
the check of a booking on a calendar of a few bookings (the usual host) is
plain Python over them, which is cheaper than numpy on 3-element vectors and
gives the same answers (``tests/unit/hostobj/test_calendar.py`` compares the two).

The calendar is the base check of every resource object: :meth:`add` refuses
to overbook, so no owner hook or caller bug can push usage past capacity.

State names follow OpenPBS node bucketing: ``free`` (fits now, no future
reservation starts), ``busy_later`` (fits now, but a reservation starts later:
a job fits only if it ends before that), ``busy`` (does not fit now).
"""

from __future__ import annotations

import math
from operator import add as _add, gt as _gt
from typing import Literal, NamedTuple, Sequence

import numpy as np

State = Literal["free", "busy_later", "busy"]
FREE: State = "free"
BUSY_LATER: State = "busy_later"
BUSY: State = "busy"

Check = Literal["ok", "total", "capacity", "calendar"]

_EPS = 1e-9  # float slack so 0.1+0.2 cpus still fits 0.3
_ZERO_LE = (0.0).__le__  # x >= 0 (False for a NaN)
_FLOAT = frozenset({float})


_UNCHECKED = ("", -1, None)
"""What :meth:`Calendar.add` gives :meth:`Calendar.add_checked`: no fit found before (it is asked)."""

_READ: tuple[object, tuple[float, ...]] = ((), ())
"""The last tuple of floats a calendar's :meth:`Calendar._vals` read, and its floats (valid
non-negative numbers: the same answer for any calendar of as many dimensions)."""

SMALL = 8
"""Up to this many bookings, :meth:`Calendar.check` sums in plain Python (no matrix built)."""


class Booking(NamedTuple):
    """One booking (a named tuple: immutable, and cheap to make at every grant)."""

    key: str
    vals: tuple[float, ...]  # the amount, one number per dimension
    start: float
    end: float  # math.inf when open-ended

    @property
    def amount(self) -> np.ndarray:
        return np.array(self.vals, dtype=float)


class Calendar:
    """Bookings on one resource.  Not thread-safe: its owner holds the lock."""

    def __init__(self, capacity: Sequence[float] | np.ndarray, dims: Sequence[str] | None = None) -> None:
        self.capacity = np.asarray(capacity, dtype=float).copy()
        if self.capacity.ndim != 1 or (self.capacity < 0).any():
            raise ValueError(f"capacity must be a non-negative vector, not {capacity!r}")
        self.capacity.flags.writeable = False  # (a new capacity is a new array: the bounds below follow it)
        self._bound: tuple[np.ndarray, list[float]] | None = None
        self.dims = tuple(dims) if dims is not None else tuple(f"d{i}" for i in range(len(self.capacity)))
        if len(self.dims) != len(self.capacity):
            raise ValueError("dims and capacity differ in length")
        self._bookings: dict[str, Booking] = {}
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._steps: tuple[int, tuple[np.ndarray, np.ndarray]] | None = None  # (limit, steps) while bookings stay
        self._version = 0  # bumped by every change of the bookings
        self._at: tuple[object, float, np.ndarray] | None = None  # the last usage_at, with the arrays it read

    # --- bookings --------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._bookings)

    def __contains__(self, key: str) -> bool:
        return key in self._bookings

    def bookings(self) -> list[Booking]:
        """All bookings, by start then key (stable order)."""
        return sorted(self._bookings.values(), key=lambda b: (b.start, b.key))

    def get(self, key: str) -> Booking | None:
        return self._bookings.get(key)

    def add(self, key: str, amount: Sequence[float] | np.ndarray, start: float, end: float | None = None) -> None:
        """Book ``amount`` over ``[start, end)``.

        Raises ValueError for a duplicate key, a NaN or negative amount, a NaN
        or empty interval, or a booking
        that would push usage past capacity at any time (the overbooking guard:
        callers :meth:`check` first and only ever add what fits).
        """
        self.add_checked(key, amount, start, end, _UNCHECKED)

    def checked(self, amount: Sequence[float] | np.ndarray, start: float, end: float | None) -> tuple[Check, int, np.ndarray]:
        """:meth:`check`, with the version of the bookings and the capacity it read: :meth:`add_checked`
        of that answer books without asking again while nothing changed the calendar meanwhile."""
        return self._check(self._vals(amount), start, end), self._version, self.capacity

    def add_checked(self, key: str, amount: Sequence[float] | np.ndarray, start: float, end: float | None,
                    checked: tuple[Check, int, np.ndarray]) -> None:
        """:meth:`add`, for the amount and window that :meth:`checked` was asked about (its answer
        ``checked``): a fit is not computed again while neither the bookings nor the capacity
        changed since (the version and the capacity it read), else it is asked again, as
        :meth:`add` asks.  The same bookings and errors as :meth:`add`."""
        vals = self._vals(amount)
        fit_at = checked[1] if checked[0] == "ok" and checked[2] is self.capacity else None
        stop = math.inf if end is None else float(end)
        if key in self._bookings:
            raise ValueError(f"booking {key!r} exists")
        if math.isnan(start) or math.isnan(stop):
            raise ValueError(f"booking {key!r}: start {start} and end {stop} must be times")
        if not stop > start:
            raise ValueError(f"booking {key!r}: end {stop} must be after start {start}")
        if fit_at != self._version and self._check(vals, start, stop) != "ok":  # (found to fit on these bookings: it fits)
            raise ValueError(f"booking {key!r} would overbook {dict(zip(self.dims, vals))} at {start}")
        self._bookings[key] = Booking(key, vals, float(start), stop)
        self._changed()

    def remove(self, key: str) -> bool:
        """Drop a booking; False if there was none (idempotent)."""
        if self._bookings.pop(key, None) is None:
            return False
        self._changed()
        return True

    def set_end(self, key: str, end: float | None) -> None:
        """Shorten (or, when it still fits, lengthen) a booking's end."""
        b = self._bookings[key]
        stop = math.inf if end is None else float(end)
        if stop <= b.start:
            self.remove(key)
            return
        if stop > b.end:
            self.remove(key)
            try:
                self.add(key, b.vals, b.start, stop)
            except ValueError:
                self._bookings[key] = b  # put it back as it was
                self._changed()
                raise
            return
        self._bookings[key] = Booking(key, b.vals, b.start, stop)
        self._changed()

    def prune(self, now: float) -> list[str]:
        """Remove bookings that ended at or before ``now``; returns their keys."""
        gone = [k for k, b in self._bookings.items() if b.end <= now]
        for k in gone:
            del self._bookings[k]
        if gone:
            self._changed()
        return gone

    # --- questions ---------------------------------------------------------------------

    def usage_at(self, t: float) -> np.ndarray:
        """Summed amount of the bookings covering time ``t``."""
        starts, ends, amounts = self._arrays()
        if self._at is not None and self._at[0] is self._cache and self._at[1] == t:  # a heartbeat asks 3 times
            return self._at[2].copy()
        live = (starts <= t) & (t < ends)
        usage = live.astype(float) @ amounts
        self._at = (self._cache, t, usage.copy())
        return usage

    def free_at(self, t: float) -> np.ndarray:
        return self.capacity - self.usage_at(t)

    def peak(self, start: float, end: float | None) -> np.ndarray:
        """Per-dimension maximum usage over ``[start, end)``."""
        if not self._bookings:
            return np.zeros_like(self.capacity)
        return self._usage_points(start, end).max(axis=0)

    def _usage_points(self, start: float, end: float | None) -> np.ndarray:
        """Usage at ``start`` (row 0) and at every booking start inside the
        window (usage only rises at a start, so these rows hold the peak)."""
        stop = math.inf if end is None else float(end)
        starts, ends, amounts = self._arrays()
        inside = starts[(starts > start) & (starts < stop)]
        points = np.concatenate(([float(start)], inside))
        live = (starts[None, :] <= points[:, None]) & (points[:, None] < ends[None, :])
        return live.astype(float) @ amounts  # points x dims

    def check(self, amount: Sequence[float] | np.ndarray, start: float, end: float | None) -> Check:
        """Would ``amount`` fit over ``[start, end)``?

        ``"total"``: more than the capacity at all; ``"capacity"``: not free at
        ``start``; ``"calendar"``: free at ``start`` but a later booking in the
        window collides; ``"ok"``: it fits.
        """
        return self._check(self._vals(amount), start, end)

    def _check(self, vals: tuple[float, ...], start: float, end: float | None) -> Check:
        """:meth:`check` of an amount :meth:`_vals` read already."""
        bound = self._bound
        if bound is None or bound[0] is not self.capacity:  # (the capacity with its slack, per capacity array)
            cap = [c + _EPS for c in self.capacity.tolist()]
            bound = self._bound = (self.capacity, cap)
        cap = bound[1]
        if any(map(float.__gt__, vals, cap)):
            return "total"
        if not self._bookings:  # the common case on an idle host: nothing to collide with
            return "ok"
        stop = math.inf if end is None else float(end)
        return self._check_small(vals, cap, start, stop) if len(self._bookings) <= SMALL else self._check_big(vals, cap, start, stop)

    def _check_big(self, vals: tuple[float, ...], cap: list[float], start: float, stop: float) -> Check:
        """The check as numpy over the bookings' matrix (many bookings)."""
        bound = np.array(cap)
        usage = self._usage_points(start, stop) + np.array(vals)
        if (usage[0] > bound).any():
            return "capacity"
        if (usage > bound).any():
            return "calendar"
        return "ok"

    def _check_small(self, vals: tuple[float, ...], cap: list[float], start: float, stop: float) -> Check:
        """The check in plain Python over a few bookings, as :meth:`_check_big`
        reads them: the usage (the covering bookings summed, then the amount)
        at ``start``, then at each booking start inside the window."""
        bookings = self._bookings.values()
        later = [b.start for b in bookings if start < b.start < stop]
        at, answer = float(start), "capacity"  # (a Check, not an error code)
        while True:
            use = None  # (0.0 plus the first covering amount is that amount: the same sums as numpy's)
            for b in bookings:
                if b.start <= at < b.end:
                    use = b.vals if use is None else tuple(map(_add, use, b.vals))
            if any(map(_gt, vals if use is None else map(_add, use, vals), cap)):
                return answer  # type: ignore[return-value]
            if not later:
                return "ok"
            at, answer = later.pop(), "calendar"

    def fits(self, amount: Sequence[float] | np.ndarray, start: float, end: float | None) -> bool:
        return self.check(amount, start, end) == "ok"

    def next_event_time(self, now: float) -> float | None:
        """The earliest booking start strictly after ``now`` (a PBS "run event"),
        or None.  A job of duration d fits before it when ``now + d <= t``."""
        starts, _, _ = self._arrays()
        later = starts[starts > now]
        return float(later.min()) if len(later) else None

    def state(
        self, now: float, amount: Sequence[float] | np.ndarray | None = None, walltime: float | None = None
    ) -> State:
        """``free`` / ``busy_later`` / ``busy`` at ``now``.

        Without ``amount`` the whole resource is asked about (as PBS asks about a
        node): busy when anything is booked now.  With ``amount``: busy when the
        amount does not fit now.  Either way ``busy_later`` means free now with a
        reservation starting later (:meth:`next_event_time`).  With ``amount``
        and ``walltime`` the answer is for that job: a resource where it fits now
        but collides with a later reservation before ``now + walltime`` is busy
        for it (PBS's busy-later time test, made per dimension).
        """
        if amount is None:
            busy = bool((self.usage_at(now) > _EPS).any())
        else:
            vec = self._vec(amount)
            busy = bool((self.usage_at(now) + vec > self.capacity + _EPS).any())
            if not busy and walltime is not None:
                busy = self.check(vec, now, now + walltime) != "ok"
        if busy:
            return BUSY
        return BUSY_LATER if self.next_event_time(now) is not None else FREE

    def earliest_fit(
        self, amount: Sequence[float] | np.ndarray, duration: float | None, after: float
    ) -> float | None:
        """The earliest time ``t >= after`` when ``amount`` fits over
        ``[t, t + duration)`` (open-ended when ``duration`` is None); None when
        it never fits (more than capacity, or an open-ended booking in the way).

        Free room only grows at booking ends, so the candidates are ``after``
        and the booking ends after it, tried in time order.
        """
        vec = self._vec(amount)
        if (vec > self.capacity + _EPS).any():
            return None
        _, ends, _ = self._arrays()
        cands = np.unique(np.concatenate(([float(after)], ends[(ends > after) & np.isfinite(ends)])))
        for t in cands:  # few candidates per resource; each check is vectorised
            stop = None if duration is None else float(t) + duration
            if self.check(vec, float(t), stop) == "ok":
                return float(t)
        return None

    def steps(self, now: float, limit: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Usage from ``now`` on as a step function: times ``t[0] <= now < t[1]
        < ...`` and the usage (rows, one column per dimension) from each time
        to the next (the last row lasts for ever).  Only times where usage
        changes are kept.  Past ``limit`` steps the last kept step is the
        whole capacity (a planner reading it sees no room rather than room that
        is not there).  The same arrays come back while no booking changed and
        ``now`` has not reached ``t[1]`` (a heartbeat re-sends what it sent)."""
        if self._steps is not None and self._steps[0] == limit:
            times, usage = self._steps[1]
            if times[0] <= now and (len(times) == 1 or now < times[1]):
                return times, usage
        if not self._bookings:
            out = (np.array([float(now)]), np.zeros((1, len(self.capacity))))
            self._steps = (limit, out)
            return out
        starts, ends, amounts = self._arrays()
        later = np.concatenate((starts[starts > now], ends[(ends > now) & np.isfinite(ends)]))
        points = np.unique(np.concatenate(([float(now)], later)))
        live = (starts[None, :] <= points[:, None]) & (points[:, None] < ends[None, :])
        usage = live.astype(float) @ amounts
        change = np.ones(len(points), dtype=bool)
        change[1:] = (np.abs(np.diff(usage, axis=0)) > _EPS).any(axis=1)
        points, usage = points[change], usage[change]
        if len(points) > limit:
            points, usage = points[:limit], usage[:limit].copy()
            usage[-1] = self.capacity
        self._steps = (limit, (points, usage))
        return points, usage

    # --- internals ------------------------------------------------------------------

    def _changed(self) -> None:
        self._cache = self._steps = None
        self._version += 1

    def _vals(self, amount: Sequence[float] | np.ndarray) -> tuple[float, ...]:
        """``amount`` as a tuple of floats, one a dimension, each non-negative; else ValueError.
        The floats of the last tuple of floats read, by any calendar, are kept with it (a grant
        checks, then adds, one amount; a batch's hosts are asked for one amount)."""
        global _READ
        last = _READ
        if last[0] is amount and len(last[1]) == len(self.capacity):
            return last[1]
        try:  # (a nested amount has lists for numbers)
            vals = tuple(map(float, amount.tolist() if isinstance(amount, np.ndarray) else amount))
        except TypeError:
            vals = ()
        if len(vals) != len(self.capacity):
            raise ValueError(f"amount {amount!r} does not match dims {self.dims}")
        if not all(map(_ZERO_LE, vals)):  # a NaN (compares false) or a negative amount (makes room) would overbook
            raise ValueError(f"amount {amount!r} must be non-negative numbers")
        if type(amount) is tuple and set(map(type, amount)) <= _FLOAT:
            _READ = (amount, vals)  # (a tuple of floats never changes: held here, its id is never reused)
        return vals

    def _vec(self, amount: Sequence[float] | np.ndarray) -> np.ndarray:
        """:meth:`_vals` as a vector (for the numpy questions)."""
        return np.array(self._vals(amount), dtype=float)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._cache is None:
            bs = list(self._bookings.values())
            d = len(self.capacity)
            self._cache = (
                np.array([b.start for b in bs], dtype=float),
                np.array([b.end for b in bs], dtype=float),
                np.array([b.vals for b in bs], dtype=float).reshape(len(bs), d),
            )
        return self._cache

