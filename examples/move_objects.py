"""A user's program that moves an object between Ray nodes and keeps its state.

    python examples/move_objects.py        # starts a private local Ray of two worker nodes

It starts a Counter on one node, counts, deactivates it (its state rests in
that node's vault and the node's cpus come back), re-activates it on the
other node (the state is copied to that node's vault and restored), counts
again, and migrates it back (the new place is started before the old one is
released).  The count survives every move.
"""

from __future__ import annotations

from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    HostSpec,
    Identity,
    ObjectRequest,
    ObjectStatus,
    SchedulingRequest,
    VaultSpec,
)
from legionrm.system import boot, call, instance_actor, local_cluster, node_ids

SPEC = ClusterSpec(
    hosts=(HostSpec(name="ray-a", nodepool="ray"), HostSpec(name="ray-b", nodepool="ray")),
    # each node has a vault of its own: a state moving between nodes moves between vaults
    vaults=tuple(VaultSpec(name=f"vault-{x}", serves=(f"ray-{x}",), attributes={"storage_gb": 1.0, "serves": f"ray-{x}"})
                 for x in "ab"),
    classes=(ClassSpec(name="Counter", implementation="legionrm.hostobj.ray_node:Counter", host_list=("ray-*",)),),
)


def count(object_status: ObjectStatus) -> int:
    return call(instance_actor(object_status.instance.instance_id).value.remote())


def run(system) -> None:
    r = system.schedule(SchedulingRequest(request_id="counter", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Counter", cpus=0.5, memory_gb=0.1, constraint='$name == "ray-a"'),)))
    assert r.ok, r.message
    oid = r.instances[0].instance_id
    print(f"{oid} runs on {r.instances[0].host}; counts to",
          call([instance_actor(oid).increment.remote() for _ in range(3)])[-1])

    inert = system.deactivate(oid)
    print(f"deactivated: {inert.message}")
    back = system.activate_on(oid, '$name == "ray-b"')
    print(f"re-activated on {back.host} as {back.instance.instance_id}: count {count(back)}")
    call(instance_actor(back.instance.instance_id).increment.remote())
    moved = system.migrate(oid, '$name == "ray-a"')
    print(f"migrated to {moved.host} as {moved.instance.instance_id}: count {count(moved)}")


def main() -> None:
    with local_cluster(("node_a", "node_b")):
        nodes = node_ids()
        system = boot(SPEC, ray_nodes={"ray-a": nodes["node_a"], "ray-b": nodes["node_b"]}, heartbeat_s=0.5)
        try:
            run(system)
        finally:
            system.shutdown()


if __name__ == "__main__":
    main()
