"""Who may preempt whom, and which victims: DUCC's rules on the negotiated path.

DUCC (the RM's user guide and internals; ``notes/ducc-rm-algorithm.md``
sections 6 and 9): work in a non-preemptable class (FIXED_SHARE, RESERVE)
takes its share from FAIR_SHARE work, never from other non-preemptable work;
a FAIR_SHARE job sheds its least valuable processes first, the youngest
(least invested) first.  Here the QoS tables carry the classes' part:

* **who**: :func:`may_preempt`: a victim's QoS must be ``preemptable``; its
  preemptor's QoS must be non-preemptable, or have a strictly higher QoS
  ``priority``.  A non-preemptable request is never a victim.
* **whether**: never when the preemptor fits in the cpus free now within the
  holds of the reserved starts (:func:`choose`: free capacity first).
* **which**: :func:`victim_order`: the lowest QoS priority first, then the
  user furthest over their fair share (the lowest fair-share factor), then
  the youngest (DUCC's investment order: least time invested), then the id.
  Victims are taken in that order until the preemptor fits; then any victim
  the fit does not need is given back (the latest taken tried first), so no
  more is preempted than the fit needs.

Only cpus are counted, as the backfill's profile counts them.  Pure: numpy,
no Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from legionrm.scheduler.backfill.profile import Demand, place


@dataclass(frozen=True)
class Rank:
    """What the rules read of a request's QoS."""

    qos: str
    priority: int = 0
    preemptable: bool = False


@dataclass(frozen=True)
class Victim:
    """A running request that could be preempted: its QoS, its user's
    fair-share factor, when it started, and the cpus it holds per host
    (positions in the profile)."""

    id: str
    user: str
    rank: Rank
    factor: float
    started: float
    hosts: tuple[int, ...]
    cpus: tuple[float, ...]


def may_preempt(preemptor: Rank, victim: Rank) -> bool:
    """May work of ``preemptor``'s QoS preempt work of ``victim``'s (see the module)?"""
    return victim.preemptable and (not preemptor.preemptable or preemptor.priority > victim.priority)


def why(preemptor: Rank, victim: Rank) -> str:
    """The rule that let ``preemptor`` preempt ``victim``, in words (for ``show``)."""
    if not preemptor.preemptable:
        return f"QoS {preemptor.qos} is not preemptable and QoS {victim.qos} is"
    return f"QoS {preemptor.qos} (priority {preemptor.priority}) is above preemptable QoS {victim.qos} " \
           f"(priority {victim.priority})"


def victim_order(victims: Sequence[Victim]) -> list[Victim]:
    """``victims`` in the order they are taken (see the module)."""
    return sorted(victims, key=lambda v: (v.rank.priority, v.factor, -v.started, v.id))


Fits = Callable[[np.ndarray], "np.ndarray | None"]
"""Given the cpus free per host, the cpus the preemptor would take per host (None: it does not fit)."""


def fits_in(demand: Demand) -> Fits:
    """The plain fit of ``demand`` (whole instances, the largest first)."""
    return lambda free: place(free, demand)


def choose(free: np.ndarray, fits: Fits, preemptor: Rank, running: Sequence[Victim]
           ) -> tuple[list[Victim], np.ndarray] | None:
    """The victims ``preemptor`` needs and the cpus it then takes per host:
    ``([], take)`` when ``free`` suffices (no one is preempted), None when
    even every victim its QoS may preempt would not make room."""
    take = fits(free)
    if take is not None:
        return [], take
    chosen: list[Victim] = []
    left = np.array(free, dtype=float)
    for v in victim_order([v for v in running if may_preempt(preemptor, v.rank)]):
        chosen.append(v)
        _give(left, v, 1.0)
        take = fits(left)
        if take is not None:
            break
    else:
        return None
    for v in reversed(chosen[:-1]):  # give back whom the fit does not need
        _give(left, v, -1.0)
        if fits(left) is None:
            _give(left, v, 1.0)
        else:
            chosen.remove(v)
    take = fits(left)
    assert take is not None  # the last set tried fits
    return chosen, take


def _give(free: np.ndarray, v: Victim, sign: float) -> None:
    np.add.at(free, list(v.hosts), [sign * c for c in v.cpus])
