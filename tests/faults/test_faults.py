"""Faults on a live system: a host group killed mid-negotiation, a host group
stalled (SIGSTOP / SIGCONT), the Enactor killed during reservations, a worker
node removed under a running instance.  Each prints its time to recover and
asks the auditor over Ray whether anything was lost, leaked or double-booked
(an expected finding is named and explained where it is allowed); each also
checks that no reservation is left open that nobody holds (stricter than the
auditor, which lets an unheld reservation run out its token timeout).

One system for the module, booted with a state dir (so host groups keep what
they granted and restart) and with the two worker nodes bound as hosts
``ray-a`` and ``ray-b``.  The node test runs last and gives the cluster a
new ``node_b`` back."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from tests.clusters import lean_cluster
from tests.faults import back, durable_system, pid_of
from legionrm.models import EnactorSpec, HostSpec, Identity, ObjectRequest, SchedulingRequest

pytestmark = pytest.mark.ray

BATCH = '$nodepool == "batch"'


@pytest.fixture(scope="module")
def system(ray_cluster, ray_nodes):
    spec = lean_cluster(("batch", "edge"), ("Worker", "Echo"))  # the groups and classes the faults below use
    # a stalled group is dead to the Enactor after 3 s, not 10: the stall test waits out two deadlines
    spec = spec.model_copy(update={"enactor": EnactorSpec(deadline_s=3.0)})
    spec = spec.model_copy(update={"hosts": spec.hosts + (
        HostSpec(name="ray-a", nodepool="ray"), HostSpec(name="ray-b", nodepool="ray"))})
    with durable_system(spec, "lrmf", ray_nodes={"ray-a": ray_nodes["node_a"], "ray-b": ray_nodes["node_b"]}) as s:
        yield s


def req(rid: str, count: int = 4, cpus: float = 2, constraint: str = BATCH, **kw: Any) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user="fault"), wait=False, objects=(
        ObjectRequest(class_name="Worker", count=count, cpus=cpus, memory_gb=1, placement="scatter",
                      constraint=constraint),), **kw)


def unheld(system: Any) -> list[str]:
    """Open reservations nobody holds, on every host group (the token ids)."""
    from legionrm.system import call

    views = [v for h in system.groups.values() for v in call(h.audit_views.remote(), 10)]
    return [r.token_id for v in views for r in v.reservations if not r.holders]


def audited(system: Any, allowed: dict[str, str] | None = None) -> list[Any]:
    """The auditor's findings, less the expected ones (code -> why it is expected)."""
    from legionrm.system import call

    findings = call(system.scheduler.audit.remote(), 60)
    return [f for f in findings if f.code not in (allowed or {})]


def settle(system: Any, rid: str, limit_s: float = 30) -> Any:
    """The request once it is no longer being placed."""
    from legionrm.system import call

    deadline = time.monotonic() + limit_s
    while True:
        info = call(system.scheduler.request_info.remote(rid))
        if info.state not in ("admitted", "placing"):
            return info
        assert time.monotonic() < deadline, f"{rid} is still {info.state}"
        time.sleep(0.1)


def end(system: Any, rid: str) -> None:
    from legionrm.system import call

    info = settle(system, rid)
    if info.state in ("running", "pending"):
        call(system.scheduler.cancel.remote(rid))


def report(capsys: Any, what: str, seconds: float, findings: list[Any]) -> None:
    with capsys.disabled():
        print(f"\n  {what}: recovered in {seconds:.2f} s; auditor: {[f.code for f in findings] or 'books balance'}")


def test_baseline_the_books_balance(system) -> None:
    assert audited(system) == [] and unheld(system) == []


def test_a_host_group_killed_mid_negotiation_restarts_knowing_its_grants(system, capsys) -> None:
    import ray

    from legionrm.system import call

    group = system.groups["batch"]
    old = pid_of(group)
    held_before = call(group.audit_views.remote())
    ref = system.scheduler.scheduleObjects.remote(req("f-kill-group", count=4))
    time.sleep(0.05)  # the enactor is reserving on the group
    t0 = time.monotonic()
    ray.kill(group, no_restart=False)
    answer = call(ref, 120)  # answered, whatever it is
    back(group, old)
    recovered = time.monotonic() - t0
    info = settle(system, "f-kill-group")
    assert info.state in ("failed", "pending", "running", "completed"), info.state
    if answer.ok:  # the kill came after the grants: the restarted group still runs what it granted
        assert {i.host for i in answer.instances} <= {"lab1", "batch1", "batch2", "batch3"}
    end(system, "f-kill-group")
    # the restarted group answers a new request, and what it grants never collides with the past
    again = system.schedule(req("f-after-kill", count=2))
    assert again.ok, again.message
    before_ids = {r.token_id for v in held_before for r in v.reservations}
    assert not {i.token_id for i in again.instances} & before_ids
    end(system, "f-after-kill")
    time.sleep(0.5)
    findings = audited(system)
    report(capsys, "host group killed mid-negotiation", recovered, findings)
    assert findings == [] and unheld(system) == []
    assert call(system.pools.held.remote()) == {}


