"""One ledger of GPU devices on a Ray-node host (issue 27 item 3): a Ray-actor instance and
runner work (a ``Command``) on the same node never see the same ``CUDA_VISIBLE_DEVICES``.
Ray would give an actor the devices its own count says are free, and Ray never sees the
runner's work, so the host picks the devices for both.  No Ray here: the node comes from a
fake ``ray.nodes()`` entry, and the host records the actor's options instead of creating it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from legionrm.hostobj import ray_node
from legionrm.hostobj.ray_node import NOSET_DEVICES, RayNodeHost, devices_env
from legionrm.models import Holder, InstanceRef, ReservationRequest, Resources

NODE = {"NodeID": "cd" * 28, "Alive": True, "NodeManagerAddress": "10.0.0.8", "NodeManagerHostname": "gpu-8",
        "Resources": {"CPU": 8.0, "GPU": 2.0, "memory": 16 * 1024**3}}
ACTOR = "legionrm.hostobj.ray_node:Probe"
WORK = "legionrm.hostobj.work:Command"


class Recorded(RayNodeHost):
    """A Ray-node host whose actors and runs are only recorded: the devices each was given."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.seen: dict[str, str] = {}  # instance id -> the CUDA_VISIBLE_DEVICES it was started with

    def _create_actor(self, actor_cls: Any, opts: dict[str, Any], args: dict[str, Any]) -> Any:
        env = (opts.get("runtime_env") or {}).get("env_vars", {})
        assert env.get(NOSET_DEVICES) == "1" or not env, "Ray must leave the host's choice alone"
        self.seen[opts["name"].rsplit("~", 1)[-1]] = env.get("CUDA_VISIBLE_DEVICES", "")
        return object()

    def _start_work(self, ref: InstanceRef, token: Any, args: dict[str, Any]) -> InstanceRef:
        self.seen[ref.instance_id.rsplit("~", 1)[-1]] = json.loads(args["env"])["CUDA_VISIBLE_DEVICES"]
        return ref.model_copy(update={"work": True})

    def reap(self) -> list[str]:  # nothing runs: nothing ends by itself
        return []


@pytest.fixture
def host(monkeypatch) -> Recorded:
    monkeypatch.setattr(ray_node, "find_node", lambda node_id: NODE)
    return Recorded("ray-cdcdcdcd", node_id=NODE["NodeID"])


def start(host: Recorded, impl: str, gpus: int, rid: str) -> InstanceRef:
    tok = host.make_reservation(ReservationRequest(request_id=rid, resource=host.name, holder=Holder(user="ann"),
                                                   resources=Resources(cpus=1, gpus=gpus)))
    ref = host.start_object(tok, impl.split(":")[1], Holder(user="ann"), impl=impl, args={"command": "true"})
    assert isinstance(ref, InstanceRef), ref
    return ref


@pytest.mark.parametrize("first, second", [
    pytest.param(ACTOR, WORK, id="an-actor-then-a-command"),
    pytest.param(WORK, ACTOR, id="a-command-then-an-actor"),
    pytest.param(ACTOR, ACTOR, id="two-actors"),
    pytest.param(WORK, WORK, id="two-commands"),
])
def test_two_kinds_of_work_on_one_node_never_share_a_device(host: Recorded, first: str, second: str) -> None:
    a, b = start(host, first, 1, "r1"), start(host, second, 1, "r2")
    assert (a.gpus, b.gpus) == ((0,), (1,))
    assert sorted(host.seen.values()) == ["0", "1"]


def test_a_stopped_instances_device_is_free_again_whichever_kind(host: Recorded) -> None:
    a, _ = start(host, ACTOR, 1, "r1"), start(host, WORK, 1, "r2")
    host.stop_object(a.instance_id, "done")
    assert start(host, WORK, 1, "r3").gpus == (0,)


def test_no_gpu_asked_none_given_and_ray_left_alone(host: Recorded) -> None:
    ref = start(host, ACTOR, 0, "r1")
    assert ref.gpus == () and host.seen == {"i1": ""}


def test_a_restarted_host_reads_the_ledger_back_from_its_instances(host: Recorded, monkeypatch) -> None:
    start(host, ACTOR, 1, "r1")
    host._gpus.clear()  # what a restart of its actor forgets (its instances are restored from its state)
    host._actors.clear()
    monkeypatch.setattr(ray_node.ray, "get_actor", lambda name, namespace=None: object())  # found again by name
    monkeypatch.setattr(ray_node, "instance_actor_names", lambda prefix="": [])
    assert host.reattach() == []
    assert start(host, WORK, 1, "r2").gpus == (1,)


def test_devices_env_keeps_the_classes_own_runtime_env() -> None:
    env = devices_env({"env_vars": {"A": "1"}, "pip": ["x"]}, (1,))
    assert env == {"pip": ["x"], "env_vars": {"A": "1", "CUDA_VISIBLE_DEVICES": "1", NOSET_DEVICES: "1"}}
