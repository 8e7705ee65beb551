"""Persistence: a restarted core recovers allocations and never double-books."""

from __future__ import annotations

from legionrm.scheduler.fairshare.classes import ResourceClassSpec, RmSettings
from legionrm.scheduler.fairshare.core import DuccCore
from legionrm.scheduler.fairshare.checkpoint import RmCheckpoint

S = RmSettings(quantum_gb=1, expand_by_doubling=False, prediction=False)
CLASSES = [ResourceClassSpec("normal", policy="FAIR_SHARE"), ResourceClassSpec("reserve", policy="RESERVE")]


def busy_core():
    core = DuccCore(S, [], CLASSES)
    for i in range(3):
        core.add_machine(f"m{i}", 8)
    core.submit("a", "alice", 2, work_items=100, time_per_item_ms=10)
    core.submit("r", "bob", 8, cls="reserve", kind="reservation")
    core.run_cycle()
    core.submit("b", "carol", 1, work_items=100, time_per_item_ms=10)
    core.run_cycle()
    return core


def test_round_trip_recovers_every_share(tmp_path):
    core = busy_core()
    checkpoint = RmCheckpoint(tmp_path / "rm.db")
    checkpoint.save(core)
    checkpoint.close()
    fresh = RmCheckpoint(tmp_path / "rm.db").load_into(DuccCore(S, [], CLASSES))
    assert fresh.result().as_dict()["jobs"] == core.result().as_dict()["jobs"]
    assert fresh.result().as_dict()["machines"] == core.result().as_dict()["machines"]
    assert fresh.needy == core.needy and fresh.cycle == core.cycle


def test_recovered_core_never_double_books(tmp_path):
    core = busy_core()
    checkpoint = RmCheckpoint(tmp_path / "rm.db")
    checkpoint.save(core)
    fresh = checkpoint.load_into(DuccCore(S, [], CLASSES))
    fresh.submit("c", "dave", 3, work_items=100, time_per_item_ms=10)
    for _ in range(3):
        fresh.confirm_evictions()
        fresh.run_cycle()
        for m in fresh.machines.values():
            assert m.used() <= m.order
    ids = [s.id for m in fresh.machines.values() for s in m.shares.values()]
    assert len(ids) == len(set(ids))


def test_vanished_class_is_blacklisted_until_gone(tmp_path):
    core = busy_core()
    checkpoint = RmCheckpoint(tmp_path / "rm.db")
    checkpoint.save(core)
    fresh = checkpoint.load_into(DuccCore(S, [], [ResourceClassSpec("normal", policy="FAIR_SHARE")]))
    host = next(m for m in fresh.machines.values() if m.blacklist)
    assert not host.schedulable and host.free() == 0
    r = fresh.run_cycle()
    assert all(host.name not in j.machines for j in r.jobs.values())
    fresh.confirm_exit(next(iter(host.blacklist)))
    assert host.schedulable
