"""What a reload gave a Scheduler survives a restart of its actor
(:mod:`legionrm.scheduler.several.kept`): the site policy and what it serves
are written to its state store before they are taken, and a Scheduler built
again on that store, in the same boot, comes back with them; a new boot
starts from its cluster file.  A write the disk refuses, a check and a
refused change write and change nothing."""

from __future__ import annotations

import pytest

from legionrm import codes, faults
from legionrm.config import parse_cluster
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulerSpec, SchedulingRequest
from legionrm.scheduler.several.kept import KeptReload, with_site
from legionrm.scheduler.several.served import ServedCollection
from legionrm.scheduler.priority import site_spec
from legionrm.state.reloaded import Reloaded, ReloadedStore

BASE = {"host": [{"name": "h0", "nodepool": "batch", "attributes": {"cpus": 4, "memory_gb": 16}},
                 {"name": "h1", "nodepool": "gpu", "attributes": {"cpus": 4, "memory_gb": 16}}],
        "class": [{"name": "W"}],
        "qos": [{"name": "normal", "priority": 10, "default": True}, {"name": "debug", "priority": 50}],
        "fairshare": {"half_life_s": 100.0, "interval_s": 7.0}}
RELOADED = {"qos": [{"name": "normal", "priority": 10, "default": True}, {"name": "gold", "priority": 900}],
            "class": [{"name": "W", "qos": "gold"}],
            "fairshare": {"half_life_s": 5.0, "weights": {"qos": 7}, "interval_s": 7.0}}


def spec(**change):
    return parse_cluster({**BASE, **change})


def booted(path, boot: str = "actor-1") -> tuple[KeptReload, LocalSystem]:
    """A Scheduler (in a system of its own) made as its actor makes it: from the cluster file as
    the reloads of ``boot`` kept in ``path`` left it."""
    kept = KeptReload(ReloadedStore(path), boot, "default")
    return kept, LocalSystem(kept.cluster(spec()))


def reload_site(kept: KeptReload, s: LocalSystem, **change) -> object:
    return kept.site(s.scheduler.queue.site, s.scheduler.book.entries, site_spec(spec(**change)))


def settings(s: LocalSystem) -> tuple:
    site = s.scheduler.queue.site
    return sorted(site.settings.qos), site.settings.class_qos, site.settings.half_life_s, site.formula.weights.qos


def test_a_restarted_scheduler_comes_back_with_the_reloaded_site_policy(tmp_path) -> None:
    kept, s = booted(tmp_path / "scheduler.db")
    assert settings(s) == (["debug", "normal"], {}, 100.0, 10000.0)
    assert reload_site(kept, s, **RELOADED) is None
    taken = settings(s)
    assert taken == (["gold", "normal"], {"W": "gold"}, 5.0, 7.0)
    again_kept, again = booted(tmp_path / "scheduler.db")  # Ray restarted the actor: the same id
    assert settings(again) == taken
    assert again_kept.site_now == site_spec(again.spec)
    assert again.spec.fairshare["interval_s"] == 7.0  # the elastic cycle's keys, as the file has them
    _, fresh = booted(tmp_path / "scheduler.db", boot="actor-2")  # a new `up`: its file
    assert settings(fresh) == (["debug", "normal"], {}, 100.0, 10000.0)


def test_a_restarted_scheduler_serves_what_a_reload_gave_it(tmp_path) -> None:
    kept, s = booted(tmp_path / "scheduler.db")
    assert not isinstance(s.scheduler.getCollection(), ServedCollection)  # every nodepool
    gpu = SchedulerSpec(name="default", nodepools=("gpu",))
    assert kept.serves(gpu) is None
    _, again = booted(tmp_path / "scheduler.db")
    assert again.spec.scheduler_specs() == (gpu,)
    served = again.scheduler.getCollection()
    assert isinstance(served, ServedCollection) and served.serves == gpu.serves()
    run = again.scheduler.scheduleObjects(SchedulingRequest(request_id="r", identity=Identity(user="ann"), objects=(
        ObjectRequest(class_name="W", cpus=1, memory_gb=1),)))
    assert run.ok and {i.host for i in run.instances} == {"h1"}  # the gpu pool's host only


