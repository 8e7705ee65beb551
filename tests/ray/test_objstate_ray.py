"""Objects' persistent state on Ray: a counter object moves between the two
Ray worker nodes (migrated, then deactivated into a vault and re-activated)
and keeps its count; a stranger cannot move it.  A small system of its own
(two Ray-node hosts, each with the vault of its own that boot gives it, pinned to
its node, as for `legionrm up`; one class), with signed calls."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile

import pytest

from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    ObjectStatus,
    SchedulingRequest,
)

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def live(ray_cluster, ray_nodes):
    from legionrm.auth import Registry
    from legionrm.auth.guard import auth_home, ensure_home, signer_for
    from legionrm.system import boot

    home = tempfile.mkdtemp(prefix="lrm-objstate")
    ensure_home(home, operator="ops")
    reg = Registry(auth_home(home))
    for u in ("alice", "mallory"):
        reg.add_user(u)
    spec = ClusterSpec(  # each Ray node gets a vault of its own, as `legionrm up` gives it: vault-a, vault-b
        hosts=(HostSpec(name="ray-a", nodepool="ray"), HostSpec(name="ray-b", nodepool="ray")),
        classes=(ClassSpec(name="Counter", implementation="legionrm.hostobj.ray_node:Counter", host_list=("ray-*",)),),
    )
    system = boot(spec, ray_nodes={"ray-a": ray_nodes["node_a"], "ray-b": ray_nodes["node_b"]}, heartbeat_s=0.5,
                  auth_home=home, node_vaults_too=True)
    system = dataclasses.replace(system, signer=signer_for(home, "ops"))  # the operator: an administrator
    as_user = {u: dataclasses.replace(system, signer=signer_for(home, u)) for u in ("alice", "mallory")}
    try:
        yield system, as_user
    finally:
        system.shutdown()
        shutil.rmtree(home, ignore_errors=True)


def test_a_counter_keeps_its_count_across_nodes(live, ray_nodes) -> None:
    import ray

    from legionrm.system import call, instance_actor

    system, users = live
    alice = users["alice"]
    r = alice.schedule(SchedulingRequest(request_id="counter", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Counter", cpus=0.5, memory_gb=0.1, constraint='$name == "ray-a"'),)))
    assert r.ok, r.message
    oid = r.instances[0].instance_id
    counter = instance_actor(oid)
    assert call([counter.increment.remote() for _ in range(3)], 30) == [1, 2, 3]

    # a stranger may not move it
    with pytest.raises(Exception, match="auth.not_owner"):
        users["mallory"].migrate(oid, '$name == "ray-b"')

    # each node's vault runs on its node (its shelf is that node's disk)
    assert {v: call(h.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id()), 30)
            for v, h in system.vaults.items()} == {"vault-a": ray_nodes["node_a"], "vault-b": ray_nodes["node_b"]}

    # migrate: the new copy on node_b holds the count; the old copy is gone
    moved = alice.migrate(oid, '$name == "ray-b"')
    assert isinstance(moved, ObjectStatus), moved
    assert moved.host == "ray-b" and moved.object_id == oid
    there = instance_actor(moved.instance.instance_id)
    assert call(there.value.remote(), 30) == 3
    assert call(there.where.remote(), 30) == ray_nodes["node_b"]
    assert call(system.nodes["ray-a"].list_instances.remote(proof=system.signer.sign("list_instances", {"host": None}, to="ray-a")), 30) == []
    assert call(there.increment.remote(), 30) == 4

    # deactivate into node_b's vault, re-activate on node_a: the state is copied across vaults
    inert = alice.deactivate(oid)
    assert (inert.state, inert.vault) == ("inert", "vault-b") and inert.saved_bytes > 0, inert
    assert call(system.vaults["vault-b"].stored.remote(proof=system.signer.sign("stored", {}, to="vault-b")), 30) == {oid: inert.saved_bytes}
    assert call(system.nodes["ray-b"].list_instances.remote(proof=system.signer.sign("list_instances", {"host": None}, to="ray-b")), 30) == []
    back = alice.activate_on(oid, '$name == "ray-a"')
    assert isinstance(back, ObjectStatus) and back.host == "ray-a", back
    again = instance_actor(back.instance.instance_id)
    assert call(again.value.remote(), 30) == 4 and call(again.where.remote(), 30) == ray_nodes["node_a"]
    assert [call(v.stored.remote(proof=system.signer.sign("stored", {}, to=n)), 30) for n, v in system.vaults.items()] == [{}, {}]
    changes = call(system.scheduler.status_changes.remote(0.0, proof=alice.signer.sign("status_changes", {"after": 0.0}, to="scheduler")))
    assert [(c.kind, c.from_host, c.host) for c in changes] == [
        ("migrated", "ray-a", "ray-b"), ("deactivated", "ray-b", None), ("activated", "ray-b", "ray-a")]


def test_down_leaves_no_instance_actor_running(live) -> None:
    """Instance actors are detached: one whose host actor is gone outlives it;
    what ``legionrm down`` runs on a system it did not start Ray for kills the
    system's named actors and every instance actor, so none is left.  Runs
    last: it takes the module's system down."""
    import ray

    from legionrm.cli.updown import kill_system_actors
    from legionrm.naming import NAMESPACE, instance_actor_names, instance_name
    from legionrm.testing import eventually

    system, users = live
    r = users["alice"].schedule(SchedulingRequest(request_id="orphaned", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Counter", cpus=0.25, memory_gb=0.1, constraint='$name == "ray-b"'),)))
    assert r.ok, r.message
    ray.kill(system.nodes["ray-b"], no_restart=True)  # its host cannot stop it any more
    assert instance_name(r.instances[0].instance_id) in instance_actor_names()  # survived its host's actor
    assert kill_system_actors(system.names()) >= 2
    def left() -> set[str]:  # ray.kill ends an actor a moment after it is asked
        return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == NAMESPACE}

    still = eventually(left, lambda names: not names & set(system.names()) and instance_actor_names() == [])
    assert instance_actor_names() == [] and still.isdisjoint(system.names()), still
