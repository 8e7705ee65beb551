"""What the queue keeps between passes decides nothing: the backfill profile
kept (:class:`ProfileKeeper`: work added, ended work taken out) is the one :func:`profile_of` builds afresh,
and the reservations kept (:class:`HoldsMemo`) are the ones found afresh, at
every pass of replays (starts, ends, reports and submissions in between);
the replays give the same starts and reserved starts with them as without."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest

from legionrm.replay import replay
from legionrm.scheduler.backfill import Backfill, ProfileKeeper, profile_of
from legionrm.scheduler.backfill.memo import HoldsMemo
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
    kept_calls = {"same token": 0, "passes": 0, "ended taken out": 0, "usage from the pass": 0}
    real, rebuild, usage = ProfileKeeper.profile, ProfileKeeper._rebuild, ProfileKeeper.usage

    def checked(self: ProfileKeeper, snap, running):  # type: ignore[no-untyped-def]
        token = self.token
        got = real(self, snap, running)
        kept_calls["passes"] += 1
        kept_calls["same token"] += self.token is token
        assert same(got, profile_of(snap, running))
        return got

    def taken_out(self: ProfileKeeper, gone, *reread):  # type: ignore[no-untyped-def]
        kept_calls["ended taken out"] += bool(gone)
        return rebuild(self, gone, *reread)

    def from_pass(self: ProfileKeeper, entry, profile):  # type: ignore[no-untyped-def]
        kept_calls["usage from the pass"] += 1
        return usage(self, entry, profile)

    with patch.object(ProfileKeeper, "profile", checked), patch.object(ProfileKeeper, "_rebuild", taken_out), \
            patch.object(ProfileKeeper, "usage", from_pass):
        kept = replay(jobs, hosts, cpus, policy)
    assert kept_calls["same token"] > 0  # (the test can fail: some passes did reuse the kept profile)
    assert kept_calls["usage from the pass"] > 0  # (and the next profile counted the usages the passes read)
    assert kept_calls["ended taken out"] > 0  # (and some took the ended requests out of it, not built afresh)
    fresh_profile = lambda self, snap, running: profile_of(snap, running)  # noqa: E731
    with patch.object(ProfileKeeper, "profile", fresh_profile):
        fresh = replay(jobs, hosts, cpus, policy)
    assert kept.outcomes == fresh.outcomes and kept.reserved == fresh.reserved


@pytest.mark.parametrize("policy", ["easy", "site"])
@pytest.mark.parametrize("seed,hosts,cpus", [(4, 16, 1), (5, 6, 4)], ids=["16x1", "6x4"])
def test_reservations_kept_between_passes_are_found_again(policy: str, seed: int, hosts: int, cpus: int) -> None:
    """Each reservation the memo gives back is the one found afresh, and the replay's starts are the same."""
    jobs = trace(seed, n=80, procs=hosts * cpus)
    real = HoldsMemo.again
    given = [0]

    def checked(self: HoldsMemo, base, blocked, hints):  # type: ignore[no-untyped-def]
        got = real(self, base, blocked, hints)
        if got is not None:
            given[0] += 1
            fresh = Backfill(profile=lambda: base)
            fresh._memo = HoldsMemo()  # (nothing kept: found afresh)
            holds, reserved, top = fresh._holds(base, blocked, {} if hints is not None else None)
            assert [(r.entry, r.start) for r in got[1]] == [(r.entry, r.start) for r in reserved]
            assert [(h.request_id, h.start, dict(h.spare)) for h in got[0]] == \
                [(h.request_id, h.start, dict(h.spare)) for h in holds]
            assert (got[2] is None) == (top is None)
            if top is not None:
                assert np.array_equal(got[2].row, top.row) and np.array_equal(got[2].found.take, top.found.take)
        return got

    with patch.object(HoldsMemo, "again", checked):
        kept = replay(jobs, hosts, cpus, policy)
    assert given[0] > 0  # (the test can fail: some passes had their reservation kept)
    with patch.object(HoldsMemo, "again", lambda self, base, blocked, hints: None):
        fresh = replay(jobs, hosts, cpus, policy)
    assert kept.outcomes == fresh.outcomes and kept.reserved == fresh.reserved


def test_a_profile_asked_for_while_the_kept_one_changes_waits_and_is_right() -> None:
    """The Scheduler actor serves a submit's check (or a preemption pass) beside its tick's pass: a second
    call that comes while the first takes ended work out of the kept rows waits for it, then answers
    what profile_of gives (it read half-changed rows and failed, or answered wrong, before the lock)."""
    import threading

    from legionrm.scheduler.backfill.running import UsageCache

    jobs = trace(2, n=80, procs=24)
    real, forget = ProfileKeeper.profile, UsageCache.forget
    now: dict[str, object] = {}
    seen: dict[str, object] = {"second": None, "waited": False}

    def remembered(self: ProfileKeeper, snap, running):  # type: ignore[no-untyped-def]
        now.update(keeper=self, snap=snap, running=list(running))
        got = real(self, snap, running)
        if seen["second"] is not None and not seen.get("joined"):  # the replay goes on once the second answered
            seen["joined"] = True
            seen["second"][0].join(10)  # type: ignore[index]
        return got

    def midway(self: UsageCache, ids) -> None:  # type: ignore[no-untyped-def]
        forget(self, ids)  # (called inside _rebuild, some of the kept rows changed, the rest not yet)
        if seen["second"] is not None:
            return
        keeper, snap, running = now["keeper"], now["snap"], now["running"]
        out: dict[str, object] = {}

        def second() -> None:
            try:
                out["got"] = real(keeper, snap, running)  # type: ignore[arg-type]
                out["want"] = profile_of(snap, running)  # type: ignore[arg-type]  (the replay waits meanwhile)
            except Exception as exc:  # noqa: BLE001 -- shown by the assertion below
                out["got"] = exc

        t = threading.Thread(target=second)
        t.start()
        t.join(0.3)
        seen["waited"] = t.is_alive()  # it waits for the change under way
        seen["second"] = (t, out, snap, running)

    with patch.object(ProfileKeeper, "profile", remembered), patch.object(UsageCache, "forget", midway):
        replay(jobs, 6, 4, "easy")
    assert seen["second"] is not None  # (the test can fail: some pass took ended work out)
    t, out, _, _ = seen["second"]  # type: ignore[misc]
    assert seen["waited"] and seen.get("joined") and not t.is_alive()
    assert isinstance(out["got"], Profile), out.get("got")
    assert same(out["got"], out["want"])  # type: ignore[arg-type]
