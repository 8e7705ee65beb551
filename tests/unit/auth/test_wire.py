"""Issue 15's attacks, one table row each, against the doors of the Scheduler
and the Collection and the hosts' own checks (pure cores, no Ray): each is
refused with its code.  Plus tamper tests and a property: no sequence of
calls by one user touches another's work."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.auth import (
    AttestationVerifier,
    Registry,
    VerifiedCaller,
    Verifier,
    attest,
    sign_call,
)
from legionrm.auth.canonical import payload_digest
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import ENACTOR, Guard
from legionrm.auth.keys import Credential, generate_private_key
from legionrm.collection.collection import Collection
from legionrm.collection.door import CollectionDoor
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakePort
from legionrm.hostobj.build import build_host
from legionrm.models import (
    AccessPolicy,
    Holder,
    HostSpec,
    Identity,
    ObjectRequest,
    ReservationRequest,
    ReservationToken,
    Resources,
    ScheduleProposal,
    SchedulingRequest,
)
from legionrm.scheduler.door import SchedulerDoor
from legionrm.scheduler.wiring import SchedulerPorts, SchedulerSettings, wire
from legionrm.testing import FakeClock, host


COLLECTION_CALLS = frozenset({"join", "update", "leave", "vary_off", "vary_on", "snapshot", "record", "query", "names"})

class World:
    """alice (genomics), mallory, visitor (on gpu1's deny list), ops (admin);
    hosts n1, gpu1 (denies visitor), bigmem (genomics only)."""

    def __init__(self) -> None:
        self.registry = Registry(None)
        self.alice = self.registry.add_user("alice", groups=["genomics"])
        self.mallory = self.registry.add_user("mallory")
        self.visitor = self.registry.add_user("visitor")
        self.ops = self.registry.add_user("ops", roles=["admin"])
        self.enactor_agent = self.registry.add_agent("enactor", "enactor")
        self.n1_agent = self.registry.add_agent("host", "n1")
        clock = FakeClock()
        self.collection = Collection(clock=clock)
        self.collection.join(host("n1", cpus=4, memory_gb=16.0))
        self.collection.join(host("gpu1", AccessPolicy(deny_users=("visitor",)), cpus=4, memory_gb=16.0, gpus=1))
        self.collection.join(host("bigmem", AccessPolicy(allow_groups=("genomics",)), cpus=4, memory_gb=512.0))
        self.port = FakePort.of("n1", "gpu1", "bigmem", clock=clock)
        self.scheduler = wire(SchedulerSettings(), SchedulerPorts(
            collection=self.collection, enactor=lambda approve: Enactor(self.port, clock=clock, approve=approve))
        ).scheduler
        guard = lambda by: Guard(Verifier(self.registry, time.time, by=by))  # noqa: E731
        self.door = SchedulerDoor(self.scheduler, guard("scheduler"))
        self.cdoor = CollectionDoor(self.collection, guard("collection"))

    def proof(self, who: Credential, call: str, args: Any, **kw: Any) -> Any:
        """``who``'s proof of ``call``, made out to the door that answers it (the Collection's calls, else the Scheduler)."""
        kw.setdefault("to", "collection" if call in COLLECTION_CALLS else "scheduler")
        return sign_call(who, call, payload_digest(args), kw.pop("now", time.time()), **kw)

    def submit(self, who: Credential, rid: str, *, claim: Identity | None = None, memory_gb: float = 1.0,
               activate: tuple[str, ...] = ()) -> Any:
        objs = (ObjectRequest(class_name="W", cpus=1, memory_gb=memory_gb),) if not activate else ()
        req = SchedulingRequest(request_id=rid, identity=claim or Identity(user=who.name), objects=objs,
                                activate=activate, wait=False)
        return self.door.scheduleObjects(req, self.proof(who, "scheduleObjects", {"request": req}))


def code_of(call) -> str:
    try:
        out = call()
    except AuthRefusedError as exc:
        return exc.code
    if hasattr(out, "failures") and not out.ok:
        return out.failures[0].code
    return getattr(out, "code", "ok")


# --- proofs: strangers, replays, tampering -------------------------------------------------


def _req(rid: str = "r1", user: str = "alice") -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user),
                             objects=(ObjectRequest(class_name="W", cpus=1),), wait=False)


def test_a_stranger_is_refused_as_unknown() -> None:
    w = World()
    stranger = Credential(name="eve", private_key=generate_private_key())
    assert w.submit(stranger, "r1").failures[0].code == "auth.unknown_user"


def test_no_proof_is_refused() -> None:
    w = World()
    assert code_of(lambda: w.door.scheduleObjects(_req(), None)) == "auth.no_proof"


def test_a_replayed_proof_is_refused() -> None:
    w = World()
    req = _req()
    proof = w.proof(w.alice, "scheduleObjects", {"request": req})
    assert w.door.scheduleObjects(req, proof).ok
    again = req.model_copy(update={"request_id": "r2"})
    assert code_of(lambda: w.door.scheduleObjects(req, proof)) == "auth.replayed"
    assert code_of(lambda: w.door.scheduleObjects(again, proof)) == "auth.wrong_call"


def test_an_expired_proof_is_refused() -> None:
    w = World()
    req = _req()
    old = w.proof(w.alice, "scheduleObjects", {"request": req}, now=time.time() - 120, ttl_s=30)
    assert code_of(lambda: w.door.scheduleObjects(req, old)) == "auth.expired"


@pytest.mark.parametrize("field, value, code", [
    ("user", "mallory", "auth.bad_signature"),  # alice's proof re-labelled as mallory's
    ("digest", "0" * 64, "auth.bad_signature"),
    ("nonce", "f" * 32, "auth.bad_signature"),
    ("expires_at", 9e12, "auth.malformed"),
    ("signature", "AAAA", "auth.malformed"),
])
def test_a_tampered_proof_is_refused(field: str, value: Any, code: str) -> None:
    w = World()
    req = _req()
    proof = w.proof(w.alice, "scheduleObjects", {"request": req}).model_copy(update={field: value})
    assert code_of(lambda: w.door.scheduleObjects(req, proof)) == code


# --- the attacks of the issue, one row each -----------------------------------------------


def test_claimed_identity_and_groups_are_replaced_by_the_registrys() -> None:
    """``Identity(user="root", groups=["genomics"])`` no longer reaches bigmem."""
    w = World()
    r = w.submit(w.mallory, "m1", claim=Identity(user="root", groups=("genomics",)), memory_gb=300.0)
    assert not r.ok and all(f.resource != "bigmem" or f.code != "ok" for f in r.failures)
    assert w.scheduler.request_info("m1").user == "mallory"
    assert w.submit(w.alice, "a1", memory_gb=300.0).ok  # alice really is in genomics
    assert w.scheduler.request_info("a1").instances[0].host == "bigmem"


ROGUE = host("rogue", cpus=999)
ATTACKS = [
    # (name, call made by mallory on alice's work / the system, expected code)
    ("cancel another's request", lambda w: w.door.cancel("a1", "x", w.proof(w.mallory, "cancel", {"request_id": "a1", "reason": "x"})), "auth.not_owner"),
    ("show another's request", lambda w: w.door.request_info("a1", w.proof(w.mallory, "request_info", {"request_id": "a1"})), "auth.not_owner"),
    ("list another's requests", lambda w: w.door.list_requests("alice", None, w.proof(w.mallory, "list_requests", {"user": "alice", "state": None})), "auth.not_owner"),
    ("activate another's instance", lambda w: w.submit(w.mallory, "m2", activate=(w.scheduler.request_info("a1").instances[0].id,)), "auth.not_owner"),
    ("set the Collection", lambda w: w.door.require_admin(w.proof(w.mallory, "setCollection", {}), "setCollection", {}, "set_collection"), "auth.forbidden"),
    ("set the Enactor", lambda w: w.door.require_admin(w.proof(w.mallory, "setEnactor", {}), "setEnactor", {}, "set_enactor"), "auth.forbidden"),
    ("approve a schedule", lambda w: w.door.approve(ScheduleProposal(request_id="a1", master=0, placements=()), w.proof(w.mallory, "approve", {"proposal": ScheduleProposal(request_id="a1", master=0, placements=())})), "auth.forbidden"),
    ("join a rogue record", lambda w: w.cdoor.join(ROGUE, w.proof(w.mallory, "join", {"record": ROGUE})), "auth.wrong_resource"),
    ("join as another resource", lambda w: w.cdoor.join(ROGUE, w.proof(w.n1_agent, "join", {"record": ROGUE})), "auth.wrong_resource"),
    ("update another resource's record", lambda w: w.cdoor.update("gpu1", {"cpus": 0}, w.proof(w.n1_agent, "update", {"name": "gpu1", "attrs": {"cpus": 0}})), "auth.wrong_resource"),
    ("leave for another resource", lambda w: w.cdoor.leave("gpu1", w.proof(w.mallory, "leave", {"name": "gpu1"})), "auth.wrong_resource"),
    ("vary a host off", lambda w: w.cdoor.vary_off("gpu1", w.proof(w.mallory, "vary_off", {"name": "gpu1"})), "auth.forbidden"),
    ("read the whole snapshot", lambda w: w.cdoor.snapshot(w.proof(w.visitor, "snapshot", {})), "auth.forbidden"),
    ("read a denied host's record", lambda w: w.cdoor.record("gpu1", w.proof(w.visitor, "record", {"name": "gpu1"})), "auth.forbidden"),
]


@pytest.mark.parametrize("name, attack, code", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_each_attack_is_refused_with_its_code(name: str, attack, code: str) -> None:
    w = World()
    assert w.submit(w.alice, "a1").ok
    assert code_of(lambda: attack(w)) == code
    assert w.scheduler.request_info("a1").state == "running"
    assert "rogue" not in w.collection.names() and w.collection.record("gpu1").available


def test_the_owner_and_an_admin_may_act() -> None:
    w = World()
    assert w.submit(w.alice, "a1").ok
    assert w.door.request_info("a1", w.proof(w.alice, "request_info", {"request_id": "a1"})).user == "alice"
    assert [i.id for i in w.door.list_requests(None, None, w.proof(w.mallory, "list_requests", {"user": None, "state": None}))] == []
    assert w.door.cancel("a1", "x", w.proof(w.ops, "cancel", {"request_id": "a1", "reason": "x"})).state == "cancelled"
    w.cdoor.update("n1", {"load": 0.5}, w.proof(w.n1_agent, "update", {"name": "n1", "attrs": {"load": 0.5}}))
    w.cdoor.vary_off("gpu1", w.proof(w.ops, "vary_off", {"name": "gpu1"}))
    prop = ScheduleProposal(request_id="zz", master=0, placements=())
    assert code_of(lambda: w.door.approve(prop, w.proof(w.enactor_agent, "approve", {"proposal": prop}))) == "approval.unknown_request"
    assert ENACTOR == w.enactor_agent.name


@pytest.mark.parametrize("caller", [None, Identity(user="ops"), Identity(user="alice", groups=("genomics",))])
def test_a_query_answers_the_verified_caller_whatever_caller_is_passed(caller) -> None:
    w = World()
    args = {"text": "true", "caller": caller, "include_unavailable": False}
    got = w.cdoor.query("true", caller, False, w.proof(w.visitor, "query", args))
    assert [r.name for r in got.records] == ["n1"]  # not gpu1 (denied), not bigmem (genomics)
    everything = w.cdoor.query("true", None, False, w.proof(w.ops, "query", {**args, "caller": None}))
    assert [r.name for r in everything.records] == ["bigmem", "gpu1", "n1"]
    assert w.cdoor.names(w.proof(w.visitor, "names", {})) == ["n1"]


# --- hosts enforce their owner's policy on the attested identity ------------------------------


class HostRig:
    def __init__(self) -> None:
        self.registry = Registry(None)
        self.sched = self.registry.add_agent("scheduler", "scheduler")
        self.host = build_host(HostSpec(name="gpu1", attributes={"cpus": 4, "memory_gb": 16, "gpus": 1},
                                        access=AccessPolicy(deny_users=("visitor",))))
        self.host.attestations = AttestationVerifier({self.sched.name: self.sched.public_key}, time.time, by="gpu1")

    def ask(self, user: str, attestation: Any = None, groups: tuple[str, ...] = (), rid: str = "r1") -> Any:
        return self.host.make_reservation(ReservationRequest(
            request_id=rid, resource="gpu1", holder=Holder(user=user, groups=groups), resources=Resources(cpus=1),
            attestation=attestation))

    def att(self, user: str, host: str = "gpu1", key: Credential | None = None, groups: tuple[str, ...] = (),
            now: float | None = None) -> dict:
        who = VerifiedCaller(name=user, kind="user", groups=groups)
        return attest(key or self.sched, who, "r1", host, now or time.time(), reservation="r1",
                      resources=Resources(cpus=1)).model_dump(mode="json")


HOST_ATTACKS = [
    ("no attestation", lambda h: h.ask("visitor"), "auth.no_proof"),
    ("denied user, properly attested", lambda h: h.ask("visitor", h.att("visitor")), "policy.user"),
    ("attested as someone else", lambda h: h.ask("alice", h.att("visitor")), "auth.wrong_call"),
    ("attestation for another host", lambda h: h.ask("alice", h.att("alice", host="n1")), "auth.wrong_host"),
    ("attestation signed by a stranger", lambda h: h.ask("alice", h.att("alice", key=Credential(name="scheduler:scheduler", private_key=generate_private_key()))), "auth.bad_signature"),
    ("expired attestation", lambda h: h.ask("alice", h.att("alice", now=time.time() - 3600)), "auth.expired"),
    ("tampered groups", lambda h: h.ask("alice", {**h.att("alice"), "groups": ["root"]}), "auth.bad_signature"),
    ("a genuine attestation for another reservation", lambda h: h.ask("alice", h.att("alice"), rid="r9"),
     "auth.wrong_reservation"),
    ("a genuine attestation, spent, reused for another try", lambda h: _twice(h, "r1", "r1/1"), "auth.attestation_spent"),
]


def _twice(h: HostRig, first: str, then: str) -> Any:
    """alice's genuine attestation, granted for ``first``, presented again for ``then``."""
    att = h.att("alice")
    assert isinstance(h.ask("alice", att, rid=first), ReservationToken)
    return h.ask("alice", att, rid=then)