def test_a_stalled_host_group_leaves_nothing_granted_held(system, capsys) -> None:
    from legionrm.system import call

    group = system.groups["edge"]
    pid = pid_of(group)
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        # only the stalled group's hosts fit: the reservation call misses the enactor's deadline
        r = system.schedule(req("f-stall", count=1, cpus=1, constraint='$nodepool == "edge"'), timeout=120)
        waited = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    t1 = time.monotonic()
    assert not r.ok and r.state == "failed", r
    assert {f.code for f in r.failures} == {"resource.dead"}, r.failures
    back(group)
    deadline = time.monotonic() + 10
    while unheld(system) and time.monotonic() < deadline:  # the late grant, then its cancel, run on SIGCONT
        time.sleep(0.1)
    recovered = time.monotonic() - t1
    assert unheld(system) == []  # granted to a caller that gave up: cancelled, not left to expire
    ok = system.schedule(req("f-after-stall", count=1, cpus=1, constraint='$nodepool == "edge"'))
    assert ok.ok, ok.message
    end(system, "f-after-stall")
    findings = audited(system)
    report(capsys, f"host group stalled {waited:.1f} s (SIGSTOP), after SIGCONT", recovered, findings)
    assert findings == []
    assert call(system.pools.held.remote()) == {}


def test_the_enactor_killed_during_reservations(system, capsys) -> None:
    import ray

    from legionrm.system import call

    group = system.groups["batch"]
    pid = pid_of(group)
    enactor_pid = pid_of(system.enactor)
    os.kill(pid, signal.SIGSTOP)  # the enactor waits on this group's reservations ...
    try:
        # replans=0: this test is about the lost Enactor, not the fresh plan that would follow it
        ref = system.scheduler.scheduleObjects.remote(req("f-enactor", count=2, replans=0))
        time.sleep(1.0)
        t0 = time.monotonic()
        ray.kill(system.enactor, no_restart=False)  # ... when it dies
        time.sleep(0.5)
    finally:
        os.kill(pid, signal.SIGCONT)
    answer = call(ref, 120)
    assert not answer.ok and answer.state == "failed", answer
    assert {f.code for f in answer.failures} == {"enactor.lost"}, answer.failures
    assert call(system.pools.held.remote()) == {}  # the request's pool allocation is back
    back(system.enactor, enactor_pid)
    again = system.schedule(req("f-after-enactor", count=2))
    recovered = time.monotonic() - t0
    assert again.ok, again.message
    end(system, "f-after-enactor")
    deadline = time.monotonic() + 10
    while unheld(system) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert unheld(system) == []  # what the dead enactor was granted was cancelled
    findings = audited(system)
    report(capsys, "enactor killed during reservations, next request placed", recovered, findings)
    assert findings == []


def _slow_starts(self: Any, delay_s: float) -> None:
    """Test hook run inside the class actor (``__ray_call__``): every create
    waits ``delay_s`` first, and a batch is created one item after another
    (0: back to normal)."""
    core = self.core
    for name in ("create_instance", "create_instances"):
        vars(core).pop(name, None)
    if delay_s > 0:
        plain = core.create_instance

        def slow(*args: Any, **kw: Any) -> Any:
            time.sleep(delay_s)
            return plain(*args, **kw)

        def slow_batch(batch: Any) -> Any:
            return [slow(r.host, r.vault, r.token, r.args, vault_token=r.vault_token, holder=r.holder) for r in batch]

        core.create_instance, core.create_instances = slow, slow_batch


