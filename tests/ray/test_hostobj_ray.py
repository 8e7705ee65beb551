"""Host objects on Ray: a real node as a host, a group actor, a class actor."""

from __future__ import annotations

import time
from typing import Any

import pytest
import ray

from legionrm import codes
from legionrm.hostobj.actor import spawn_class, spawn_host_group, spawn_ray_node_host
from legionrm.models import (
    ClassSpec,
    CreateRequest,
    Holder,
    HostSpec,
    InstanceRef,
    ReservationRequest,
    ReservationToken,
    Resources,
    StartRequest,
)
from legionrm.naming import NAMESPACE, instance_name

pytestmark = pytest.mark.ray
ANN = Holder(user="ann", class_name="Probe")
PROBE = "legionrm.hostobj.ray_node:Probe"


def test_ray_node_host_starts_a_pinned_actor_on_its_node(ray_nodes: dict[str, str]) -> None:
    node_b = ray_nodes["node_b"]
    host = spawn_ray_node_host(node_b, HostSpec(name="real-b", policy="AllowUsers", policy_args={"names": ["ann"]}),
                               heartbeat_s=60)
    try:
        rec = ray.get(host.record.remote())
        assert rec.attributes["cpus"] == 1.0 and rec.attributes["node_b"] == 1.0 and "node_a" not in rec.attributes
        assert rec.attributes["ray_node_id"] == node_b

        def ask(rid: str, user: str = "ann", cpus: float = 1.0):
            r = ReservationRequest(request_id=rid, resource="real-b", holder=Holder(user=user, class_name="Probe"),
                                   resources=Resources(cpus=cpus))
            return ray.get(host.make_reservation.remote(r))

        assert ask("x", cpus=2).code == codes.CAPACITY_TOTAL  # the node has one cpu
        assert ask("y", user="bob").code == codes.POLICY_USER
        tok = ask("a")
        assert isinstance(tok, ReservationToken)
        assert ask("b").code == codes.CAPACITY  # the last cpu is taken

        ref = ray.get(host.start_object.remote(tok, "Probe", ANN, None, {"tag": "hi"}, PROBE))
        assert isinstance(ref, InstanceRef) and ref.node_id == node_b
        actor = ray.get_actor(instance_name(ref.instance_id), namespace=NAMESPACE)
        where = ray.get(actor.where.remote(), timeout=60)
        assert where["node_id"] == node_b and where["tag"] == "hi"
        assert where["resources"].get("CPU") == 1.0  # Ray accounts exactly the reserved cpus

        assert ray.get(host.start_object.remote(tok, "Probe", ANN, None, {}, PROBE)).code == codes.TOKEN_USED
        assert ray.get(host.stop_object.remote(ref.instance_id, "done")) == tok.resources
        with pytest.raises(ray.exceptions.RayActorError):  # ray.kill is asynchronous: a call may still land first
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                ray.get(actor.where.remote(), timeout=30)
                time.sleep(0.1)
        assert isinstance(ask("c"), ReservationToken)  # the cpu is back
    finally:
        ray.get(host.shutdown.remote())
        ray.kill(host)


def _ports(self: Any) -> int:
    """Run inside a class actor (``__ray_call__``): how many distinct host ports it holds."""
    return len({id(p) for p in self._hosts.values()})


def test_group_actor_and_class_actor(ray_cluster) -> None:
    specs = [HostSpec(name=f"sim{i}", attributes={"cpus": 4, "memory_gb": 8}) for i in range(50)]
    group = spawn_host_group("t", specs, heartbeat_s=60)
    cls = spawn_class(ClassSpec(name="Probe", host_list=("sim1*",), max_instances=5), hosts={s.name: group for s in specs})
    try:
        reqs = [ReservationRequest(request_id=f"r{i}", resource=f"sim{i % 60}", holder=ANN, resources=Resources(cpus=4))
                for i in range(60)]
        out = ray.get(group.make_reservations.remote(reqs))  # one call for 60 requests
        assert sum(isinstance(o, ReservationToken) for o in out) == 50
        assert {o.code for o in out[50:]} == {codes.RESOURCE_UNKNOWN}
        refs = ray.get(group.start_objects.remote([StartRequest(token=out[0], class_name="Probe", holder=ANN)]))
        assert refs[0].host == "sim0"
        assert ray.get(cls.create_instance.remote("sim2", None, out[2])).code == codes.CLASS_HOST_LIST
        made = ray.get(cls.create_instance.remote("sim10", None, out[10]))
        assert isinstance(made, InstanceRef) and made.host == "sim10"
        assert len(ray.get(group.list_instances.remote())) == 2
        assert ray.get(cls.destroy_instance.remote(made.instance_id))
        assert ray.get(cls.__ray_call__.remote(_ports)) == 1  # one port for the 50 hosts of one group: one start call
        batch = [CreateRequest(host=f"sim{i}", token=out[i]) for i in (11, 2, 12, 13, 14, 15, 16)]  # one call
        got = ray.get(cls.create_instances.remote(batch), timeout=60)
        assert [g.host if isinstance(g, InstanceRef) else g.code for g in got] == [
            "sim11", codes.CLASS_HOST_LIST, "sim12", "sim13", "sim14", "sim15", codes.CLASS_MAX_INSTANCES]
        assert len(ray.get(group.list_instances.remote())) == 6
        assert ray.get(group.cancel_reservations.remote([out[3], out[3].token_id])) == [True, False]
    finally:
        ray.kill(cls)
        ray.get(group.shutdown.remote())
        ray.kill(group)
