"""Issue 15 live: an authenticated system on Ray.  alice's work runs; mallory,
who has seen every id, cannot stop, cancel or start anything of alice's at
the hosts or the class object, and her views show only her own work; the
Scheduler's and the Enactor's own signed calls still stop and cancel."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import tempfile
import time
from typing import Any

import pytest
import ray

from legionrm.models import Identity, ObjectRequest, ReservedStart, SchedulingRequest
from legionrm.models.intake import Cancel, Submit
from legionrm.objstate.actor import digest

pytestmark = pytest.mark.ray
EXTRA: dict[str, Any] = {}


@pytest.fixture(scope="module")
def live(ray_cluster):
    from legionrm.auth import Registry
    from legionrm.auth.guard import auth_home, ensure_home, signer_for
    from legionrm.config import load_cluster
    from tests.clusters import with_classes
    from legionrm.gateway.app import make_app
    from legionrm.gateway.control import RayControlPlane
    from legionrm.gateway.serve import in_thread
    from legionrm.hostobj.actor import spawn_host
    from legionrm.models import AccessPolicy, HostSpec
    from legionrm.system import boot

    home = tempfile.mkdtemp(prefix="lrm-auth")
    ensure_home(home, operator="ops")
    reg = Registry(auth_home(home))
    reg.add_user("alice", groups=("genomics",))  # bigmem's owners admit her; not mallory or visitor
    for u in ("mallory", "visitor"):
        reg.add_user(u)
    system = boot(with_classes(load_cluster(), "Worker"), heartbeat_s=0.5, auth_home=home)
    signers = {u: signer_for(home, u) for u in ("alice", "mallory", "visitor", "ops")}
    # one lone host actor (the host of a Ray node's kind), owned by genomics, and the gateway's dashboard
    EXTRA["home"] = home
    EXTRA["solo"] = spawn_host(HostSpec(name="solo1", nodepool="bigmem", attributes={"cpus": 4, "memory_gb": 8},
                                        access=AccessPolicy(allow_groups=("genomics",))),
                               collection=system.collection, heartbeat_s=0.5, auth_home=home)
    served = in_thread(make_app(RayControlPlane(home), home, dashboard_user="ops", dashboard_key="k"))
    EXTRA["url"] = served.__enter__() + "/?key=k"
    try:
        yield system, signers
    finally:
        served.__exit__(None, None, None)
        ray.kill(EXTRA.pop("solo"))
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
    got = call(group.stop_objects.remote([inst.instance_id], "mine now", proof=m.sign("stop_objects", args, to="hostgroup:batch")))[0]
    assert got.code == "auth.not_owner"
    assert call(group.stop_objects.remote([inst.instance_id], "x"))[0].code == "auth.no_proof"
    tid = inst.token_id
    got = call(group.cancel_reservations.remote([tid], proof=m.sign("cancel_reservations", {"items": [tid]}, to="hostgroup:batch")))[0]
    assert got.code == "auth.not_owner"
    ops = signers["ops"]

    def running() -> set[str]:
        return {i.instance_id for i in call(group.list_instances.remote(proof=ops.sign("list_instances", {"host": None}, to="hostgroup:batch")))}

    assert inst.instance_id in running()

    # views: mallory sees none of it
    sched = system.scheduler
    assert call(sched.instances.remote(proof=m.sign("instances", {}, to="scheduler"))) == []
    assert call(sched.status.remote(proof=m.sign("status", {}, to="scheduler"))).instances == 0
    mine = call(sched.instances.remote(proof=signers["alice"].sign("instances", {}, to="scheduler")))
    assert [i.instance_id for i in mine] == [inst.instance_id]

    # alice cancels through the Scheduler: its own signed stop reaches the host
    a = signers["alice"]
    call(sched.cancel.remote("auth-a1", "done", proof=a.sign("cancel", {"request_id": "auth-a1", "reason": "done"}, to="scheduler")))
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
        "batch1", None, fake, {}, holder=Holder(user="mallory"), proof=signers["mallory"].sign("create_instance", args, to="class:Worker")))
    assert got.code == "auth.forbidden"


# --- every guarded actor method, unsigned and from a stranger ------------------------------------------------------


def outcome(ref: Any, timeout: float = 30.0) -> tuple[str | None, Any]:
    """(the auth refusal code of an answer or a raised error, or None; the answer)."""
    from legionrm.models import Refusal, SchedulerResponse
    from legionrm.system import call

    try:
        got = call(ref, timeout)
    except Exception as exc:  # a refusal raised through Ray: the cause carries the code
        cause = getattr(exc, "cause", None) or exc
        return getattr(cause, "code", None) or f"error: {type(cause).__name__}: {cause}", None
    first = got[0] if isinstance(got, list) and got else got
    if isinstance(first, Refusal):
        return first.code, got
    if isinstance(got, SchedulerResponse) and not got.ok and got.failures and got.failures[0].code.startswith("auth."):
        return got.failures[0].code, got
    return None, got


def stranger_calls(system: Any, work: dict[str, Any]) -> dict[tuple[str, str], tuple[Any, dict, dict | None]]:
    """(actor class, method) -> (handle, arguments in order, what the proof is bound to when not the arguments)."""
    from legionrm.auth.hostdoor import create_args
    from legionrm.models import (
        CreateRequest,
        EnactRequest,
        Holder,
        ReservationRequest,
        ResourceRecord,
        Resources,
        OwnerPolicy,
        ScheduleProposal,
        SchedulerSpec,
        SitePolicySpec,
        StartRequest,
    )

    mal = Holder(user="mallory")
    tok = work["token"]
    start = StartRequest(token=tok, class_name="Worker", holder=Holder(user="alice"))
    rr = ReservationRequest(request_id="mal-r", resource="solo1", holder=mal, resources=Resources(cpus=1))
    vr = rr.model_copy(update={"resource": "vault-uva", "resources": Resources(storage_gb=1)})
    grr = rr.model_copy(update={"resource": work["host"]})
    req = work["mal_request"]
    solo, g, v, c = EXTRA["solo"], work["group"], system.vaults["vault-uva"], system.classes["Worker"]
    sc, pools, coll, en = system.scheduler, system.pools, system.collection, system.enactor
    iid, tid, rid, job = work["iid"], work["tid"], work["rid"], work["job"]
    fake = ResourceRecord(name="batch1", kind="host", attributes={"arch": "sparc"})
    stop = {"items": [iid], "reason": "x"}
    return {
        ("HostActor", "make_reservation"): (solo, {"request": rr}, None),
        ("HostActor", "make_reservations"): (solo, {"requests": [rr]}, None),
        ("HostActor", "check_reservation"): (solo, {"token_id": "solo1~1"}, None),
        ("HostActor", "cancel_reservation"): (solo, {"token": "solo1~1"}, None),
        ("HostActor", "cancel_reservations"): (solo, {"items": ["solo1~1"]}, None),
        ("HostActor", "cancel_requests"): (solo, {"request_ids": ["x/"], "prefix": True}, None),
        ("HostActor", "start_object"): (solo, {"token": tok, "class_name": "Worker", "holder": Holder(user="alice")},
                                        {"token": tok, "class_name": "Worker", "holder": Holder(user="alice"),
                                         "vault": None, "args": {}, "impl": None}),
        ("HostActor", "start_objects"): (solo, {"starts": [start]}, None),
        ("HostActor", "stop_object"): (solo, {"instance_id": "solo1~1", "reason": "x"}, None),
        ("HostActor", "stop_objects"): (solo, {"items": ["solo1~1"], "reason": "x"}, None),
        ("HostActor", "list_instances"): (solo, {"host": None}, None),
        ("HostActor", "reservations"): (solo, {}, None),
        ("HostActor", "record"): (solo, {}, None),
        ("HostActor", "state"): (solo, {"resources": None, "duration_s": None}, None),
        ("HostActor", "save_object"): (solo, {"host": "solo1", "instance_id": "solo1~1"}, None),
        ("HostActor", "restore_object"): (solo, {"host": "solo1", "instance_id": "solo1~1", "data": b"x"},
                                          {"host": "solo1", "instance_id": "solo1~1", "sha256": digest(b"x")}),
        ("HostActor", "audit_views"): (solo, {}, None),
        ("HostActor", "heartbeat"): (solo, {}, None),
        ("HostActor", "expire"): (solo, {}, None),
        ("HostActor", "shutdown"): (solo, {"reason": "x"}, None),
        ("HostActor", "drain"): (solo, {"host": "solo1", "reason": "mine"}, None),
        ("HostActor", "reconfigure"): (solo, {"changes": [OwnerPolicy(resource="solo1")], "check": False}, None),
        ("HostActor", "work_results"): (solo, {"instance_ids": ["solo1~1"]}, None),
        ("HostActor", "work_output"): (solo, {"instance_id": "solo1~1", "stream": "stdout", "offset": 0, "limit": 100},
                                       None),
        ("HostGroupActor", "make_reservations"): (g, {"requests": [grr]}, None),
        ("HostGroupActor", "check_reservations"): (g, {"items": [tid]}, None),
        ("HostGroupActor", "cancel_reservations"): (g, {"items": [tid]}, None),
        ("HostGroupActor", "cancel_requests"): (g, {"request_ids": [f"{rid}/"], "prefix": True}, None),
        ("HostGroupActor", "start_objects"): (g, {"starts": [start]}, None),
        ("HostGroupActor", "stop_objects"): (g, stop, None),
        ("HostGroupActor", "list_instances"): (g, {"host": None}, None),
        ("HostGroupActor", "names"): (g, {}, None),
        ("HostGroupActor", "records"): (g, {}, None),
        ("HostGroupActor", "save_object"): (g, {"host": work["host"], "instance_id": iid}, None),
        ("HostGroupActor", "restore_object"): (g, {"host": work["host"], "instance_id": iid, "data": b"x"},
                                               {"host": work["host"], "instance_id": iid, "sha256": digest(b"x")}),
        ("HostGroupActor", "audit_views"): (g, {}, None),
        ("HostGroupActor", "heartbeat"): (g, {}, None),
        ("HostGroupActor", "expire"): (g, {}, None),
        ("HostGroupActor", "shutdown"): (g, {"reason": "x"}, None),
        ("HostGroupActor", "drain"): (g, {"host": work["host"], "reason": "mine"}, None),
        ("HostGroupActor", "reconfigure"): (g, {"changes": [OwnerPolicy(resource=work["host"])], "check": False}, None),
        ("VaultActor", "make_reservation"): (v, {"request": vr, "for_host": None}, None),
        ("VaultActor", "make_reservations"): (v, {"requests": [vr]}, None),
        ("VaultActor", "check_reservation"): (v, {"token_id": "vault-uva~1"}, None),
        ("VaultActor", "cancel_reservation"): (v, {"token": "vault-uva~1"}, None),
        ("VaultActor", "cancel_reservations"): (v, {"items": ["vault-uva~1"]}, None),
        ("VaultActor", "cancel_requests"): (v, {"request_ids": ["x/"], "prefix": True}, None),
        ("VaultActor", "use"): (v, {"token": tok, "host": work["host"], "holder": mal}, None),
        ("VaultActor", "release"): (v, {"use_id": "x", "rollback": False}, None),
        ("VaultActor", "record"): (v, {}, None),
        ("VaultActor", "list_uses"): (v, {}, None),
        ("VaultActor", "put_state"): (v, {"object_id": iid, "data": b"x", "user": "mallory", "host": None},
                                      {"object_id": iid, "sha256": digest(b"x"), "user": "mallory", "host": None}),
        ("VaultActor", "get_state"): (v, {"object_id": iid}, None),
        ("VaultActor", "delete_state"): (v, {"object_id": iid}, None),
        ("VaultActor", "stored"): (v, {}, None),
        ("VaultActor", "audit_views"): (v, {}, None),
        ("VaultActor", "heartbeat"): (v, {}, None),
        ("VaultActor", "expire"): (v, {}, None),
        ("VaultActor", "shutdown"): (v, {}, None),
        ("VaultActor", "reconfigure"): (v, {"changes": [OwnerPolicy(resource="vault-uva", kind="vault")],
                                            "check": False}, None),
        ("ClassActor", "add_resources"): (c, {"hosts": {}, "vaults": {}}, {"hosts": [], "vaults": []}),
        ("ClassActor", "create_instance"): (c, {"host": work["host"], "vault": None, "token": tok, "args": {},
                                                "vault_token": None, "holder": mal},
                                            create_args(work["host"], None, tok, {}, None, mal)),
        ("ClassActor", "create_instances"): (c, {"batch": [CreateRequest(host=work["host"], token=tok, holder=mal)]},
                                             None),
        ("ClassActor", "destroy_instance"): (c, {"instance_id": iid, "reason": "x"}, None),
        ("ClassActor", "instance_stopped"): (c, {"instance_id": iid}, None),
        ("ClassActor", "adopt"): (c, {"refs": []}, None),
        ("ClassActor", "list_instances"): (c, {}, None),
        ("SchedulerActor", "scheduleObjects"): (sc, {"request": req}, None),
        ("SchedulerActor", "submit_elastic"): (sc, {"request": work["mal_job"]}, None),
        ("SchedulerActor", "list_requests"): (sc, {"user": None, "state": None}, None),
        ("SchedulerActor", "list_page"): (sc, {"user": None, "state": None, "every": False, "limit": None,
                                               "cursor": None}, None),
        ("SchedulerActor", "instances"): (sc, {}, None),
        ("SchedulerActor", "status"): (sc, {}, None),
        ("SchedulerActor", "cycle_reports"): (sc, {"after": 0, "timeout_s": 0.0}, None),
        ("SchedulerActor", "make_schedules"): (sc, {"request": req}, None),
        ("SchedulerActor", "explain"): (sc, {"request": req, "host": work["host"]}, None),
        ("SchedulerActor", "getCandidatePlacements"): (sc, {"class_info": req.objects[0],
                                                            "caller": Identity(user="root", groups=("genomics",))}, None),
        ("SchedulerActor", "request_info"): (sc, {"request_id": rid}, None),
        ("SchedulerActor", "logs"): (sc, {"request_id": rid, "instance": None, "stream": "stdout", "offset": 0,
                                          "limit": 100}, None),
        ("SchedulerActor", "history"): (sc, {"user": None, "since": None, "until": None, "state": None}, None),
        ("SchedulerActor", "cancel"): (sc, {"request_id": rid, "reason": "x"}, None),
        ("SchedulerActor", "intake_batch"): (sc, {"items": [Submit("root", req.model_dump_json()),
                                                            Cancel("alice", rid, "x")]}, None),
        ("SchedulerActor", "deactivate"): (sc, {"object_id": iid, "reason": "x"}, None),
        ("SchedulerActor", "activate"): (sc, {"object_id": iid, "constraint": "true"}, None),
        ("SchedulerActor", "migrate"): (sc, {"object_id": iid, "constraint": "true"}, None),
        ("SchedulerActor", "object_status"): (sc, {"object_id": iid}, None),
        ("SchedulerActor", "status_changes"): (sc, {"after": 0.0}, None),
        ("SchedulerActor", "register_trigger"): (sc, {"subject": rid, "statuses": [], "handle": coll, "method": "ping"},
                                                 {"subject": rid, "statuses": []}),
        ("SchedulerActor", "remove_trigger"): (sc, {"trigger_id": work["trigger"]}, None),
        ("SchedulerActor", "events_since"): (sc, {"request_id": rid, "cursor": 0}, None),
        ("SchedulerActor", "complete_elastic"): (sc, {"job_id": job}, None),
        ("SchedulerActor", "update_elastic"): (sc, {"job_id": job, "fields": {"memory_gb": 2.0}}, None),
        ("SchedulerActor", "approve"): (sc, {"proposal": ScheduleProposal(request_id=rid, master=0, placements=())}, None),
        ("SchedulerActor", "approve_growth"): (sc, {"proposal": ScheduleProposal(request_id=rid, master=0,
                                                                                 placements=())}, None),
        ("SchedulerActor", "hold"): (sc, {"request_id": rid}, None),
        ("SchedulerActor", "release"): (sc, {"request_id": rid}, None),
        ("SchedulerActor", "update"): (sc, {"request_id": rid, "priority": 1, "qos": None, "clear_priority": False}, None),
        ("SchedulerActor", "top"): (sc, {"request_id": rid}, None),
        ("SchedulerActor", "share"): (sc, {}, None),
        ("SchedulerActor", "prio"): (sc, {}, None),
        ("SchedulerActor", "audit"): (sc, {}, None),
        ("SchedulerActor", "tick"): (sc, {}, None),
        ("SchedulerActor", "drain"): (sc, {"host": work["host"], "reason": "mine"}, None),
        ("SchedulerActor", "serve"): (sc, {"spec": SchedulerSpec(name="x")}, None),
        ("SchedulerActor", "reconfigure_site"): (sc, {"site": SitePolicySpec(), "check": False}, None),
        ("SchedulerActor", "reconfigure_owners"): (sc, {"changes": [OwnerPolicy(resource=work["host"])], "check": False,
                                                        "cluster": None}, None),
        ("SchedulerActor", "bound_nodes"): (sc, {}, None),
        ("SchedulerActor", "run_cycle"): (sc, {}, None),
        ("SchedulerActor", "stop_cycle"): (sc, {}, None),
        ("SchedulerActor", "setCollection"): (sc, {"handle": coll}, {}),
        ("SchedulerActor", "setEnactor"): (sc, {"handle": en}, {}),
        ("PoolActor", "admit"): (pools, {"request": req, "scheduler": "x"}, None),
        ("PoolActor", "release"): (pools, {"request_id": rid}, None),
        ("PoolActor", "held"): (pools, {"scheduler": None}, None),
        ("PoolActor", "set_capacity"): (pools, {"capacity": Resources(cpus=1)}, None),
        ("PoolActor", "specs"): (pools, {}, None),
        ("PoolActor", "reconfigure"): (pools, {"changes": [], "default_pool": None}, None),
        ("PoolActor", "report"): (pools, {}, None),
        ("PoolActor", "capacity"): (pools, {}, None),
        ("CollectionActor", "join"): (coll, {"record": fake}, None),
        ("CollectionActor", "update"): (coll, {"name": "batch1", "attrs": {"arch": "sparc"}}, None),
        ("CollectionActor", "update_many"): (coll, {"updates": [("batch1", {"arch": "sparc"})]},
                                             {"name": "batch1", "attrs": {"arch": "sparc"}}),
        ("CollectionActor", "leave"): (coll, {"name": "batch2"}, None),
        ("CollectionActor", "vary_off"): (coll, {"name": "batch2"}, None),
        ("CollectionActor", "vary_on"): (coll, {"name": "batch2"}, None),
        ("CollectionActor", "add_subcollection"): (coll, {"name": "rogue", "handle": coll, "query": "true"},
                                                   {"name": "rogue", "query": "true"}),
        ("CollectionActor", "shutdown"): (coll, {}, None),
        ("CollectionActor", "query"): (coll, {"text": "true", "caller": None, "include_unavailable": True}, None),
        ("CollectionActor", "record"): (coll, {"name": work["host"]}, None),
        ("CollectionActor", "retrieve_all_attributes"): (coll, {"name": work["host"]}, None),
        ("CollectionActor", "snapshot"): (coll, {}, None),
        ("CollectionActor", "names"): (coll, {}, None),
        ("CollectionActor", "refused_writes"): (coll, {}, None),
        ("EnactorActor", "enact_schedule"): (en, {"request": EnactRequest(request_id="mal-e", holder=mal, masters=()),
                                                  "approver": (sc, "approve_growth")},
                                             {"request": EnactRequest(request_id="mal-e", holder=mal, masters=()),
                                              "approver": "approve_growth"}),
        ("EnactorActor", "start_reserved"): (en, {"held": ReservedStart(request_id="mal-e", holder=mal, placements=()),
                                                  "approver": (sc, "approve")},
                                             {"held": ReservedStart(request_id="mal-e", holder=mal, placements=())}),
        ("EnactorActor", "add_group"): (en, {"name": "bigmem", "handle": coll}, {"name": "bigmem"}),
        ("EnactorActor", "add_resource"): (en, {"name": "bigmem1", "handle": coll, "batched": False},
                                           {"name": "bigmem1", "batched": False}),
        ("EnactorActor", "add_class"): (en, {"name": "Worker", "handle": coll}, {"name": "Worker"}),
        ("EnactorActor", "stats"): (en, {}, None),
    }


AUDIENCE = {"HostActor": "solo1", "HostGroupActor": "hostgroup:bigmem", "VaultActor": "vault-uva",
            "ClassActor": "class:Worker", "SchedulerActor": "scheduler", "PoolActor": "pools",
            "CollectionActor": "collection", "EnactorActor": "enactor"}
"""Whom each actor of :func:`stranger_calls` hears: the stranger signs for the right actor, so its role speaks."""


def _send(handle: Any, method: str, args: dict, proof: Any) -> Any:
    if method.startswith("make_reservation"):  # its proof is the Scheduler's attestation inside each request
        return getattr(handle, method).remote(*args.values())
    if method == "update_many":  # one proof per update, each bound to its own update
        return handle.update_many.remote(*args.values(), None if proof is None else [proof])
    return getattr(handle, method).remote(*args.values(), proof=proof)


def test_every_guarded_actor_method_refuses_the_unsigned_and_strangers(live) -> None:
    """The table of roles (tests/unit/auth/actor_methods.py), live: every guarded
    method of every actor refuses a call with no proof (``auth.no_proof``), and a
    stranger's well-signed call gets its role's code; a view answers a stranger
    without alice's work and without a host the stranger's access forbids."""
    from legionrm.models import ElasticJobRequest, Holder, ReservationToken, Resources
    from legionrm.system import call
    from tests.unit.auth.actor_methods import (
        ANY,
        EXPECTED_CODE,
        METHODS,
        OPEN,
        USER,
        VIEW,
    )

    system, signers = live
    alice, m = dataclasses.replace(system, signer=signers["alice"]), signers["mallory"]
    r = alice.schedule(SchedulingRequest(request_id="auth-t1", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Worker", cpus=1, memory_gb=1, constraint='$nodepool == "bigmem"'),)))
    assert r.ok, r.message
    inst = r.instances[0]
    ajob = ElasticJobRequest(job_id="auth-ajob", user="alice", class_name="Worker", memory_gb=1)
    call(system.scheduler.submit_elastic.remote(ajob, proof=signers["alice"].sign("submit_elastic", {"request": ajob}, to="scheduler")))
    work = {"iid": inst.instance_id, "tid": inst.token_id, "rid": "auth-t1", "job": "auth-ajob", "host": inst.host,
            "group": system.groups["bigmem"],
            "token": ReservationToken(token_id=inst.token_id, issuer=inst.host, holder=Holder(user="alice"),
                                      resources=Resources(cpus=1), start=0.0, end=None, expires_at=time.time() + 60),
            "mal_request": SchedulingRequest(request_id="mal-q", identity=Identity(user="root", groups=("genomics",)),
                                             objects=(ObjectRequest(class_name="Worker", cpus=1, memory_gb=1,
                                                                    constraint='$nodepool == "bigmem"'),)),
            "mal_job": ElasticJobRequest(job_id="mal-job", user="alice", class_name="Worker", memory_gb=1,
                                         cpus=999)}
    work["trigger"] = call(system.scheduler.register_trigger.remote("auth-t1", ["ended"], system.collection, "ping",
                           proof=signers["alice"].sign("register_trigger", {"subject": "auth-t1", "statuses": ["ended"]}, to="scheduler")))
    markers = (inst.instance_id, inst.token_id, "auth-t1", "auth-ajob", "bigmem1", "bigmem2", "solo1")
    calls = stranger_calls(system, work)
    guarded = {(a, meth): role for a, rows in METHODS.items() for meth, role in rows.items() if role != OPEN}
    assert sorted(set(guarded) - set(calls)) == [], "guarded methods this test does not call"

    refs = {k: _send(h, k[1], args, None) for k, (h, args, _) in calls.items()}
    unsigned = {k: outcome(ref)[0] for k, ref in refs.items()}
    assert {k: code for k, code in unsigned.items() if code != "auth.no_proof"} == {}

    wrong = {}
    for key, (h, args, bound) in calls.items():
        call_name = "update" if key[1] == "update_many" else key[1]  # update_many: one "update" proof per update
        code, got = outcome(_send(h, key[1], args, m.sign(call_name, args if bound is None else bound, to=AUDIENCE[key[0]])))
        role = guarded[key]
        if role in (VIEW, ANY, USER):
            leaked = [x for x in markers if x in repr(got)]
            ok = (None, "auth.forbidden", "auth.not_owner")  # a user's own request may fail for its own reasons
            if (code not in ok and (role != USER or code.startswith("auth."))) or leaked:
                wrong[key] = (role, code, leaked)
        elif code != EXPECTED_CODE[role]:
            wrong[key] = (role, code)
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in wrong.items())
    # alice's work is untouched: her instance still runs, her request is hers
    assert inst.instance_id in {i.instance_id for i in call(system.scheduler.instances.remote(
        proof=signers["alice"].sign("instances", {}, to="scheduler")))}


# --- the issue's attacks, one row each ---------------------------------------------------------------------------------


def _hidden(answer: Any, names: tuple[str, ...]) -> str:
    """'hidden' when none of ``names`` shows in ``answer``, else what leaked."""
    leaked = [n for n in names if n in repr(answer)]
    return "hidden" if not leaked else f"leaked {leaked}"


def _attack_rows(system: Any, signers: dict[str, Any], inst: Any) -> list[tuple[str, Any, str]]:
    """(attack, a callable making it and answering its code, the code it must get)."""
    from legionrm.auth import CallSigner, VerifiedCaller, attest
    from legionrm.auth.guard import ENACTOR, SCHEDULER, load_agent
    from legionrm.models import (
        EnactRequest,
        Holder,
        Refusal,
        ReservationRequest,
        ReservationToken,
        ResourceRecord,
        Resources,
        StartRequest,
    )
    from legionrm.system import call

    m, v, a = signers["mallory"], signers["visitor"], signers["alice"]
    sched_key = load_agent(EXTRA["home"], SCHEDULER)
    enactor = CallSigner(load_agent(EXTRA["home"], ENACTOR), time.time)  # even the system's own agent, misled
    gpu, bigmem, batch, coll, sc = (system.groups["gpu"], system.groups["bigmem"], system.groups["batch"],
                                    system.collection, system.scheduler)

    def code(ref: Any) -> str | None:
        return outcome(ref)[0]

    def as_user(user: str, **kw: Any) -> Any:
        return dataclasses.replace(system, signer=signers[user]).schedule(SchedulingRequest(**kw))

    def direct_reservation(user: str, host: str, group: Any, *, attest_to: str | None = None, age_s: float = 0.0,
                           rids: tuple[str, ...] = ("0",), groups: tuple[str, ...] = ()) -> Any:
        """``user`` asks ``host`` directly, with a genuine Scheduler attestation (made out to ``attest_to``,
        ``age_s`` ago, for reservation ``<user>-direct<n>/k0/host``) as if they had kept one from an earlier
        request: once per request id in ``rids`` (a bare number: a try of that reservation); the last one's code."""
        who = VerifiedCaller(name=user, kind="user", groups=groups)
        res = f"{user}-direct{next(serial)}/k0/host"  # each row its own reservation (ids are idempotent)
        att = attest(sched_key, who, f"{user}-direct", attest_to or host, time.time() - age_s, 60.0, reservation=res,
                     resources=Resources(cpus=1)).model_dump(mode="json")
        got: Any = None
        granted = []
        for rid in rids:
            rq = ReservationRequest(request_id=f"{res}/{rid}" if rid.isdigit() else rid, resource=host,
                                    holder=Holder(user=user), resources=Resources(cpus=1), attestation=att)
            got = call(group.make_reservations.remote([rq]))[0]
            granted += [got.token_id] if isinstance(got, ReservationToken) else []
        if granted:  # give them back: only the code matters here
            call(group.cancel_reservations.remote(granted, proof=signers[user].sign(
                "cancel_reservations", {"items": granted}, to=group_of[host])))
        return got.code if isinstance(got, Refusal) else "granted"

    group_of, serial = {"gpu1": "hostgroup:gpu", "bigmem1": "hostgroup:bigmem"}, itertools.count()

    alices_token = ReservationToken(token_id=inst.token_id, issuer=inst.host, holder=Holder(user="alice"),
                                    resources=Resources(cpus=1), start=0.0, end=None, expires_at=time.time() + 60)
    start = StartRequest(token=alices_token, class_name="Worker", holder=Holder(user="alice"))
    genuine = call(bigmem.check_reservations.remote([inst.token_id], proof=signers["ops"].sign(
        "check_reservations", {"items": [inst.token_id]}, to="hostgroup:bigmem")))[0]
    relabelled = StartRequest(token=genuine.model_copy(update={"issuer": "batch1"}) if not isinstance(
        genuine, Refusal) else alices_token.model_copy(update={"issuer": "batch1"}), class_name="Worker",
        holder=Holder(user="alice"))
    enact = EnactRequest(request_id="mal-enact", holder=Holder(user="mallory"), masters=())
    fake = ResourceRecord(name="fake1", kind="host", attributes={"cpus": 999})

    def planned_on_bigmem() -> str | None:
        r = as_user("mallory", request_id="mal-root", identity=Identity(user="root", groups=("genomics",)),
                    objects=(ObjectRequest(class_name="Worker", cpus=1, memory_gb=1, constraint='$nodepool == "bigmem"'),))
        return "placed" if r.ok else r.failures[0].code

    def replayed_at(other: Any) -> str | None:
        """alice's proof of ``names`` made for (and used at) the batch hosts, replayed at ``other``,
        whose own replay cache has never seen it."""
        p = a.sign("names", {}, to="hostgroup:batch")
        assert code(batch.names.remote(proof=p)) is None
        return code(other.names.remote(proof=p))

    def replay() -> str | None:
        p = a.sign("instances", {}, to="scheduler")
        call(sc.instances.remote(proof=p))
        return code(sc.instances.remote(proof=p))

    return [
        ("identity: mallory claims root and genomics to get bigmem", planned_on_bigmem, "query.no_match"),
        ("identity: alice's token presented under alice's name", lambda: code(bigmem.start_objects.remote(
            [start], proof=m.sign("start_objects", {"starts": [start]}, to="hostgroup:bigmem"))), "auth.forbidden"),
        ("host: visitor reserves gpu1 directly, no attestation", lambda: code(gpu.make_reservations.remote([
            ReservationRequest(request_id="v1", resource="gpu1", holder=Holder(user="visitor"),
                               resources=Resources(cpus=1))])), "auth.no_proof"),
        ("host: visitor reserves gpu1 with a genuine attestation", lambda: direct_reservation("visitor", "gpu1", gpu),
         "policy.user"),
        ("host: mallory reserves group-only bigmem1 with a genuine attestation",
         lambda: direct_reservation("mallory", "bigmem1", bigmem), "policy.group"),
        ("host: an attestation made out to gpu2 presented at gpu1",
         lambda: direct_reservation("mallory", "gpu1", gpu, attest_to="gpu2"), "auth.wrong_host"),
        ("host: an expired attestation", lambda: direct_reservation("mallory", "gpu1", gpu, age_s=600), "auth.expired"),
        ("host: alice's genuine attestation, as the Scheduler gave it", lambda: direct_reservation(
            "alice", "bigmem1", bigmem, groups=("genomics",)), "granted"),
        ("host: alice's genuine attestation reused for another reservation", lambda: direct_reservation(
            "alice", "bigmem1", bigmem, rids=("alice-other/k0/host/0",), groups=("genomics",)), "auth.wrong_reservation"),
        ("host: alice's genuine attestation reused while its reservation holds", lambda: direct_reservation(
            "alice", "bigmem1", bigmem, rids=("0", "1"), groups=("genomics",)), "auth.attestation_spent"),
        ("host: a token of bigmem1 presented at the batch hosts", lambda: code(batch.start_objects.remote(
            [start], proof=m.sign("start_objects", {"starts": [start]}, to="hostgroup:batch"))), "auth.forbidden"),
        ("host: bigmem1's token started at the batch hosts, by the Enactor itself", lambda: code(batch.start_objects.remote(
            [start], proof=enactor.sign("start_objects", {"starts": [start]}, to="hostgroup:batch"))), "resource.unknown"),
        ("host: bigmem1's token re-labelled as batch1's, by the Enactor itself", lambda: code(batch.start_objects.remote(
            [relabelled], proof=enactor.sign("start_objects", {"starts": [relabelled]}, to="hostgroup:batch"))), "token.forged"),
        ("host: visitor starts on gpu1 directly", lambda: code(gpu.start_objects.remote(
            [start], proof=v.sign("start_objects", {"starts": [start]}, to="hostgroup:gpu"))), "auth.forbidden"),
        ("work: enact_schedule without the Scheduler's approval", lambda: code(system.enactor.enact_schedule.remote(
            enact, None)), "auth.forbidden"),
        ("work: enact_schedule with the Scheduler's approve_growth", lambda: code(system.enactor.enact_schedule.remote(
            enact, (sc, "approve_growth"), proof=m.sign("enact_schedule", {"request": enact,
                                                                          "approver": "approve_growth"}, to="enactor"))),
         "auth.forbidden"),
        ("work: stop_objects of alice's instance", lambda: code(bigmem.stop_objects.remote(
            [inst.instance_id], "x", proof=m.sign("stop_objects", {"items": [inst.instance_id], "reason": "x"}, to="hostgroup:bigmem"))),
         "auth.not_owner"),
        ("work: activate alice's instance", lambda: as_user(
            "mallory", request_id="mal-act", identity=Identity(user="mallory"), activate=(inst.instance_id,),
            objects=(ObjectRequest(class_name="Worker", cpus=1, memory_gb=1),)).failures[0].code, "auth.not_owner"),
        ("work: a bare token id cancels alice's reservation", lambda: code(bigmem.cancel_reservations.remote(
            [inst.token_id], proof=m.sign("cancel_reservations", {"items": [inst.token_id]}, to="hostgroup:bigmem"))), "auth.not_owner"),
        ("work: cancel alice's request", lambda: code(sc.cancel.remote("auth-x1", "x", proof=m.sign(
            "cancel", {"request_id": "auth-x1", "reason": "x"}, to="scheduler"))), "auth.not_owner"),
        ("view: the Collection: join a fake host", lambda: code(coll.join.remote(fake, proof=m.sign(
            "join", {"record": fake}, to="collection"))), "auth.wrong_resource"),
        ("view: the Collection: update batch1 to sparc", lambda: code(coll.update.remote(
            "batch1", {"arch": "sparc"}, proof=m.sign("update", {"name": "batch1", "attrs": {"arch": "sparc"}}, to="collection"))),
         "auth.wrong_resource"),
        ("view: the Collection: vary batch2 off", lambda: code(coll.vary_off.remote("batch2", proof=m.sign(
            "vary_off", {"name": "batch2"}, to="collection"))), "auth.forbidden"),
        ("view: setCollection", lambda: code(sc.setCollection.remote(coll, proof=m.sign("setCollection", {}, to="scheduler"))),
         "auth.forbidden"),
        ("view: setEnactor", lambda: code(sc.setEnactor.remote(system.enactor, proof=m.sign("setEnactor", {}, to="scheduler"))),
         "auth.forbidden"),
        ("access: query with caller=None", lambda: _hidden(call(coll.query.remote(
            "true", None, True, proof=v.sign("query", {"text": "true", "caller": None, "include_unavailable": True}, to="collection"))),
            ("gpu1", "gpu2")), "hidden"),
        ("access: snapshot", lambda: code(coll.snapshot.remote(proof=v.sign("snapshot", {}, to="collection"))), "auth.forbidden"),
        ("access: record of a denied host", lambda: code(coll.record.remote("gpu1", proof=v.sign(
            "record", {"name": "gpu1"}, to="collection"))), "auth.forbidden"),
        ("access: the host group's records", lambda: _hidden(call(gpu.records.remote(proof=v.sign("records", {}, to="hostgroup:gpu"))),
                                                            ("gpu1", "gpu2")), "hidden"),
        ("access: the dashboard's page without its key", lambda: _http_code(EXTRA["url"].split("?")[0] + "api/state"),
         "auth.no_proof"),
        ("proof: replayed", replay, "auth.replayed"),
        ("proof: made for host group batch, replayed at host group gpu", lambda: replayed_at(gpu), "auth.wrong_audience"),
        ("proof: made for host group batch, replayed at the Collection", lambda: replayed_at(coll),
         "auth.wrong_audience"),
        ("proof: signed for another method", lambda: code(sc.instances.remote(proof=a.sign("status", {}, to="scheduler"))),
         "auth.wrong_call"),
        ("proof: signed for other arguments", lambda: code(sc.cancel.remote("auth-x1", "x", proof=a.sign(
            "cancel", {"request_id": "auth-x2", "reason": "x"}, to="scheduler"))), "auth.wrong_call"),
    ]


def _http_code(url: str) -> str | None:
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10):
            return None
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read()).get("code")


def test_the_issue_attacks_are_refused_each_with_its_code(live) -> None:
    """Every attack of issue 15 (and the ones the brief adds), on the live system,
    each refused with its code; the keyed dashboard still answers its administrator."""
    import json
    import urllib.request

    system, signers = live
    alice = dataclasses.replace(system, signer=signers["alice"])
    r = alice.schedule(SchedulingRequest(request_id="auth-x1", identity=Identity(user="alice"), objects=(
        ObjectRequest(class_name="Worker", cpus=1, memory_gb=1, constraint='$nodepool == "bigmem"'),)))
    assert r.ok, r.message
    rows = _attack_rows(system, signers, r.instances[0])
    got = {name: attack() for name, attack, _ in rows}
    assert {n: got[n] for n, _, want in rows if got[n] != want} == {}
    with urllib.request.urlopen(EXTRA["url"].replace("?", "api/state?"), timeout=10) as answer:
        assert json.loads(answer.read())["summary"]["hosts"] >= 12
