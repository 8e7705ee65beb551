"""The multifactor priority: one formula orders every waiting request.

For a pending job ``j`` of user ``u`` at time ``now``::

    priority(j) = W_qos       * qos(j)        qos(j)  = qos_priority(j) / max qos priority   (0 when all are 0)
                + W_fairshare * F(u)          F(u)    = 2^(-U(u) / S(u))                      (sharetree)
                + W_age       * age(j)        age(j)  = min(now - submitted, max_age_s) / max_age_s
                + W_size      * size(j)       size(j) = min(cpus(j) / total_cpus, 1)          (0 without cpus)

Every factor lies in ``[0, 1]``, so each weight is the most its factor can
add (Slurm's ``PriorityWeight*``).  An administrator's ``fixed`` priority
(``legionrm update --priority N``, ``legionrm top``) replaces the sum.
Higher goes first; ties go to the older submission, then the smaller id:
:func:`rank` is a total, deterministic order.

Pure functions over plain values (no Ray, no book): :func:`rank` gives each
job's factors in order (``legionrm prio``), :func:`order` the same order as
positions, computed as columns (the queue's every pass); a simulator
(``legionrm simulate --swf``) may call either with its own jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Weights:
    """The most each factor adds to a priority (``[fairshare.weights]``)."""

    qos: float = 10_000.0
    fairshare: float = 10_000.0
    age: float = 1_000.0
    size: float = 1_000.0


@dataclass(frozen=True)
class Formula:
    """The formula's constants: the weights, the age at which the age factor
    is full, the highest QoS priority (the QoS factor's 1), and the cluster's
    cpus (the size factor's 1; 0: no size factor)."""

    weights: Weights = Weights()
    max_age_s: float = 7 * 86_400.0
    max_qos_priority: int = 0
    total_cpus: float = 0.0


@dataclass(frozen=True)
class PendingJob:
    """What the formula needs of one waiting request."""

    id: str
    user: str
    submitted: float
    cpus: float = 0.0
    qos_priority: int = 0
    fixed: int | None = None
    """An administrator's priority: replaces the formula's sum."""


@dataclass(frozen=True)
class Factors:
    """One job's factors (each in ``[0, 1]``) and its priority."""

    id: str
    user: str
    submitted: float
    priority: float
    qos: float
    fairshare: float
    age: float
    size: float
    fixed: bool = False


def factors(job: PendingJob, fairshare: float, now: float, formula: Formula) -> Factors:
    """``job``'s factors and priority at ``now``, its user's fair-share factor being ``fairshare``."""
    w = formula.weights
    qos = min(1.0, max(0.0, job.qos_priority / formula.max_qos_priority)) if formula.max_qos_priority > 0 else 0.0
    fs = min(1.0, max(0.0, fairshare))
    age = min(1.0, max(0.0, now - job.submitted) / formula.max_age_s) if formula.max_age_s > 0 else 0.0
    size = min(1.0, max(0.0, job.cpus) / formula.total_cpus) if formula.total_cpus > 0 else 0.0
    total = w.qos * qos + w.fairshare * fs + w.age * age + w.size * size
    if job.fixed is not None:
        return Factors(job.id, job.user, job.submitted, float(job.fixed), qos, fs, age, size, True)
    return Factors(job.id, job.user, job.submitted, total, qos, fs, age, size)


def order_key(f: Factors) -> tuple[float, float, str]:
    """Higher priority first, then the older, then the smaller id."""
    return (-f.priority, f.submitted, f.id)


def rank(jobs: Iterable[PendingJob], fairshare: Mapping[str, float], now: float, formula: Formula) -> list[Factors]:
    """Every job's factors, in the order the jobs go next (see the module).
    ``fairshare`` maps a user to their factor; a user it lacks has used
    nothing (factor 1)."""
    return sorted((factors(j, fairshare.get(j.user, 1.0), now, formula) for j in jobs), key=order_key)


def order(jobs: Sequence[PendingJob], fairshare: Mapping[str, float], now: float, formula: Formula) -> list[int]:
    """The positions in ``jobs`` in the order :func:`rank` gives (the same
    formula and ties), computed as numpy columns: the queue's hot path."""
    n = len(jobs)
    nan = float("nan")  # (no administrator's priority)
    get = fairshare.get
    cols = np.array([(j.submitted, j.cpus, j.qos_priority, get(j.user, 1.0), nan if j.fixed is None else j.fixed)
                     for j in jobs], dtype=float).reshape(n, 5)  # one pass over the jobs, not one per column
    return order_of(cols, lambda i: jobs[i].id, now, formula).tolist()


def order_of(cols: np.ndarray, id_of: Callable[[int], str], now: float, formula: Formula) -> np.ndarray:
    """:func:`order` over the jobs as columns: one row per job of ``(submitted,
    cpus, qos priority, fair-share factor, fixed priority or NaN)``;
    ``id_of(i)``, job ``i``'s id, is read only for ties.  The positions as an int64 array."""
    n = len(cols)
    if n == 0:
        return np.empty(0, np.int64)
    if n <= FEW:  # (numpy's calls cost more than a few rows' sums: the same numbers in plain floats)
        rows = cols.tolist()
        keys = [(-p, r[0]) for p, r in zip(_priorities_few(rows, now, formula), rows)]
        if all(p == p and s == s for p, s in keys):  # (no NaN: numpy sorts those last, a Python sort cannot)
            picked = sorted(range(n), key=keys.__getitem__)
            for lo, hi in _runs([k for k in range(n - 1) if keys[picked[k]] == keys[picked[k + 1]]]):
                picked[lo:hi] = sorted(picked[lo:hi], key=id_of)  # (ties, as below)
            return np.array(picked, np.int64)
    sub, prio = cols[:, 0].copy(), priorities(cols, now, formula)
    at = np.lexsort((sub, -prio))
    # ties of priority and submission (rare) go by request id: only those runs are sorted again
    same = np.flatnonzero((prio[at][1:] == prio[at][:-1]) & (sub[at][1:] == sub[at][:-1]))
    out = at.astype(np.int64, copy=False)
    for lo, hi in _runs(same.tolist()):
        out[lo:hi] = sorted(out[lo:hi].tolist(), key=id_of)
    return out


def priorities(cols: np.ndarray, now: float, formula: Formula) -> np.ndarray:
    """Each row's priority (the rows of :func:`order_of`)."""
    n, w = len(cols), formula.weights
    sub, cpus, qp, fixed = cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 4]
    fs = np.clip(cols[:, 3], 0.0, 1.0)
    qos = np.clip(qp / formula.max_qos_priority, 0.0, 1.0) if formula.max_qos_priority > 0 else np.zeros(n)
    age = (np.clip(np.maximum(now - sub, 0.0) / formula.max_age_s, 0.0, 1.0) if formula.max_age_s > 0
           else np.zeros(n))
    size = np.clip(np.maximum(cpus, 0.0) / formula.total_cpus, 0.0, 1.0) if formula.total_cpus > 0 else np.zeros(n)
    prio = w.qos * qos + w.fairshare * fs + w.age * age + w.size * size
    return np.where(np.isnan(fixed), prio, fixed)


FEW = 32
"""Up to how many rows :func:`order_of` works in plain floats."""


def _priorities_few(rows: list[list[float]], now: float, formula: Formula) -> list[float]:
    """:func:`priorities` in Python floats: the same IEEE operations in the same order, so the
    same numbers (numpy's clip to [0, 1] is a max then a min, each keeping a NaN, as here)."""
    w = formula.weights
    mq, ma, tc = formula.max_qos_priority, formula.max_age_s, formula.total_cpus
    out = []
    for sub, cpus, qp, fs, fixed in rows:
        if fixed == fixed:  # (not NaN: an administrator's priority)
            out.append(fixed)
            continue
        qos = (0.0 if 0.0 > (q := qp / mq) else 1.0 if q > 1.0 else q) if mq > 0 else 0.0
        age = (0.0 if 0.0 > (a := (0.0 if 0.0 > (d := now - sub) else d) / ma) else 1.0 if a > 1.0 else a
               ) if ma > 0 else 0.0
        size = (0.0 if 0.0 > (z := (0.0 if 0.0 > cpus else cpus) / tc) else 1.0 if z > 1.0 else z) if tc > 0 else 0.0
        out.append(w.qos * qos + w.fairshare * (0.0 if 0.0 > fs else 1.0 if fs > 1.0 else fs) + w.age * age
                   + w.size * size)
    return out


def _runs(same: list[int]) -> list[tuple[int, int]]:
    """The ``[lo, hi)`` runs of positions tied with the next (``same``: those ``k`` with ``k`` tied to ``k + 1``)."""
    runs: list[tuple[int, int]] = []
    for k in same:
        if runs and runs[-1][1] == k + 1:
            runs[-1] = (runs[-1][0], k + 2)
        else:
            runs.append((k, k + 2))
    return runs
