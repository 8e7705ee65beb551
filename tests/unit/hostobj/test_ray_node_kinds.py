"""A Ray node as Ray sees it, without Ray (issue 27 items 3 and 4): its
capacity (GPUs and custom resources), its attributes (custom kinds, labels,
hostname), the GPU devices a runner's work is given, the ``[[ray_node]]``
rules that say what host a node is, and an owner's HostObject subclass on a
Ray node."""

from __future__ import annotations

import pytest

from legionrm.config import parse_cluster
from legionrm.errors import ConfigError
from legionrm.hostobj import build_host
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.ray_node import custom_resources, gpu_devices, node_attributes, node_capacity
from legionrm.models import HostSpec, Refusal

NODE = {
    "NodeID": "ab" * 28, "Alive": True, "NodeManagerAddress": "10.0.0.7", "NodeManagerHostname": "gpu-7",
    "Labels": {"ray.io/node_id": "x", "zone": "east"},
    "Resources": {"CPU": 4.0, "GPU": 1.0, "memory": 8 * 1024**3, "object_store_memory": 1e9,
                  "node:10.0.0.7": 1.0, "accelerator_type:T4": 1.0, "tpu": 2.0, "my-kind": 3.0},
}


def test_capacity_is_rays_view_gpus_and_custom_kinds_included() -> None:
    cap = node_capacity(NODE)
    assert (cap.cpus, cap.memory_gb, cap.gpus) == (4.0, 8.0, 1)
    assert cap.custom == (("my_kind", 3.0), ("tpu", 2.0))
    assert custom_resources(NODE) == {"tpu": "tpu", "my_kind": "my-kind"}  # MIL's name -> Ray's name


def test_attributes_carry_custom_kinds_labels_and_hostname_but_not_rays_own() -> None:
    attrs = node_attributes(NODE)
    assert attrs["tpu"] == 2.0 and attrs["my_kind"] == 3.0
    assert attrs["label_zone"] == "east" and "label_ray_io_node_id" not in attrs
    assert attrs["node_hostname"] == "gpu-7" and attrs["node_ip"] == "10.0.0.7"
    assert not any(k.startswith(("node_10", "accelerator", "CPU", "GPU", "object_store")) for k in attrs)


@pytest.mark.parametrize("held, total, want, got", [
    pytest.param({}, 2, 1, (0,), id="the-lowest-first"),
    pytest.param({"a": (0,)}, 2, 1, (1,), id="not-one-held"),
    pytest.param({"a": (1,)}, 4, 2, (0, 2), id="skips-the-held"),
    pytest.param({}, 2, 0, (), id="none-asked-none-seen"),
])
def test_gpu_devices(held: dict, total: int, want: int, got: tuple) -> None:
    assert gpu_devices(held, total, want) == got


RULES = """
[[ray_node]]
ip = "10.0.0.*"
labels = { zone = "east" }
nodepool = "gpu"
attributes = { site = "lab" }
policy = "AllowUsers"
policy_args = { names = ["bob"], lasting = true }

[[ray_node]]
hostname = "cpu-*"
nodepool = "cpu"
"""


@pytest.mark.parametrize("node, pool, policy", [
    pytest.param(NODE, "gpu", "AllowUsers", id="ip-and-label-match-the-first-rule"),
    pytest.param({**NODE, "Labels": {"zone": "west"}}, None, None, id="a-label-that-differs-matches-none"),
    pytest.param({"NodeManagerHostname": "cpu-3"}, "cpu", None, id="hostname-matches-the-second"),
])
def test_ray_node_rules_say_what_host_a_node_is(node: dict, pool: str | None, policy: str | None) -> None:
    import tomllib

    spec = parse_cluster(tomllib.loads(RULES))
    host = spec.node_host("ray-abababab", node)
    assert (host.name, host.nodepool, host.policy) == ("ray-abababab", pool, policy)


def test_a_host_table_of_the_nodes_name_wins_over_a_rule() -> None:
    import tomllib

    doc = tomllib.loads(RULES + '\n[[host]]\nname = "ray-abababab"\nnodepool = "mine"\n')
    assert parse_cluster(doc).node_host("ray-abababab", NODE).nodepool == "mine"


@pytest.mark.parametrize("table, key", [
    pytest.param({"nodepool": "x"}, None, id="matches-nothing"),
    pytest.param({"ip": "1.2.3.4", "colour": "red"}, "colour", id="unknown-key"),
    pytest.param({"ip": "1.2.3.4", "policy": "AllowUsers", "policy_args": {"names": ["a"], "lasting": "yes"}},
                 "policy", id="lasting-not-a-boolean"),
    pytest.param({"labels": {"zone": 1}}, None, id="label-pattern-not-a-string"),
])
def test_bad_ray_node_rules_are_refused(table: dict, key: str | None) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cluster({"ray_node": [table]})
    assert "ray_node[0]" in str(err.value) and (key is None or key in str(err.value))


class Owned(HostObject):
    """An owner's host: refuses bob for good."""

    def admit_reservation(self, request):
        if request.holder.user == "bob":
            return Refusal(code="policy.owner", reason="not bob", lasting=True)
        return super().admit_reservation(request)


class FakeNodeHost(HostObject):
    """Stands in for RayNodeHost (the base class a Ray node's host is built on)."""

    on_node = True


def test_an_owners_host_object_on_a_ray_node_keeps_its_hooks_and_the_nodes_work() -> None:
    spec = HostSpec(name="ray-1", attributes={"cpus": 2}, policy="tests.unit.hostobj.test_ray_node_kinds:Owned")
    host = build_host(spec, cls=FakeNodeHost)
    assert isinstance(host, Owned) and isinstance(host, FakeNodeHost)
    assert type(host).__name__ == "Owned" and host.dynamic_attributes()["owner_policies"] == 1
    from legionrm.models import Holder, ReservationRequest, Resources

    out = host.make_reservation(ReservationRequest(request_id="r", resource="ray-1", holder=Holder(user="bob"),
                                                   resources=Resources(cpus=1)))
    assert isinstance(out, Refusal) and out.lasting and out.by == "ray-1"


@pytest.mark.parametrize("args, env", [
    pytest.param({"command": "x"}, {"CUDA_VISIBLE_DEVICES": "0,2"}, id="no-env-gets-one"),
    pytest.param({"env": '{"A": "1", "CUDA_VISIBLE_DEVICES": "7"}'}, {"A": "1", "CUDA_VISIBLE_DEVICES": "0,2"},
                 id="the-grant-wins-over-the-request"),
    pytest.param({"env": "not json"}, None, id="a-malformed-env-is-left-for-the-runner"),
])
def test_runner_work_sees_only_its_devices(args: dict, env: dict | None) -> None:
    import json

    from legionrm.hostobj.ray_node import with_devices

    out = with_devices(args, (0, 2))
    assert (json.loads(out["env"]) if env is not None else out) == (env if env is not None else args)
