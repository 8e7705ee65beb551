"""The backfill profile kept between passes (:class:`ProfileKeeper`) is the
one :func:`profile_of` builds afresh, at every pass of replays under each
policy (starts, ends, reports and submissions in between), and the replays
give the same starts with the keeper as with a fresh profile each pass."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest

from legionrm.replay import replay
from legionrm.scheduler.backfill import ProfileKeeper, profile_of
from legionrm.scheduler.backfill.profile import Profile
from tests.unit.replay.test_replay_reference import trace


def same(a: Profile, b: Profile) -> bool:
    """The same hosts, cpus now, reports and events (in the same order), at the same time."""
    ea, eb = a.later(), b.later()
    return (a.now == b.now and a.names == b.names and np.array_equal(a.total, b.total)
            and np.array_equal(a.free, b.free) and np.array_equal(a.reported, b.reported)
            and all(np.array_equal(x, y) for x, y in zip(ea, eb)))


@pytest.mark.parametrize("policy", ["fcfs", "easy", "site"])
@pytest.mark.parametrize("seed,hosts,cpus", [(1, 16, 1), (2, 6, 4), (3, 5, 3)], ids=["16x1", "6x4", "5x3"])
def test_kept_profile_is_the_fresh_one(policy: str, seed: int, hosts: int, cpus: int) -> None:
    jobs = trace(seed, n=80, procs=hosts * cpus)
    kept_calls = {"same token": 0, "passes": 0}
    real = ProfileKeeper.profile

    def checked(self: ProfileKeeper, snap, running):  # type: ignore[no-untyped-def]
        token = self.token
        got = real(self, snap, running)
        kept_calls["passes"] += 1
        kept_calls["same token"] += self.token is token
        assert same(got, profile_of(snap, running))
        return got

    with patch.object(ProfileKeeper, "profile", checked):
        kept = replay(jobs, hosts, cpus, policy)
    assert kept_calls["same token"] > 0  # (the test can fail: some passes did reuse the kept profile)
    fresh_profile = lambda self, snap, running: profile_of(snap, running)  # noqa: E731
    with patch.object(ProfileKeeper, "profile", fresh_profile):
        fresh = replay(jobs, hosts, cpus, policy)
    assert kept.outcomes == fresh.outcomes and kept.reserved == fresh.reserved
