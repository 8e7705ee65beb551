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
from legionrm.config import load_cluster
from legionrm.gateway.app import make_app
from legionrm.gateway.control import RayControlPlane
from legionrm.gateway.serve import in_thread
from legionrm.system import boot

pytestmark = pytest.mark.ray
WORKER = {"object": [{"class_name": "Worker", "count": 1, "cpus": 1}]}


@pytest.fixture(scope="module")
def door(ray_cluster):
    home = tempfile.mkdtemp(prefix="lrm-gw")
    ensure_home(home, operator="ops")
    reg = Registry(auth_home(home))
    keys = {u: reg.add_user(u).private_key for u in ("alice", "bob")}
    system = boot(load_cluster(), heartbeat_s=0.5, auth_home=home)
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