def test_the_enactor_killed_while_class_objects_start_instances(system, capsys) -> None:
    """The class object starts each instance slowly; the Enactor dies once the
    first runs.  The request fails with a clear reason, its pool allocation
    goes back, the reservations the dead Enactor held are cancelled, the
    instance started for nobody is stopped by the orphan sweep (its grace
    lowered here so the test need not wait a minute), the class object counts
    right, and the elastic cycle grows a job through the restarted Enactor."""
    import ray

    from legionrm.models import ElasticJobRequest
    from legionrm.system import call

    worker, group, sched = system.classes["Worker"], system.groups["batch"], system.scheduler
    enactor_pid = pid_of(system.enactor)
    faults = lambda: [i for i in call(group.list_instances.remote()) if i.user == "fault"]  # noqa: E731
    call(worker.__ray_call__.remote(_slow_starts, 1.5))
    try:
        ref = sched.scheduleObjects.remote(req("f-enactor-start", count=3, replans=0))
        deadline = time.monotonic() + 60
        while not faults():  # the first instance runs; the next two are still being started
            assert time.monotonic() < deadline, "no instance was ever started"
            time.sleep(0.05)
        t0 = time.monotonic()
        ray.kill(system.enactor, no_restart=False)
        answer = call(ref, 120)
    finally:
        call(worker.__ray_call__.remote(_slow_starts, 0), 60)
    assert not answer.ok and answer.state == "failed", answer
    assert {f.code for f in answer.failures} == {"enactor.lost"}, answer.failures
    assert call(system.pools.held.remote()) == {}  # the request's pool allocation is back
    started = {i.instance_id for i in faults()}
    assert 1 <= len(started) < 3, started  # the kill landed mid-start
    back(system.enactor, enactor_pid)
    call(sched.__ray_call__.remote(lambda self: setattr(self.core, "orphan_grace_s", 0.5)))
    try:
        deadline = time.monotonic() + 60
        while faults() or unheld(system):  # the sweep runs every tenth tick
            assert time.monotonic() < deadline, f"left: {faults()} {unheld(system)}"
            call(sched.tick.remote(), 60)
            time.sleep(0.1)
    finally:
        call(sched.__ray_call__.remote(lambda self: setattr(self.core, "orphan_grace_s", 60.0)))
    recovered = time.monotonic() - t0
    assert not {i.instance_id for i in call(worker.list_instances.remote())} & started  # the class forgot them
    findings = audited(system)
    report(capsys, f"enactor killed mid-start ({len(started)} of 3 started), orphans swept", recovered, findings)
    assert findings == []
    # the elastic cycle enacts through the restarted Enactor, not a dead handle
    call(sched.submit_elastic.remote(ElasticJobRequest(
        job_id="f-e-after", user="fault", class_name="Worker", memory_gb=8, cpus=0.5, max_processes=2,
        time_per_item_ms=1000)))
    cycle = call(sched.run_cycle.remote(), 60)
    for _ in range(6):
        if cycle.jobs["f-e-after"].processes == 2:
            break
        cycle = call(sched.run_cycle.remote(), 60)
    assert cycle.jobs["f-e-after"].processes == 2, cycle.refused
    assert call(sched.complete_elastic.remote("f-e-after")) is True
    deadline = time.monotonic() + 30
    while faults() or call(system.pools.held.remote()):
        assert time.monotonic() < deadline, "the elastic job's processes never stopped"
        time.sleep(0.2)
    assert audited(system) == [] and unheld(system) == []


