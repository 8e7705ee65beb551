"""Regression cases from auditing the DUCC core against the algorithm notes and
DUCC's scheduler: each case failed before its fix (see the ids)."""

from __future__ import annotations

import pytest

from legionrm.scheduler.fairshare.classes import (
    NodepoolSpec,
    ResourceClassSpec,
    RmSettings,
    UserSpec,
)
from legionrm.scheduler.fairshare.core import DuccCore
from legionrm.scheduler.fairshare.checkpoint import RmCheckpoint

S = RmSettings(quantum_gb=1, expand_by_doubling=False, prediction=False)


def fair(name: str, **kw) -> ResourceClassSpec:
    return ResourceClassSpec(name, policy="FAIR_SHARE", **kw)


# --- How Much: which entity gets the rounding leftovers ------------------------------------
#
# DUCC serves classes (weight, then name) and jobs (oldest first) in one fixed
# order on every pass, so the first entity collects the leftover qshare and the
# one-process round-up again on later passes.  Only users (hash-ordered in DUCC)
# are rebalanced here.  Worked by hand in the notes' algorithm (section 4.2).

APPORTION = [
    (
        "classes-leftover-follows-weight-then-name-on-every-pass",
        [1, 1],
        [fair("a", default=True), fair("b"), fair("c")],
        # (job, user, memory, class, wants)
        [("a", "ua", 1, "a", 16), ("b", "ub", 2, "b", 18), ("c", "uc", 1, "c", 13)],
        {"a": 2, "b": 0, "c": 0},
    ),
    (
        "jobs-leftover-follows-age-on-every-pass",
        [2],
        [fair("normal")],
        [("j0", "bob", 3, "normal", 2), ("j1", "bob", 1, "normal", 19), ("j2", "bob", 1, "normal", 11)],
        {"j0": 0, "j1": 2, "j2": 0},
    ),
]


@pytest.mark.parametrize("machines,classes,jobs,expected", [c[1:] for c in APPORTION], ids=[c[0] for c in APPORTION])
def test_leftovers_follow_duccs_entity_order(machines, classes, jobs, expected):
    core = DuccCore(S, [], classes)
    for i, mem in enumerate(machines):
        core.add_machine(f"m{i + 1}", mem)
    for jid, user, mem, cls, want in jobs:
        core.submit(jid, user, mem, cls=cls, work_items=want, time_per_item_ms=100)
    r = core.run_cycle()
    assert {j: r.jobs[j].counted for j in expected} == expected


def test_users_are_rebalanced_so_equal_users_stay_within_one_process():
    """The deliberate difference: DUCC's fixed (hash) user order gives 4, 2, 2 here."""
    core = DuccCore(S, [], [fair("normal")])
    core.add_machine("m1", 7)
    core.add_machine("m2", 11)
    for u in ("u1", "u2", "u3"):
        core.submit(u, u, 2, work_items=1000, time_per_item_ms=100)
    r = core.run_cycle()
    assert sorted(r.jobs[u].counted for u in ("u1", "u2", "u3")) == [2, 3, 3]


# --- What Of ---------------------------------------------------------------------------------

def test_job_in_a_reserve_class_gets_its_second_machine_once_freed():
    """whatOfReserve places counted - current for every job; it skipped jobs already
    holding one (hidden while defragmentation's needy list placed them instead)."""
    s = RmSettings(quantum_gb=1, expand_by_doubling=False, prediction=False, defragmentation=False)
    core = DuccCore(s, [], [fair("normal"), ResourceClassSpec("reserve", policy="RESERVE")])
    core.add_machine("m1", 8)
    core.add_machine("m2", 8)
    core.submit("f", "alice", 1, work_items=8, time_per_item_ms=100)
    core.run_cycle()
    core.submit("r", "bob", 8, cls="reserve", work_items=2, time_per_item_ms=100)
    seen = []
    for _ in range(3):
        core.confirm_evictions()
        seen.append(core.run_cycle().jobs["r"].processes)
    assert seen == [1, 2, 2]  # the free host at once, the other once its fair-share work has left


HORIZONTAL = [
    ("service-is-placed-best-fit", "service", "m1"),
    ("job-avoids-hosts-with-other-jobs", "job", "m2"),
]


@pytest.mark.parametrize("kind,host", [c[1:] for c in HORIZONTAL], ids=[c[0] for c in HORIZONTAL])
def test_fixed_share_horizontal_pass(kind, host):
    """DUCC's horizontal pass avoids hosts with a share of the same service id; jobs
    all have id 0 (so they avoid every job), a service instance avoids only itself."""
    core = DuccCore(S, [], [fair("normal"), ResourceClassSpec("fixed", policy="FIXED_SHARE")])
    core.add_machine("m1", 4)
    core.add_machine("m2", 8)
    core.submit("f", "alice", 1, work_items=1, time_per_item_ms=100)
    assert core.run_cycle().jobs["f"].machines == {"m1": 1}
    core.submit("x", "bob", 2, cls="fixed", kind=kind, work_items=1, time_per_item_ms=100)
    assert core.run_cycle().jobs["x"].machines == {host: 1}


# --- How Much for reservations, deferral reasons -------------------------------------------

def test_reservation_whose_only_size_match_is_dead_has_no_host_of_the_size():
    core = DuccCore(S, [], [fair("normal"), ResourceClassSpec("reserve", policy="RESERVE")])
    core.add_machine("big", 16)
    core.add_machine("small", 8)
    core.node_down("big")
    core.submit("r", "bob", 16, cls="reserve", kind="reservation")
    r = core.run_cycle()
    assert r.jobs["r"].deferred and "no hosts of the correct size" in r.jobs["r"].reason