def test_a_write_the_disk_refuses_changes_nothing(tmp_path) -> None:
    kept, s = booted(tmp_path / "scheduler.db")
    before = settings(s)
    with faults.inject("full", "scheduler.db"):
        why = reload_site(kept, s, **RELOADED)
        assert kept.serves(SchedulerSpec(name="default", nodepools=("gpu",))) is not None
    assert why is not None and why.code == codes.STATE_DISK_FULL and why.by == "default"
    assert settings(s) == before
    assert ReloadedStore(tmp_path / "scheduler.db").load("actor-1") == Reloaded()


@pytest.mark.parametrize("check, qos, refused", [
    (True, [*BASE["qos"], {"name": "gold", "priority": 900}], False),
    (False, [{"name": "normal", "default": True}], True),  # r waits in debug, which the new file drops
], ids=["a-check", "a-refused-change"])
def test_a_check_or_a_refused_change_writes_nothing(tmp_path, check, qos, refused) -> None:
    kept, s = booted(tmp_path / "scheduler.db")
    s.scheduler.book.add(SchedulingRequest(request_id="r", identity=Identity(user="ann"), qos="debug", objects=(
        ObjectRequest(class_name="W", cpus=1, memory_gb=1),)))
    before = settings(s)
    why = kept.site(s.scheduler.queue.site, s.scheduler.book.entries, site_spec(spec(qos=qos)), check=check)
    assert (why is not None and why.code == codes.RELOAD_REFUSED) if refused else why is None
    assert settings(s) == before
    assert ReloadedStore(tmp_path / "scheduler.db").load("actor-1") == Reloaded()


def test_with_site_changes_only_the_site_policy() -> None:
    new = with_site(spec(), site_spec(spec(**RELOADED)))
    assert site_spec(new).model_copy(update={"source": ""}) == site_spec(spec(**RELOADED)).model_copy(update={"source": ""})
    assert new.model_copy(update={"qos": (), "classes": (), "fairshare": {}}) == spec().model_copy(
        update={"qos": (), "classes": (), "fairshare": {}})


def test_a_request_that_comes_between_the_check_and_the_change_keeps_the_store_as_it_runs(tmp_path) -> None:
    kept, s = booted(tmp_path / "scheduler.db")
    s.scheduler.book.add(SchedulingRequest(request_id="r", identity=Identity(user="ann"), qos="debug", objects=(
        ObjectRequest(class_name="W", cpus=1, memory_gb=1),)))
    seen = iter([[], s.scheduler.book.entries()])  # the check sees no request; r is there when it changes
    before = settings(s)
    why = kept.site(s.scheduler.queue.site, lambda: next(seen), site_spec(spec(**RELOADED)))
    assert why is not None and why.code == codes.RELOAD_REFUSED
    assert settings(s) == before
    _, again = booted(tmp_path / "scheduler.db")
    assert settings(again) == before


def test_a_restarted_scheduler_binds_joining_nodes_by_the_reloaded_ray_node_rules(tmp_path) -> None:
    file_rules = spec(ray_node=[{"hostname": "gpu-*", "nodepool": "gpu"}])
    reloaded = spec(ray_node=[{"hostname": "gpu-*", "nodepool": "batch", "attributes": {"rack": "r9"}}]).ray_nodes
    kept = KeptReload(ReloadedStore(tmp_path / "scheduler.db"), "actor-1", "default")
    assert kept.cluster(file_rules).ray_nodes == file_rules.ray_nodes
    assert kept.rules(reloaded) is None
    node = {"NodeManagerHostname": "gpu-7", "NodeManagerAddress": "10.0.0.7"}
    again = KeptReload(ReloadedStore(tmp_path / "scheduler.db"), "actor-1", "default").cluster(file_rules)
    assert again.ray_nodes == reloaded
    assert again.node_host("ray-0a", node).nodepool == "batch"  # a node that joins now: the reloaded rule
    fresh = KeptReload(ReloadedStore(tmp_path / "scheduler.db"), "actor-2", "default").cluster(file_rules)
    assert fresh.ray_nodes == file_rules.ray_nodes  # a new `up`: its file's rules
    with faults.inject("full", "scheduler.db"):
        why = kept.rules(file_rules.ray_nodes)
    assert why is not None and why.code == codes.STATE_DISK_FULL
    assert ReloadedStore(tmp_path / "scheduler.db").load("actor-1").rules == reloaded  # nothing written
