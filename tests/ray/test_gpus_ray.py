"""GPUs, custom resources and an owner's rule on a real Ray node (issue 27
items 3 and 4).  A worker node faked as a GPU node (``num_gpus=1``, Ray's
``--num-gpus`` on a CPU node) with a custom resource ``tpu = 2`` joins the
session's lean cluster; a small system binds it as host ``ray-gpu``, and a
``[[ray_node]]`` rule gives that host its nodepool and an owner's policy
(one instance per user) whose refusals are lasting.  The node leaves again at the end."""

from __future__ import annotations

import pytest

from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    Identity,
    ObjectRequest,
    RayNodeRule,
    SchedulingRequest,
)

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def gpu_system(ray_cluster):
    from legionrm.system import boot, node_ids

    node = ray_cluster.add_node(num_cpus=1, num_gpus=1, resources={"gpu_node": 1, "tpu": 2})
    ray_cluster.wait_for_nodes()
    system = None
    try:
        node_id = node_ids(("gpu_node",))["gpu_node"]
        spec = ClusterSpec(  # the host is named by boot; what it is comes from the rule its node matches
            ray_nodes=(RayNodeRule(hostname="*", nodepool="gpu", policy="MaxInstancesPerUser",
                                   policy_args={"limit": 1, "lasting": True}),),
            classes=(ClassSpec(name="Probe", implementation="legionrm.hostobj.ray_node:Probe"),),
        )
        system = boot(spec, ray_nodes={"ray-gpu": node_id}, heartbeat_s=0.5, auth_home=False)
        yield system
    finally:
        if system is not None:
            system.shutdown()
        ray_cluster.remove_node(node)


def req(rid: str, user: str = "alice", cpus: float = 0.5, **need: object) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user), wait=False, objects=(
        ObjectRequest(class_name="Probe", cpus=cpus, memory_gb=0.1, **need),))


def test_a_ray_actor_sees_the_devices_its_host_picked_not_rays_own(gpu_system) -> None:
    """Ray counts the actor's GPU (its own pick is device 0, the node's only one), but the actor
    sees the device the host's ledger gave it (here 1): Ray leaves CUDA_VISIBLE_DEVICES alone.
    (First in the file: later tests hold the node's GPU.)"""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from legionrm.hostobj.ray_node import Probe, devices_env
    from legionrm.system import call, node_ids

    node = node_ids(("gpu_node",))["gpu_node"]
    probe = ray.remote(Probe).options(num_cpus=0, num_gpus=1, runtime_env=devices_env(None, (1,)),
                                      scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
    try:
        where = call(probe.where.remote(), 60)
        assert where["resources"].get("GPU") == 1.0 and where["cuda_visible_devices"] == "1", where
    finally:
        ray.kill(probe)


def test_a_fake_gpu_node_takes_a_gpu_request_and_the_work_sees_its_gpu(gpu_system) -> None:
    from legionrm.system import call, instance_actor

    r = gpu_system.schedule(req("g1", gpus=1, resources={"tpu": 1}))
    assert r.ok, r.message
    assert [i.host for i in r.instances] == ["ray-gpu"]
    where = call(instance_actor(r.instances[0].instance_id).where.remote())
    assert where["resources"].get("GPU") == 1.0 and where["resources"].get("tpu") == 1.0, where
    assert where["cuda_visible_devices"] == "0"
    # one GPU: a second GPU request finds none free, and the host's calendar never books two
    again = gpu_system.schedule(req("g2", gpus=1))
    assert not again.ok
    assert "capacity" in {f.code for f in again.failures}, again.failures


def test_the_owner_rule_on_the_node_refuses_for_good(gpu_system) -> None:
    """The rule's owner allows one instance per user there, and says so for good."""
    assert gpu_system.schedule(req("b1", user="bob", cpus=0.25)).ok
    r = gpu_system.schedule(req("b2", user="bob", cpus=0.25))
    assert not r.ok
    assert any(f.lasting and f.code == "policy.instances" and f.resource == "ray-gpu" for f in r.failures), \
        r.failures
