"""Issue 24 live: the front door over the Ray control plane.  Users hold only a
credentials file; the gateway (RayControlPlane) signs as its agent acting for
each, and the actors' doors judge the user's own call."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile

import pytest

from legionrm.auth.guard import auth_home, ensure_home, signer_for
from legionrm.auth.registry import Registry
from legionrm.client.client import Client
from legionrm.client.credentials import Credentials
from legionrm.client.errors import ForbiddenError
from legionrm.gateway.app import make_app
from legionrm.gateway.control import RayControlPlane
from legionrm.gateway.serve import in_thread
from legionrm.system import boot
from tests.clusters import lean_cluster

pytestmark = pytest.mark.ray
WORKER = {"object": [{"class_name": "Worker", "count": 1, "cpus": 1}]}


@pytest.fixture(scope="module")
def door(ray_cluster):
    home = tempfile.mkdtemp(prefix="lrm-gw")
    ensure_home(home, operator="ops")
    reg = Registry(auth_home(home))
    keys = {u: reg.add_user(u).private_key for u in ("alice", "bob")}
    system = boot(lean_cluster(), heartbeat_s=0.5, auth_home=home)
    app = make_app(RayControlPlane(home), home, dashboard_user="ops", dashboard_key="k")
    try:
        with in_thread(app) as url:
            paths = {}
            for user, key in keys.items():
                paths[user] = Credentials.of(url, user, key).write(f"{home}/{user}.credentials")
            yield url, paths
    finally:
        dataclasses.replace(system, signer=signer_for(home, "ops")).shutdown()
        shutil.rmtree(home, ignore_errors=True)


def test_submit_list_show_cancel_with_only_a_credentials_file(door) -> None:
    _, paths = door
    alice, bob = Client.from_credentials(paths["alice"]), Client.from_credentials(paths["bob"])
    r = alice.submit(WORKER)
    assert r.ok, r.response
    assert [i.id for i in alice.list()] == [r.id] and bob.list() == []
    info = alice.show(r.id)
    assert info.user == "alice" and info.instances
    with pytest.raises(ForbiddenError) as e:
        bob.cancel(r.id)
    assert e.value.code == "auth.not_owner"
    assert alice.cancel(r.id).state == "cancelled"
    assert alice.query("$cpus >= 1").names and alice.hosts().hosts


def test_the_dashboard_state_answers_without_errors(door) -> None:
    import httpx
    url, _ = door
    view = httpx.get(url + "/api/state", params={"key": "k"}, timeout=30).json()
    assert view["errors"] == [] and view["hosts"]


def test_the_queue_on_ray_refuses_a_users_priority_and_shows_share_and_prio(door) -> None:
    _, paths = door
    alice = Client.from_credentials(paths["alice"])
    r = alice.submit({**WORKER, "priority": 5})
    assert (r.ok, r.state, r.response.failures[0].code) == (False, "refused", "request.priority")
    held = alice.submit({**WORKER, "hold": True})
    assert (held.state, alice.show(held.id).hold) == ("pending", "user")
    assert [(p.id, p.hold) for p in alice.prio().rows] == [(held.id, "user")]
    assert alice.release(held.id).state == "running"
    assert alice.cancel(held.id).state == "cancelled"
    assert alice.share().half_life_s == 604_800 and all(row.user in (None, "alice") for row in alice.share().rows)


def test_dependencies_arrays_and_owner_holds_live(door) -> None:
    """Issue 26 item 5 on Ray through the gateway: after_ok waits then starts, after_not_ok is
    cancelled when its dependency completed, an array runs at most its limit and is one line in
    ``list``, and only its owner holds a request."""
    _, paths = door
    alice, bob = Client.from_credentials(paths["alice"]), Client.from_credentials(paths["bob"])
    a = alice.submit({**WORKER, "walltime_s": 3})
    assert a.ok, a.response
    b = alice.submit({**WORKER, "after_ok": [a.id], "walltime_s": 30})
    c = alice.submit({**WORKER, "after_not_ok": [a.id]})
    assert (b.state, c.state) == ("pending", "pending")
    assert alice.show(b.id).reason.startswith("depend.waiting: waits for after_ok")
    with pytest.raises(ForbiddenError) as e:
        bob.hold(b.id)
    assert e.value.code == "auth.not_owner"
    arr = alice.submit({**WORKER, "walltime_s": 2, "array": "0-3%2"})
    assert arr.response.message.startswith(f"array {arr.id}: 4 tasks")
    counts = alice.show(arr.id).array_counts
    assert counts.get("running", 0) <= 2 and sum(counts.values()) == 4
    assert [i.id for i in alice.list() if i.id.startswith(arr.id)] == [arr.id]  # one line
    assert alice.wait(b.id, timeout=60, until=("running", "completed", "failed", "cancelled")).state == "running"
    ended_c = alice.wait(c.id, timeout=30)
    assert (ended_c.state, ended_c.reason.split(":")[0]) == ("cancelled", "depend.never")
    done = alice.wait(arr.id, timeout=90)
    assert (done.state, done.array_counts) == ("completed", {"completed": 4})
    tasks = [alice.show(f"{arr.id}_{i}") for i in range(4)]
    starts = sorted((h.at, +1) for t in tasks for h in t.history if h.state == "running")
    ends = sorted((t.history[-1].at, -1) for t in tasks)
    at_once = 0
    for _, step in sorted(ends + starts):
        at_once += step
        assert at_once <= 2
    assert alice.cancel(b.id).state == "cancelled"
