"""``simulate --swf`` against an independent reference simulator.

The reference is written here from the definitions (the issue's, after
Lifka and Mu'alem & Feitelson), with plain loops over one pool of
processors; the replay runs the real Scheduler on hosts of one cpu each, so
the two describe the same machine.  FCFS must agree job by job; EASY must
agree too, and no job may start later than the reserved start it got when
it first reached the top of the queue (no backfilled job delayed it)."""

from __future__ import annotations

import random

import pytest

from legionrm.replay import Job, replay


def trace(seed: int, n: int = 120, procs: int = 16) -> list[Job]:
    rng = random.Random(seed)
    jobs, t = [], 0
    for k in range(n):
        t += rng.choice([0, 0, 5, 20, 60, 120])  # bursts: several jobs submitted at one time point
        run = rng.choice([0, 10, 60, 300, 900])
        req = max(1, round(run * rng.choice([0.5, 1, 1, 2, 5]))) if run else 30  # some run past their estimate
        jobs.append(Job(k + 1, t, run, rng.choice([1, 1, 2, 3, 4, 8, procs]), req, str(k % 3), "0"))
    return jobs


def reference(jobs: list[Job], procs: int, easy: bool) -> dict[int, tuple[float, float]]:
    """Each job's (start, end) by the definitions, on a pool of ``procs`` processors."""
    pending = sorted(jobs, key=lambda j: (j.submit, j.number))
    queue: list[Job] = []
    running: list[tuple[float, float, int, int]] = []  # (end, walltime end, procs, job)
    out: dict[int, tuple[float, float]] = {}
    free = procs
    i = 0
    while i < len(pending) or running or queue:
        t = min(([pending[i].submit] if i < len(pending) else []) + [r[0] for r in running])
        # 1. ends released
        for r in [r for r in running if r[0] <= t]:
            running.remove(r)
            free += r[2]
        # 2. submits queued
        while i < len(pending) and pending[i].submit <= t:
            queue.append(pending[i])
            i += 1

        # 3. one pass
        def start(job: Job, t: float = t) -> None:
            nonlocal free
            end = t + min(job.run, job.requested)
            running.append((end, t + job.requested, job.procs, job.number))
            out[job.number] = (t, end)
            free -= job.procs
            queue.remove(job)

        while queue and queue[0].procs <= free:
            start(queue[0])
        if not easy or not queue:
            continue
        head = queue[0]
        avail, shadow, extra = free, None, 0
        for wall_end, p in sorted((r[1], r[2]) for r in running):
            avail += p
            if avail >= head.procs:
                shadow, extra = wall_end, avail - head.procs
                break
        for job in list(queue[1:]):
            if job.procs > free:
                continue
            if shadow is None or t + job.requested <= shadow:
                start(job)
            elif job.procs <= extra:
                start(job)
                extra -= job.procs
    return out


@pytest.mark.parametrize("seed", [1, 2], ids=["trace-1", "trace-2"])
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_the_replay_agrees_with_the_reference_job_by_job(policy: str, seed: int) -> None:
    jobs = trace(seed)
    got = replay(jobs, hosts=16, cpus_per_host=1, policy=policy)
    mine = {o.job: (o.start, o.end) for o in got.outcomes}
    ref = reference(jobs, 16, easy=policy == "easy")
    assert len(mine) == len(jobs)
    differ = [(j, mine[j], ref[j]) for j in sorted(ref) if mine[j] != ref[j]]
    assert differ == []


@pytest.mark.parametrize("seed", [1, 2, 3], ids=["trace-1", "trace-2", "trace-3"])
def test_no_backfilled_job_ever_delays_a_reserved_start(seed: int) -> None:
    jobs = trace(seed, n=150)
    got = replay(jobs, hosts=16, cpus_per_host=1, policy="easy")
    start = {o.job: o.start for o in got.outcomes}
    assert got.reserved  # the trace blocks heads, so reservations were made
    late = {j: (start[j], r) for j, r in got.reserved.items() if start[j] > r}
    assert late == {}


def test_easy_beats_fcfs_on_the_same_trace() -> None:
    jobs = trace(4)
    waits = {p: sum(o.start - o.submit for o in replay(jobs, 16, 1, p).outcomes) for p in ("fcfs", "easy")}
    assert waits["easy"] < waits["fcfs"]
