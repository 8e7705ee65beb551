"""A resource's calendar as it travels in its heartbeat.

A host publishes its usage from now on as a step function (times, and the
usage per dimension from each time to the next; see
:meth:`legionrm.hostobj.calendar.Calendar.steps`) in the attribute
``calendar`` (compact JSON text), and how many steps it has in the numeric
attribute ``calendar_steps`` (so a planner finds the hosts that have one with
one column read).  Only a resource whose usage changes after now publishes
one: without it, usage now lasts for ever.  Pure; no Ray.  The host objects
write it and the planner (:mod:`legionrm.scheduler.planning.window`) reads
it, so it sits below both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from legionrm.models import AttrValue

CALENDAR = "calendar"
CALENDAR_STEPS = "calendar_steps"
MAX_STEPS = 64
"""The most steps a heartbeat carries (past them the resource shows full)."""


@dataclass(frozen=True)
class Steps:
    """Usage over time: ``usage[i]`` holds over ``[times[i], times[i+1])``, the last for ever."""

    dims: tuple[str, ...]
    times: np.ndarray
    usage: np.ndarray  # steps x dims

    def peak(self, start: float, end: float) -> dict[str, float]:
        """The most used of each dimension at any time in ``[start, end)``."""
        t = self.times
        # the step covering ``start`` and every step beginning inside the window
        first = max(int(np.searchsorted(t, start, side="right")) - 1, 0)
        last = int(np.searchsorted(t, end, side="left"))
        rows = self.usage[first:max(last, first + 1)]
        return dict(zip(self.dims, rows.max(axis=0).tolist()))


def encode(dims: tuple[str, ...], times: np.ndarray, usage: np.ndarray) -> dict[str, AttrValue]:
    """The heartbeat attributes for these steps (none when there is only one:
    usage does not change after now)."""
    if len(times) <= 1:
        return {}
    body = {"dims": list(dims), "t": [round(float(x), 3) for x in times],
            "u": [[round(float(v), 6) for v in row] for row in usage]}
    return {CALENDAR: json.dumps(body, separators=(",", ":")), CALENDAR_STEPS: len(times)}


class Publisher:
    """One resource's calendar attributes, encoded again only when its steps
    changed (:meth:`~legionrm.hostobj.calendar.Calendar.steps` gives the same
    arrays back while they hold)."""

    def __init__(self) -> None:
        self._last: tuple[np.ndarray, dict[str, AttrValue]] | None = None

    def attrs(self, dims: tuple[str, ...], times: np.ndarray, usage: np.ndarray) -> dict[str, AttrValue]:
        if self._last is None or self._last[0] is not times:
            self._last = (times, encode(dims, times, usage))
        return self._last[1]


def decode(text: AttrValue | None) -> Steps | None:
    """The steps in a ``calendar`` attribute, or None when absent or malformed
    (a planner then treats the resource as holding what it holds now)."""
    if not isinstance(text, str):
        return None
    try:
        body = json.loads(text)
        dims = tuple(str(d) for d in body["dims"])
        times = np.asarray(body["t"], dtype=float)
        usage = np.asarray(body["u"], dtype=float).reshape(len(times), len(dims))
    except (ValueError, KeyError, TypeError):
        return None
    if len(times) == 0 or len(times) > MAX_STEPS or not np.all(np.diff(times) > 0) or not np.isfinite(usage).all():
        return None
    return Steps(dims, times, usage)


DEGRADED = "degraded"
"""The attribute a resource whose state file cannot be written carries (the
fault, one line): it still answers and beats, but grants nothing new."""
OWNER_MARK = "owner_mark"
"""The attribute that changes when what may refuse on a host for good changes (its owner's class or
policy, or an administrator's resume): a lasting refusal met under another mark is asked again."""
WITHDRAWN = ("next_event", CALENDAR, CALENDAR_STEPS, DEGRADED)
"""Attributes a resource publishes only while they hold (a booking ahead, a
calendar that changes after now, a failing state file): a heartbeat without one withdraws it."""


def beat(attrs: Mapping[str, AttrValue]) -> dict[str, AttrValue | None]:
    """A heartbeat's update: ``attrs``, withdrawing (None) each of
    :data:`WITHDRAWN` they no longer carry, so the Collection never keeps a
    booking that was cancelled or has started."""
    return {**dict.fromkeys(WITHDRAWN), **attrs}
