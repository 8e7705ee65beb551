"""The blocked requests' reservations kept from one pass to the next while
nothing they depend on changed.

A pass that starts nothing finds the reservation of its top blocked request
on the profile as it came from :class:`~.kept.ProfileKeeper`; the next pass
often sees the same profile (a submission came, nothing started or ended)
and the same blocked requests.  The answer is then the same, and
:class:`HoldsMemo` gives it back instead of searching again, when:

- the profile is the keeper's unchanged (the same :attr:`Profile.kept`
  token: the same hosts, cpus free now and events), at a time no earlier;
- the blocked requests are the same, with the same request objects;
- no event of the profile came between the two times, so the moments a
  shadow search tries are the same but the first (now), whose cpus are the
  same and whose window only grew (over a window the minimum can only
  fall: a moment that failed still fails);
- every reserved start is later than now: none was found at the first
  moment (which would be now again).

Pure; no Ray.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from legionrm.scheduler.backfill.profile import Profile
from legionrm.scheduler.backfill.top import Top
from legionrm.scheduler.planning.holds import Hold
from legionrm.scheduler.requests import Entry


@dataclass
class Reserved:
    """A blocked request's reserved start (None: no known end frees enough for it)."""

    entry: Entry
    start: float | None


Found = tuple[list[Hold], list[Reserved], Top | None]
"""What :meth:`Backfill._holds` finds: the holds, the reserved starts, the top one kept through starts."""


class HoldsMemo:
    """The last reservations found on an unchanged kept profile (see the module)."""

    def __init__(self) -> None:
        self._key: tuple[object, tuple[tuple[Entry, object], ...], bool] | None = None
        self._now = 0.0
        self._later = 0  # how many of the profile's events came after that time
        self._hint: tuple[str, tuple[float, float]] | None = None
        self._found: Found | None = None

    @staticmethod
    def _key_of(base: Profile, blocked: Sequence[Entry], hints: dict | None
                ) -> tuple[object, tuple[tuple[Entry, object], ...], bool]:
        return base.kept, tuple((e, e.request) for e in blocked), hints is not None

    def again(self, base: Profile, blocked: Sequence[Entry], hints: dict[str, tuple[float, float]] | None
              ) -> Found | None:
        """The reservations kept, if they are the answer on ``base`` now (with the pass's ``hints`` as the
        search left them); else None."""
        if base.kept is None or self._key is None or self._found is None:
            return None
        token, pairs, hinted = self._key
        if (token is not base.kept or hinted != (hints is not None) or len(pairs) != len(blocked)
                or any(e is not b or e.request is not r for (e, r), b in zip(pairs, blocked))):
            return None
        if base.now < self._now or len(base.later()[2]) != self._later:
            return None  # (an event came between: the moments differ)
        holds, reserved, top = self._found
        if any(r.start is not None and r.start <= base.now for r in reserved):
            return None
        if hints is not None and self._hint is not None:
            hints[self._hint[0]] = self._hint[1]
        return list(holds), list(reserved), None if top is None else replace(top, row=top.row.copy())

    def keep(self, base: Profile, blocked: Sequence[Entry], hints: dict[str, tuple[float, float]] | None,
             found: Found) -> None:
        """``found`` was worked out on ``base`` for ``blocked``: kept if ``base`` is the keeper's unchanged."""
        if base.kept is None:
            self._key = self._found = None
            return
        self._key = self._key_of(base, blocked, hints)
        self._now, self._later = base.now, len(base.later()[2])
        hint = hints.get(blocked[0].id) if hints is not None and blocked else None
        self._hint = None if hint is None else (blocked[0].id, hint)
        holds, reserved, top = found
        # (a pass changes the Top it is given as starts come: the one kept is a copy)
        self._found = list(holds), list(reserved), None if top is None else replace(top, row=top.row.copy())
