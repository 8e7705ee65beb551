"""Issue 27 item 6 live: ``legionrm reload`` changes a running system's QoS and a host's
owner policy through the gateway, each at once (a lowered QoS limit holds the next request
pending with the limit as its reason; a host whose new policy refuses a user is given none
of that user's work), and a refused reload changes nothing.  One scheduler, one host group
of two hosts: few actors on the lean cluster."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from legionrm.auth.guard import auth_home, ensure_home, signer_for
from legionrm.auth.keys import load_private_key
from legionrm.auth.registry import Registry
from legionrm.client.client import Client
from legionrm.client.credentials import Credentials
from legionrm.config import parse_cluster
from legionrm.gateway.app import make_app
from legionrm.models.requests import FINAL_STATES
from legionrm.gateway.control import RayControlPlane
from legionrm.gateway.serve import in_thread
from legionrm.scheduler.several import Roster
from legionrm.system import boot
from legionrm.tomlio import loads_toml
from tests.faults import back, pid_of

pytestmark = pytest.mark.ray
CLUSTER = """
[[host]]
name = "h"
count = 2
nodepool = "p"
attributes = { cpus = 2, memory_gb = 4 }

[[class]]
name = "Worker"

[[qos]]
name = "normal"
default = true

[[qos]]
name = "small"
max_running_cpus_per_user = 4
"""
LIMIT = ("max_running_cpus_per_user = 4", "max_running_cpus_per_user = 1")
DENY_H1 = 'name = "h"\ncount = 2', 'name = "h1"\nattributes = { cpus = 2, memory_gb = 4 }\nnodepool = "p"\n' \
    'policy = "DenyUsers"\npolicy_args = { names = ["alice"] }\n\n[[host]]\nname = "h2"'
WORKER = {"object": [{"class_name": "Worker", "count": 1, "cpus": 1, "memory_gb": 1}]}


@pytest.fixture(scope="module")
def live(ray_cluster):
    home = tempfile.mkdtemp(prefix="lrm-reload")
    ensure_home(home, operator="ops")
    alice = Registry(auth_home(home)).add_user("alice").private_key
    spec = parse_cluster(loads_toml(CLUSTER), file="live.toml")
    system = boot(spec, heartbeat_s=0.5, auth_home=home, state_dir=f"{home}/state")  # (kept: a restart takes it back)
    (Path(home) / "live.toml").write_text(CLUSTER)
    (Path(home) / "up.json").write_text(json.dumps({"roster": Roster.of(spec).as_json(),
                                                    "cluster": str(Path(home) / "live.toml")}))
    ops = signer_for(home, "ops")
    try:
        with in_thread(make_app(RayControlPlane(home), home)) as url:
            admin_key = load_private_key(Registry(auth_home(home)).key_path("ops"))
            yield (Client.from_credentials(Credentials.of(url, "alice", alice).write(f"{home}/a.cred")),
                   Client.from_credentials(Credentials.of(url, "ops", admin_key).write(f"{home}/o.cred")), system)
    finally:
        dataclasses.replace(system, signer=ops).shutdown()
        shutil.rmtree(home, ignore_errors=True)


def everything(alice: Client, ops: Client) -> tuple:
    """What a reload may change, as the system shows it."""
    return (ops.pools().pools, ops.prio().weights, sorted((i.id, i.state) for i in alice.list()),
            sorted((h.name, h.owner_policy) for h in ops.hosts().hosts), sorted(h.name for h in alice.hosts().hosts))


def test_a_qos_limit_reloaded_holds_the_next_request_pending_at_once(live) -> None:
    alice, ops, _ = live
    first = alice.submit({**WORKER, "qos": "small"}, id="q-first")
    assert first.ok, first.response
    assert "site policy (qos, fair share)" in ops.reload(CLUSTER.replace(*LIMIT), "live.toml").changes
    second = alice.submit({**WORKER, "qos": "small"}, id="q-second")
    info = alice.show("q-second")
    assert not second.ok and info.state == "pending" and info.reason.startswith("qos.max_running_cpus_per_user")
    for rid in ("q-first", "q-second"):
        alice.cancel(rid)


def test_a_host_policy_reloaded_takes_no_more_of_that_users_work(live) -> None:
    alice, ops, _ = live
    assert {h.name for h in alice.hosts().hosts} == {"h1", "h2"}
    got = ops.reload(CLUSTER.replace(*LIMIT).replace(*DENY_H1), "live.toml").changes
    assert "host h1 policy and access" in got
    assert {h.name for h in alice.hosts().hosts} == {"h2"}  # the Collection no longer offers h1 to alice
    for i in range(2):  # (a cancel of the test before frees its cpus at the host's next heartbeat: they may wait a beat)
        alice.submit(WORKER, id=f"p-{i}")
    placed = [alice.wait(f"p-{i}", timeout=30, until=("running", *FINAL_STATES)) for i in range(2)]
    assert [p.state for p in placed] == ["running", "running"], [(p.state, p.reason) for p in placed]
    assert {p.instances[0].host for p in placed} == {"h2"}
    third = alice.submit(WORKER, id="p-2")  # h2 is full, and h1 refuses alice: it waits
    assert not third.ok and alice.show("p-2").state == "pending"
    for rid in ("p-0", "p-1", "p-2"):
        alice.cancel(rid)


def test_a_host_group_ray_restarts_takes_the_reloaded_policy_back(live) -> None:
    """The reload of the test before gave h1 an owner's policy: written to the group's state
    first, so the actor Ray restarts (the same boot) judges by it again, not by the file of `up`."""
    import ray

    from legionrm.system import call

    alice, ops, system = live
    ops.reload(CLUSTER.replace(*LIMIT).replace(*DENY_H1), "live.toml")  # (as the test before left it)
    (group,) = system.groups.values()

    def policy() -> str | None:  # h1's policy, read inside the actor
        return call(group.__ray_call__.remote(lambda g: getattr(g.core.get("h1").policy, "name", None)), 5)

    old_pid = pid_of(group)
    assert policy() == "DenyUsers(alice)"
    ray.kill(group, no_restart=False)
    back(group, old_pid)  # a fresh process answers
    after = policy()
    assert after == "DenyUsers(alice)"  # not the file's (no policy)
    assert {h.name for h in alice.hosts().hosts} == {"h2"}


def test_a_refused_reload_changes_nothing(live) -> None:
    alice, ops, _ = live
    ops.reload(CLUSTER.replace(*LIMIT).replace(*DENY_H1), "live.toml")
    alice.submit({**WORKER, "qos": "small"}, id="r-held")
    held = alice.wait("r-held", timeout=30, until=("running", *FINAL_STATES))  # (the cpus the test before freed: a beat)
    assert held.state == "running", held.reason
    before = everything(alice, ops)
    dropped = (CLUSTER.replace('name = "small"', 'name = "tiny"') + "\n[fairshare.weights]\nqos = 5\n"
               ).replace(*DENY_H1).replace('names = ["alice"]', 'names = ["bob"]')
    with pytest.raises(Exception) as err:  # r-held runs in `small`: the file drops it
        ops.reload(dropped, "live.toml")
    assert getattr(err.value, "code", "") == "reload.refused" and "r-held" in str(err.value)
    assert "\n" not in str(err.value)
    assert everything(alice, ops) == before
    alice.cancel("r-held")
