"""A synthetic Standard Workload Format trace in the shape of the
Lublin–Feitelson model (Lublin & Feitelson 2003, "The workload on parallel
supercomputers: modeling the characteristics of rigid jobs"), with users and
walltime estimates worse than the run times.

    .venv/bin/python benchmarks/gen_trace.py [--jobs 10000] [--procs 1024] [--load 0.75] [--seed 26] [-o FILE]

The shape, from the model's published structure (parameters rounded):

- size: serial with probability 0.24; otherwise ``log2(size)`` is drawn from a
  two-stage uniform (``[0.8, ulog-2.5]`` with probability 0.86, else
  ``[ulog-2.5, ulog]``, ``ulog = log2(procs)``), and rounded to a power of two
  with probability 0.75;
- run time: ``ln(run)`` from a hyper-gamma (Gamma(4.2, 0.94) or Gamma(312, 0.03)),
  the short branch taken with probability ``0.78 - 0.0054 * size`` (bigger jobs run longer);
- arrivals: gamma inter-arrival times with a daily cycle (busy days, quiet nights),
  scaled so the offered load is ``--load`` of the machine;
- users: 40 users with Zipf-like activity, in 8 groups; each user's walltime
  estimate is the run time times a factor from 1 to 10 (some users estimate
  closely, most do not), rounded up to a common limit (15 min, 30 min, 1 h,
  2 h, 4 h, 8 h, 12 h, 24 h, 48 h), as the modal estimates of real traces.

The trace kept in ``benchmarks/traces/`` was made with the defaults.  Job
numbers run from 1; times are whole seconds from 0.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

from legionrm.replay.swf import Job, write

LIMITS = (900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800)


def size(rng: random.Random, procs: int) -> int:
    if rng.random() < 0.24:
        return 1
    ulog = math.log2(procs)
    umed = ulog - 2.5
    x = rng.uniform(0.8, umed) if rng.random() < 0.86 else rng.uniform(umed, ulog)
    n = 2 ** round(x) if rng.random() < 0.75 else round(2 ** x)
    return max(1, min(procs, int(n)))


def runtime(rng: random.Random, n: int) -> float:
    p = min(max(0.78 - 0.0054 * n, 0.05), 0.95)
    x = rng.gammavariate(4.2, 0.94) if rng.random() < p else rng.gammavariate(312, 0.03)
    return max(1.0, min(math.exp(x), 36 * 3600.0))


def estimate(rng: random.Random, run: float, care: float) -> float:
    want = run * (1 + (rng.random() * 9 if rng.random() > care else rng.random() * 0.3))
    return float(next((lim for lim in LIMITS if lim >= want), LIMITS[-1]))


def generate(jobs: int, procs: int, load: float, seed: int) -> list[Job]:
    rng = random.Random(seed)
    users = 40
    weights = [1 / (k + 1) ** 1.1 for k in range(users)]  # Zipf-like: a few heavy users
    care = [rng.random() * 0.5 for _ in range(users)]  # how often each user estimates closely
    sizes = [size(rng, procs) for _ in range(jobs)]
    runs = [runtime(rng, n) for n in sizes]
    work = sum(n * r for n, r in zip(sizes, runs))
    mean_gap = work / (load * procs) / jobs  # the offered load: work over the span the arrivals cover
    out, t = [], 0.0
    for k in range(jobs):
        hour = (t / 3600.0) % 24
        busy = 1.6 if 8 <= hour < 18 else 0.5  # a daily cycle: arrivals come faster by day
        t += rng.gammavariate(2.0, mean_gap / 2.0) / busy * (1.6 * 10 + 0.5 * 14) / 24
        u = rng.choices(range(users), weights)[0]
        out.append(Job(k + 1, round(t), round(runs[k]), sizes[k], estimate(rng, runs[k], care[u]), str(u + 1),
                       str(u % 8 + 1)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--procs", type=int, default=1024)
    ap.add_argument("--load", type=float, default=0.75)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("-o", "--out", default=str(Path(__file__).parent / "traces" / "lublin_1024.swf"))
    a = ap.parse_args()
    jobs = generate(a.jobs, a.procs, a.load, a.seed)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    write(jobs, a.out, header=f"Lublin-Feitelson-shaped synthetic trace: benchmarks/gen_trace.py --jobs {a.jobs} "
          f"--procs {a.procs} --load {a.load} --seed {a.seed}\nMaxProcs: {a.procs}")
    print(f"{len(jobs)} jobs -> {a.out}")


if __name__ == "__main__":
    main()
