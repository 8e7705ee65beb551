"""What a replay is judged by: utilization, waits, bounded slowdown,
makespan and Jain's fairness index over users.  Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TAU_S = 10.0
"""The bounded slowdown's floor on run time (Feitelson's tau)."""


@dataclass(frozen=True)
class Outcome:
    """One job as it ran: when it was submitted, started and ended, on how many cpus, whose."""

    job: int
    submit: float
    start: float
    end: float
    procs: int
    user: str


def summary(policy: str, outcomes: Sequence[Outcome], cpus: float) -> dict[str, float | int | str]:
    """The ``simulate --swf --json`` document (see docs/backfill.md for each key)."""
    if not outcomes:
        return {"policy": policy, "jobs": 0, "utilization": 0.0, "wait_mean_s": 0.0, "wait_median_s": 0.0,
                "wait_p95_s": 0.0, "wait_max_s": 0.0, "bounded_slowdown_mean": 0.0, "makespan_s": 0.0,
                "jain_index": 1.0}
    submit = np.array([o.submit for o in outcomes])
    start = np.array([o.start for o in outcomes])
    end = np.array([o.end for o in outcomes])
    procs = np.array([o.procs for o in outcomes], dtype=float)
    wait = start - submit
    run = end - start
    makespan = float(end.max() - submit.min())
    slowdown = np.maximum((wait + run) / np.maximum(run, TAU_S), 1.0)
    return {
        "policy": policy,
        "jobs": len(outcomes),
        "utilization": round(float((run * procs).sum() / (cpus * makespan)) if makespan > 0 else 0.0, 4),
        "wait_mean_s": round(float(wait.mean()), 1),
        "wait_median_s": round(float(np.median(wait)), 1),
        "wait_p95_s": round(float(np.percentile(wait, 95)), 1),
        "wait_max_s": round(float(wait.max()), 1),
        "bounded_slowdown_mean": round(float(slowdown.mean()), 3),
        "makespan_s": round(makespan, 1),
        "jain_index": round(jain([o.user for o in outcomes], slowdown), 4),
    }


def jain(users: Sequence[str], slowdown: np.ndarray) -> float:
    """Jain's index over users of each user's mean bounded slowdown:
    1 when every user is served alike, 1/n when one user takes all the delay."""
    per: dict[str, list[float]] = {}
    for u, s in zip(users, slowdown.tolist()):
        per.setdefault(u, []).append(s)
    x = np.array([np.mean(v) for v in per.values()])
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum())) if len(x) and (x ** 2).sum() > 0 else 1.0