REASONS = [
    ("fixed-too-big-for-every-host", None, 32, "sufficient memory"),
    ("fixed-over-allotment", 4.0, 8, "allotment of 4GB is exceeded"),
]


@pytest.mark.parametrize("allotment,mem,phrase", [c[1:] for c in REASONS], ids=[c[0] for c in REASONS])
def test_deferral_reasons_use_duccs_wording(allotment, mem, phrase):
    s = RmSettings(quantum_gb=1, expand_by_doubling=False, prediction=False, global_allotment_gb=allotment)
    core = DuccCore(s, [], [fair("normal"), ResourceClassSpec("fixed", policy="FIXED_SHARE")], [UserSpec("bob")])
    core.add_machine("m", 16)
    core.submit("x", "bob", mem, cls="fixed", kind="service")
    r = core.run_cycle()
    assert r.jobs["x"].deferred and phrase in r.jobs["x"].reason, r.jobs["x"].reason


# --- recovery --------------------------------------------------------------------------------

RECOVERY = [
    # class moved to a subpool: fair-share work on the parent's host stays (same tree) ...
    ("fair-share-moved-to-subpool-keeps-its-work", "FAIR_SHARE", False),
    # ... non-preemptable work must sit in its own pool, so it is blacklisted
    ("fixed-share-moved-to-subpool-is-blacklisted", "FIXED_SHARE", True),
]


@pytest.mark.parametrize("policy,blacklisted", [c[1:] for c in RECOVERY], ids=[c[0] for c in RECOVERY])
def test_recovery_compatibility_follows_duccs_compatible_nodepool(tmp_path, policy, blacklisted):
    pools = [NodepoolSpec("all"), NodepoolSpec("sub", parent="all")]
    before = DuccCore(S, pools, [ResourceClassSpec("c", policy=policy, nodepool="all")])
    before.add_machine("a1", 4, "all")
    before.add_machine("s1", 4, "sub")
    before.submit("j", "alice", 4, cls="c", kind="job" if policy == "FAIR_SHARE" else "service", work_items=1,
                  time_per_item_ms=100)
    assert before.run_cycle().jobs["j"].machines == {"a1": 1}
    checkpoint = RmCheckpoint(tmp_path / "rm.db")
    checkpoint.save(before)
    after = checkpoint.load_into(DuccCore(S, pools, [ResourceClassSpec("c", policy=policy, nodepool="sub")]))
    host = after.machines["a1"]
    assert bool(host.blacklist) is blacklisted
    assert (len(after.jobs["j"].shares) == 1) is not blacklisted
    assert host.used() == 4  # either way the space stays taken: never double-booked


def test_recovery_blacklists_fixed_work_on_a_node_moved_to_another_pool(tmp_path):
    """A configuration change moves a node: the current configuration's pool wins,
    and the fixed-share work left there is blacklisted until it has gone."""
    pools = [NodepoolSpec("all"), NodepoolSpec("other")]
    classes = [fair("normal", nodepool="all"), ResourceClassSpec("fixed", policy="FIXED_SHARE", nodepool="all")]
    before = DuccCore(S, pools, classes)
    before.add_machine("n1", 8, "all")
    before.submit("svc", "ops", 4, cls="fixed", kind="service")
    assert before.run_cycle().jobs["svc"].machines == {"n1": 1}
    checkpoint = RmCheckpoint(tmp_path / "rm.db")
    checkpoint.save(before)
    after = DuccCore(S, pools, classes)
    after.add_machine("n1", 8, "other")  # the new configuration puts n1 in "other"
    checkpoint.load_into(after)
    n1 = after.machines["n1"]
    assert n1.nodepool == "other" and n1.blacklist and not n1.schedulable
    assert n1.used() == 4
    after.confirm_exit(next(iter(n1.blacklist)))
    assert n1.schedulable and n1.used() == 0


# --- progress updates ------------------------------------------------------------------------

def test_update_threads_never_zero_and_memory_is_fixed_at_submit():
    from legionrm.errors import SchedulingError

    core = DuccCore(S, [], [fair("normal")])
    core.add_machine("m", 4)
    core.submit("j", "a", 1, work_items=10, time_per_item_ms=100)
    core.run_cycle()
    core.update_job("j", threads=0)  # was a ZeroDivisionError in the projected cap
    assert core.jobs["j"].threads == 1
    core.run_cycle()
    with pytest.raises(SchedulingError):
        core.update_job("j", memory_gb=3)  # would have left the job's order stale


def test_simulate_update_with_zero_threads_exits_2(tmp_path, capsys):
    from legionrm.cli import main

    f = tmp_path / "s.toml"
    f.write_text(
        '[rm]\nquantum_gb = 1\n[[class]]\nname = "normal"\npolicy = "FAIR_SHARE"\n'
        '[[machine]]\nname = "m"\nmemory_gb = 4\n'
        '[[job]]\nid = "j"\nuser = "a"\nmemory_gb = 1\nwork_items = 10\ntime_per_item_ms = 100\n'
        '[[event]]\ncycle = 2\nkind = "update"\njob = "j"\nthreads = 0\n'
    )
    assert main(["simulate", str(f), "--cycles", "2"]) == 2
    err = capsys.readouterr().err
    assert "event[0]" in err and "threads" in err
