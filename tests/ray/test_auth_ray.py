"""Issue 15 live: an authenticated system on Ray.  alice's work runs; mallory,
who has seen every id, cannot stop, cancel or start anything of alice's at
the hosts or the class object, and her views show only her own work; the
Scheduler's and the Enactor's own signed calls still stop and cancel."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time

import pytest

from legionrm.models import Identity, ObjectRequest, SchedulingRequest

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def live(ray_cluster):
    from legionrm.auth import Registry
    from legionrm.auth.guard import auth_home, ensure_home, signer_for
    from legionrm.config import load_cluster
    from legionrm.system import boot

    home = tempfile.mkdtemp(prefix="lrm-auth")
    ensure_home(home, operator="ops")
    reg = Registry(auth_home(home))
    for u in ("alice", "mallory"):
        reg.add_user(u)
    system = boot(load_cluster(), heartbeat_s=0.5, auth_home=home)
    signers = {u: signer_for(home, u) for u in ("alice", "mallory", "ops")}
    try:
        yield system, signers
    finally:
        dataclasses.replace(system, signer=signers["ops"]).shutdown()
        shutil.rmtree(home, ignore_errors=True)


def test_a_stranger_cannot_touch_alices_work_at_the_hosts(live) -> None:
    import dataclasses

    from legionrm.system import call

    system, signers = live
    alice = dataclasses.replace(system, signer=signers["alice"])
    r = alice.schedule(SchedulingRequest(request_id="auth-a1", identity=Identity(user="mallory"),
                                         objects=(ObjectRequest(class_name="Worker", cpus=1, memory_gb=1,
                                                                constraint='$nodepool == "batch"'),)))
    assert r.ok, r.message
    inst = r.instances[0]
    assert inst.user == "alice"  # the identity is the signer's, whatever the request claimed
    group = system.groups["batch"]
    m = signers["mallory"]

    args = {"items": [inst.instance_id], "reason": "mine now"}
    got = call(group.stop_objects.remote([inst.instance_id], "mine now", proof=m.sign("stop_objects", args)))[0]
    assert got.code == "auth.not_owner"
    assert call(group.stop_objects.remote([inst.instance_id], "x"))[0].code == "auth.no_proof"
    tid = inst.token_id
    got = call(group.cancel_reservations.remote([tid], proof=m.sign("cancel_reservations", {"items": [tid]})))[0]
    assert got.code == "auth.not_owner"
    ops = signers["ops"]

    def running() -> set[str]:
        return {i.instance_id for i in call(group.list_instances.remote(proof=ops.sign("list_instances", {"host": None})))}

    assert inst.instance_id in running()

    # views: mallory sees none of it
    sched = system.scheduler
    assert call(sched.instances.remote(proof=m.sign("instances", {}))) == []
    assert call(sched.status.remote(proof=m.sign("status", {}))).instances == 0
    mine = call(sched.instances.remote(proof=signers["alice"].sign("instances", {})))
    assert [i.instance_id for i in mine] == [inst.instance_id]

    # alice cancels through the Scheduler: its own signed stop reaches the host
    a = signers["alice"]
    call(sched.cancel.remote("auth-a1", "done", proof=a.sign("cancel", {"request_id": "auth-a1", "reason": "done"})))
    deadline = time.time() + 15
    while time.time() < deadline and inst.instance_id in running():
        time.sleep(0.2)
    assert inst.instance_id not in running()


def test_only_the_enactor_creates_at_a_class_object(live) -> None:
    from legionrm.auth.hostdoor import create_args
    from legionrm.models import Holder, ReservationToken, Resources
    from legionrm.system import call

    system, signers = live
    fake = ReservationToken(token_id="batch1~x", issuer="batch1", holder=Holder(user="mallory"),
                            resources=Resources(cpus=1), start=0.0, end=None, expires_at=time.time() + 30)
    args = create_args("batch1", None, fake, {}, None, Holder(user="mallory"))
    got = call(system.classes["Worker"].create_instance.remote(
        "batch1", None, fake, {}, holder=Holder(user="mallory"), proof=signers["mallory"].sign("create_instance", args)))
    assert got.code == "auth.forbidden"
