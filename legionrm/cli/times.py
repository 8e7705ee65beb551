"""Times as ``history --since`` / ``--until`` take them, and the end states
``history --state`` offers: light (the parser imports this module; no Ray)."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import time

END_STATES = ("completed", "failed", "cancelled", "preempted", "timed_out", "node_lost")
"""The ends an instance's run may have (:data:`legionrm.models.WorkEnd`; a test holds them equal)."""

_AGO = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def when(text: str) -> float:
    """Seconds since the epoch, from: seconds since the epoch, an ISO date or
    time (local), or an age (``30m``, ``2h``, ``7d`` ago).  A bad one is an
    ``argparse.ArgumentTypeError`` saying what is accepted."""
    if m := _AGO.fullmatch(text.strip()):
        return time.time() - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time: give seconds since the epoch, an ISO date or "
                                         "time (2026-01-31, 2026-01-31T09:00) or an age (30m, 2h, 7d)") from None