def test_a_ray_node_host_and_a_vault_killed_come_back_with_their_grants(system, capsys) -> None:
    """The host actor of Ray node ``ray-a`` (running an instance, holding a
    reservation) and a vault (holding a reservation) are killed and restarted
    by Ray: each reloads its state file, so the tokens it granted still
    verify and are still booked, and it never reissues a token id.  The
    instance's Ray actor is detached: it outlives the host actor, the
    restarted host finds it again by name, and its request keeps running
    with the same single instance (not ended, not orphaned, not doubled)."""
    import ray

    from legionrm.models import Holder, Refusal, ReservationRequest, ReservationToken, Resources
    from legionrm.naming import instance_actor_names, instance_name
    from legionrm.testing import eventually
    from legionrm.system import call, instance_actor

    node, vault = system.nodes["ray-a"], system.vaults["vault-uva"]
    run = system.schedule(SchedulingRequest(request_id="f-ray-a", identity=Identity(user="fault"), objects=(
        ObjectRequest(class_name="Echo", cpus=0.25, memory_gb=0.1, constraint='$name == "ray-a"'),)))
    assert run.ok, run.message
    iid = run.instances[0].instance_id
    echo = instance_actor(iid)
    busy = echo.__ray_call__.remote(lambda self: time.sleep(2) or "done")  # work in flight across the kill
    holder = Holder(user="fault", class_name="Echo")
    tok = call(node.make_reservation.remote(ReservationRequest(
        request_id="f-keep-host", resource="ray-a", holder=holder, resources=Resources(cpus=0.25), timeout_s=30)))
    vtok = call(vault.make_reservation.remote(ReservationRequest(
        request_id="f-keep-vault", resource="vault-uva", holder=holder, resources=Resources(storage_gb=10),
        timeout_s=30)))
    assert isinstance(tok, ReservationToken) and isinstance(vtok, ReservationToken), (tok, vtok)
    pids = pid_of(node), pid_of(vault), pid_of(echo)
    t0 = time.monotonic()
    ray.kill(node, no_restart=False)
    ray.kill(vault, no_restart=False)
    back(node, pids[0])
    back(vault, pids[1])
    assert [i.instance_id for i in call(node.list_instances.remote())] == [iid]  # re-attached, not ended
    recovered = time.monotonic() - t0
    assert call(busy, 30) == "done" and pid_of(echo) == pids[2]  # the same process ran on, its call finished
    assert instance_actor_names("ray-a~") == [instance_name(iid)]  # one actor for it: none doubled, none stray
    assert call(node.check_reservation.remote(tok.token_id)) == tok  # granted before the kill: still honoured
    assert call(vault.check_reservation.remote(vtok.token_id)) == vtok
    again = call(node.make_reservation.remote(ReservationRequest(
        request_id="f-keep-host-2", resource="ray-a", holder=holder, resources=Resources(cpus=0.25), timeout_s=30)))
    assert isinstance(again, ReservationToken) and again.token_id != tok.token_id  # the serial survived
    time.sleep(1.5)  # three heartbeats: a host that lost the instance would have said so by now
    info = call(system.scheduler.request_info.remote("f-ray-a"))
    assert info.state == "running" and [(i.id, i.state) for i in info.instances] == [(iid, "running")], info
    for handle, t in ((node, tok), (node, again), (vault, vtok)):
        assert call(handle.cancel_reservation.remote(t.token_id)) is True
    assert not isinstance(call(node.check_reservation.remote(tok.token_id)), ReservationToken)
    findings = audited(system)
    report(capsys, f"ray-node host and vault killed, grants back, its instance re-attached (request {info.state})",
           recovered, findings)
    assert findings == [] and unheld(system) == []
    assert isinstance(call(vault.check_reservation.remote("no-such-token")), Refusal)
    end(system, "f-ray-a")
    # cancelled: its detached actor is killed with it (ray.kill ends it a moment later)
    assert eventually(lambda: instance_actor_names("ray-a~"), lambda names: names == []) == []


def test_a_removed_worker_node_loses_its_instance_and_its_request_ends_node_lost(system, ray_cluster, ray_nodes,
                                                                         capsys) -> None:
    from legionrm.system import call, node_ids

    r = system.schedule(SchedulingRequest(request_id="f-node", identity=Identity(user="fault"), objects=(
        ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1, constraint='$name == "ray-b"'),)))
    assert r.ok, r.message
    node = next(n for n in ray_cluster.worker_nodes if n.node_id == ray_nodes["node_b"])
    t0 = time.monotonic()
    ray_cluster.remove_node(node)
    try:
        deadline = time.monotonic() + 60
        while (info := call(system.scheduler.request_info.remote("f-node"))).state == "running":
            assert time.monotonic() < deadline, "the lost instance was never noticed"
            time.sleep(0.1)
        recovered = time.monotonic() - t0
        assert info.state == "node_lost" and info.instances[0].state == "lost", info
        assert call(system.pools.held.remote()) == {}
        # expected: the host object of the removed node died with it, so the auditor cannot ask it
        findings = audited(system, {"resource.unreachable": "ray-b's host actor died with its node"})
        report(capsys, "worker node removed, its instance marked lost", recovered, findings)
        assert findings == [] and unheld(system) == []
    finally:  # give the session its node_b back (a new node, a new id)
        ray_cluster.add_node(num_cpus=1, resources={"node_b": 1})
        ray_cluster.wait_for_nodes()
        ray_nodes.update(node_ids())
    assert set(ray_nodes) == {"head", "node_a", "node_b"}
