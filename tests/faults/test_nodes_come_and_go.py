"""Issue 27 item 2 live: a Ray node that joins after boot becomes a host (the
default scheduler binds it within a heartbeat) and runs work; when it is
removed, its work ends ``lost`` (the request ``node_lost``; one marked
``requeue`` goes back to the queue) and the host leaves what
the Collection answers.  The test adds the node itself and leaves the
session's cluster as it found it."""

from __future__ import annotations

import time

import pytest

from legionrm.models import ClassSpec, ClusterSpec, Identity, ObjectRequest, SchedulingRequest
from legionrm.testing import eventually

pytestmark = pytest.mark.ray

SPEC = ClusterSpec(classes=(ClassSpec(name="Echo", implementation="legionrm.hostobj.ray_node:Probe",
                                      host_list=("ray-*",)),))


def test_a_node_that_joins_after_boot_runs_work_and_its_removal_ends_it_lost(ray_cluster, ray_nodes, capsys) -> None:
    import ray

    from legionrm.naming import host_name, named_actor
    from legionrm.system import boot, call

    system = boot(SPEC, heartbeat_s=0.5, bind_nodes=True, node_vaults_too=False)
    node = None
    host = ""
    try:
        before = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        t0 = time.monotonic()
        node = ray_cluster.add_node(num_cpus=1, resources={"node_c": 1})
        ray_cluster.wait_for_nodes()
        new = {n["NodeID"] for n in ray.nodes() if n.get("Alive")} - before
        assert len(new) == 1, new
        host = f"ray-{next(iter(new))[:8]}"
        names = eventually(lambda: [r.name for r in system.query("true").records], lambda got: host in got, 60)
        joined_s = time.monotonic() - t0
        assert host in names, names
        r = system.schedule(SchedulingRequest(request_id="n-join", identity=Identity(user="nodes"), objects=(
            ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1, constraint=f'$name == "{host}"'),)))
        assert r.ok and r.instances[0].host == host, r.message
        back = system.schedule(SchedulingRequest(request_id="n-requeue", identity=Identity(user="nodes"), requeue=True,
                                                 objects=(ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1,
                                                                        constraint=f'$name == "{host}"'),)))
        assert back.ok and back.instances[0].host == host, back.message
        t1 = time.monotonic()
        ray_cluster.remove_node(node)
        node = None
        info = eventually(lambda: call(system.scheduler.request_info.remote("n-join")),
                          lambda i: i.state != "running", 90)
        lost_s = time.monotonic() - t1
        assert info.state == "node_lost" and info.instances[0].state == "lost", info
        # requeue = true: back to the queue, the loss in its history (its constraint names the gone host: it waits)
        again = eventually(lambda: call(system.scheduler.request_info.remote("n-requeue")),
                           lambda i: i.state == "pending", 60)
        assert again.state == "pending" and any("node.lost" in e.reason for e in again.history), again
        gone = eventually(lambda: [r.name for r in system.query("true").records], lambda got: host not in got, 60)
        assert host not in gone, gone
        with capsys.disabled():
            print(f"\n  node joined: a host in {joined_s:.1f} s; removed: its instance lost in {lost_s:.1f} s")
    finally:
        if node is not None:
            ray_cluster.remove_node(node)
        if host and (h := named_actor(host_name(host))) is not None:
            try:
                ray.kill(h, no_restart=True)  # the joined host is no actor of the booted system's
            except Exception:  # noqa: BLE001 - it died with its node
                pass
        system.shutdown()
    assert set(ray_nodes) == {"head", "node_a", "node_b"}


def test_shutdown_stops_the_host_of_a_node_that_joined_after_boot_and_its_work(ray_cluster, ray_nodes) -> None:
    """``System.shutdown`` stops what the default scheduler bound as nodes joined: that host's
    actor and its instances' (detached) actors; nothing of it is left running."""
    import ray

    from legionrm.naming import host_name, instance_actor_names, named_actor
    from legionrm.system import boot

    system = boot(SPEC, heartbeat_s=0.5, bind_nodes=True, node_vaults_too=False)
    node = None
    try:
        before = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        node = ray_cluster.add_node(num_cpus=1, resources={"node_d": 1})
        ray_cluster.wait_for_nodes()
        host = f"ray-{next(iter({n['NodeID'] for n in ray.nodes() if n.get('Alive')} - before))[:8]}"
        eventually(lambda: [r.name for r in system.query("true").records], lambda got: host in got, 60)
        r = system.schedule(SchedulingRequest(request_id="n-stop", identity=Identity(user="nodes"), objects=(
            ObjectRequest(class_name="Echo", cpus=0.5, memory_gb=0.1, constraint=f'$name == "{host}"'),)))
        assert r.ok and r.instances[0].host == host, r.message
        assert instance_actor_names(host + "~") and named_actor(host_name(host)) is not None
        system.shutdown()
        left = eventually(lambda: (instance_actor_names(host + "~"), named_actor(host_name(host))),
                          lambda got: got == ([], None), 30)
        assert left == ([], None), left
    finally:
        system.shutdown()
        if node is not None:
            ray_cluster.remove_node(node)
    assert set(ray_nodes) == {"head", "node_a", "node_b"}
