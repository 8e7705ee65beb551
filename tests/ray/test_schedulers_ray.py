"""Issue 27 live: two schedulers on one system, each serving its own nodepool,
behind the gateway.  A request goes to the scheduler it names; show and list
find it whichever holds it; a drained host takes no new work; killing one
scheduler leaves the other's instances (and its own) running."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import ray

from legionrm.auth.guard import auth_home, ensure_home, signer_for
from legionrm.auth.registry import Registry
from legionrm.client.client import Client
from legionrm.client.credentials import Credentials
from legionrm.config import parse_cluster
from legionrm.gateway.app import make_app
from legionrm.gateway.control import RayControlPlane
from legionrm.gateway.serve import in_thread
from legionrm.scheduler.several import Roster
from legionrm.system import boot, call
from legionrm.tomlio import loads_toml

pytestmark = pytest.mark.ray
CLUSTER = """
[[host]]
name = "a"
count = 2
nodepool = "p1"
attributes = { cpus = 2, memory_gb = 4 }

[[host]]
name = "b"
count = 2
nodepool = "p2"
attributes = { cpus = 2, memory_gb = 4 }

[[class]]
name = "Worker"

[[scheduler]]
name = "one"
nodepools = ["p1"]

[[scheduler]]
name = "two"
nodepools = ["p2"]
"""


def worker(scheduler: str) -> dict:
    return {"scheduler": scheduler, "object": [{"class_name": "Worker", "count": 1, "cpus": 2}]}


@pytest.fixture(scope="module")
def two(ray_cluster):
    home = tempfile.mkdtemp(prefix="lrm-two")
    ensure_home(home, operator="ops")
    alice = Registry(auth_home(home)).add_user("alice").private_key
    spec = parse_cluster(loads_toml(CLUSTER), file="two.toml")
    system = boot(spec, heartbeat_s=0.5, auth_home=home)
    (Path(home) / "two.toml").write_text(CLUSTER)
    (Path(home) / "up.json").write_text(json.dumps({"roster": Roster.of(spec).as_json(),
                                                    "cluster": str(Path(home) / "two.toml")}))
    app = make_app(RayControlPlane(home), home)
    ops = signer_for(home, "ops")
    try:
        with in_thread(app) as url:
            users = {"alice": Client.from_credentials(Credentials.of(url, "alice", alice).write(f"{home}/a.cred"))}
            admin_key = Registry(auth_home(home)).key_path("ops")
            from legionrm.auth.keys import load_private_key

            users["ops"] = Client.from_credentials(Credentials.of(url, "ops", load_private_key(admin_key)).write(
                f"{home}/o.cred"))
            yield system, users, ops
    finally:
        dataclasses.replace(system, signer=ops).shutdown()
        shutil.rmtree(home, ignore_errors=True)


def test_each_request_goes_to_its_scheduler_and_is_found_by_the_gateway(two) -> None:
    system, users, _ = two
    alice = users["alice"]
    r1, r2 = alice.submit(worker("one"), id="s-one"), alice.submit(worker("two"), id="s-two")
    assert r1.ok and r2.ok, (r1.response, r2.response)
    assert alice.show("s-one").instances[0].host.startswith("a")
    assert alice.show("s-two").instances[0].host.startswith("b")
    assert {i.id for i in alice.list()} == {"s-one", "s-two"}
    rows = {r.name: r for r in users["ops"].schedulers().schedulers}
    assert rows["one"].default and rows["one"].requests.get("running") == 1 and rows["two"].instances == 1
    status = users["ops"].status()  # `status` lists every scheduler's queue too, as `schedulers` does
    assert [(s.name, s.requests.get("running"), s.instances) for s in status.schedulers] == [("one", 1, 1), ("two", 1, 1)]
    with pytest.raises(Exception) as err:
        alice.submit(worker("ghost"))
    assert getattr(err.value, "code", "") == "request.no_scheduler"


def test_a_drained_host_takes_no_new_work(two) -> None:
    _, users, _ = two
    alice, ops = users["alice"], users["ops"]
    busy = alice.show("s-two").instances[0].host
    free = "b2" if busy == "b1" else "b1"
    assert ops.drain(free, "fan noise").drained == "fan noise"
    deadline = time.monotonic() + 10
    while {h.name: h.drained for h in ops.hosts().hosts}.get(free) != "fan noise" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert {h.name: h.drained for h in ops.hosts().hosts}[free] == "fan noise"
    r = alice.submit({**worker("two"), "wait": False}, id="s-drained")
    assert not r.ok and "refused by drained (host.drained)" in r.response.message, r.response
    ops.resume(free)


POOLS = """
[[pool]]
path = "/fast"
cpu = { limit = 2 }
memory = { limit = 4096 }

[[pool]]
path = "/slow"
cpu = { limit = 1 }
memory = { limit = 4096 }
"""


def test_a_pool_created_by_reload_admits_work_at_once_and_a_refused_update_changes_nothing(two) -> None:
    _, users, _ = two
    alice, ops = users["alice"], users["ops"]
    assert set(ops.reload(CLUSTER + POOLS, "two.toml").changes) == {"pool create /fast", "pool create /slow"}
    r = alice.submit({**worker("two"), "pool": "/fast"}, id="s-fast")
    assert r.ok and alice.show("s-fast").pool == "/fast", r.response
    before = ops.pools().pools
    with pytest.raises(Exception) as err:  # a reservation past its limit: the validators say no
        ops.edit_pool("update", {"path": "/slow", "cpu": {"reservation": 9, "limit": 1}})
    assert getattr(err.value, "code", "") == "reload.refused" and "/slow" in str(err.value)
    assert ops.pools().pools == before
    alice.cancel("s-fast")


def test_killing_one_scheduler_leaves_the_others_instances_running(two) -> None:
    system, users, ops = two
    alice = users["alice"]
    theirs, mine = alice.show("s-one").instances[0], alice.show("s-two").instances[0]
    other = system.schedulers["two"]
    call(other.__ray_call__.remote(lambda self: setattr(self.core, "orphan_grace_s", 0.0)))
    ray.kill(system.schedulers["one"], no_restart=True)
    for _ in range(12):  # past one orphan sweep of "two" (every tenth tick), its own ticks aside
        call(other.tick.remote(proof=ops.sign("tick", {}, to="scheduler:two")))
    group = system.groups["p1"]
    running = call(group.list_instances.remote(None, proof=ops.sign("list_instances", {"host": None},
                                                                      to="hostgroup:p1")))
    assert theirs.id in {r.instance_id for r in running}
    now = alice.show("s-two")
    assert now.state == "running" and [(i.id, i.state) for i in now.instances] == [(mine.id, "running")]
    listed = {i.id for i in alice.list()}  # the gateway still answers: "one" is left out, "two" is there
    assert "s-two" in listed and "s-one" not in listed