@pytest.mark.parametrize("name, attack, code", HOST_ATTACKS, ids=[a[0] for a in HOST_ATTACKS])
def test_a_host_refuses_whoever_calls_it(name: str, attack, code: str) -> None:
    out = attack(HostRig())
    assert not isinstance(out, ReservationToken)
    assert out.code == code, out


def test_a_host_grants_the_attested_user_with_the_attested_groups() -> None:
    h = HostRig()
    tok = h.ask("alice", h.att("alice", groups=("genomics",)), groups=("claimed",))
    assert isinstance(tok, ReservationToken)
    assert tok.holder.user == "alice" and tok.holder.groups == ("genomics",)


# --- the property: one user never touches another's work ------------------------------------

OPS = st.lists(st.tuples(st.sampled_from(["cancel", "show", "list", "activate", "submit", "replay"]),
                         st.integers(0, 2)), max_size=12)


@settings(max_examples=40, deadline=None)
@given(OPS)
def test_no_sequence_of_calls_by_one_user_touches_anothers_work(ops) -> None:
    w = World()
    for i in range(2):
        assert w.submit(w.alice, f"a{i}").ok
    before = {r.id: (r.state, r.user, tuple(x.id for x in r.instances)) for r in w.scheduler.list_requests()}
    seen_proof = None
    for n, (op, k) in enumerate(ops):
        rid = f"a{k % 2}" if k < 2 else f"m{n}"
        try:
            if op == "cancel":
                w.door.cancel(rid, "x", w.proof(w.mallory, "cancel", {"request_id": rid, "reason": "x"}))
            elif op == "show":
                w.door.request_info(rid, w.proof(w.mallory, "request_info", {"request_id": rid}))
            elif op == "list":
                infos = w.door.list_requests(None, None, w.proof(w.mallory, "list_requests", {"user": None, "state": None}))
                assert all(i.user == "mallory" for i in infos)
            elif op == "activate":
                iid = w.scheduler.request_info(f"a{k % 2}").instances[0].id
                w.submit(w.mallory, f"m{n}", activate=(iid,))  # refused unless the id is also mallory's own
            elif op == "submit":
                w.submit(w.mallory, f"m{n}", claim=Identity(user="alice", groups=("genomics",)))
            elif op == "replay" and seen_proof is not None:
                w.door.scheduleObjects(*seen_proof)
            if op == "submit":
                req = _req(f"x{n}", "alice")
                seen_proof = (req, w.proof(w.mallory, "scheduleObjects", {"request": req}))
        except AuthRefusedError:
            pass
        except Exception as exc:  # unknown request ids are the Scheduler's ordinary errors
            assert type(exc).__name__ == "SchedulingError", exc
    after = {r.id: (r.state, r.user, tuple(x.id for x in r.instances))
             for r in w.scheduler.list_requests() if r.id.startswith("a")}
    assert after == before
    assert all(r.user == "mallory" for r in w.scheduler.list_requests() if not r.id.startswith("a"))
