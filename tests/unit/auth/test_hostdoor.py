"""Issue 15 at the hosts: who may cancel, stop and start on a host (and create
or destroy at a class object).  One table row per attack against the pure
cores behind a :class:`ResourceDoor` / :class:`ClassDoor` (what the host,
host-group, vault and class actors run), each refused with its code and
leaving the victim's work untouched; then what the system's own agents and
the attested holder may do."""

from __future__ import annotations

import time
from typing import Any

import pytest

from legionrm.auth import AttestationVerifier, Registry, VerifiedCaller, Verifier, attest, sign_call
from legionrm.auth.canonical import payload_digest
from legionrm.auth.guard import SCHEDULER, Guard
from legionrm.auth.hostdoor import ClassDoor, ResourceDoor, create_args
from legionrm.auth.keys import Credential, generate_private_key
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.host import HostObject
from legionrm.models import (
    CreateRequest,
    Holder,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
    StartRequest,
)


class Site:
    """Host n1 in group g, checking attestations; alice holds a reservation and
    runs one instance on another; mallory is a registered stranger."""

    def __init__(self) -> None:
        self.registry = Registry(None)
        self.alice = self.registry.add_user("alice", groups=["genomics"])
        self.mallory = self.registry.add_user("mallory")
        self.ops = self.registry.add_user("ops", roles=["admin"])
        self.scheduler = self.registry.add_agent("scheduler", "scheduler")
        self.enactor = self.registry.add_agent("enactor", "enactor")
        self.klass = self.registry.add_agent("class", "W")
        self.host_agent = self.registry.add_agent("host", "n1")
        self.outsider = Credential(name="eve", private_key=generate_private_key())  # in no registry
        self.n1 = HostObject("n1", Resources(cpus=8, memory_gb=32))
        self.n1.attestations = AttestationVerifier({SCHEDULER: self.scheduler.public_key}, time.time, by="n1")
        self.group = HostGroup("g", [self.n1])
        self.door = ResourceDoor(Guard(Verifier(self.registry, time.time, by="n1")),
                                 token_holder=self.group.attested_holder, instance_holder=self.group.instance_holder,
                                 by="n1")
        self.kept = self.reserve("r-kept")  # a reservation alice has not used yet
        running = self.reserve("r-run")
        ref = self.group.start_objects([StartRequest(token=running, class_name="W", holder=Holder(user="alice"))])[0]
        assert isinstance(ref, InstanceRef), ref
        self.instance = ref

    def reserve(self, rid: str, user: str = "alice") -> ReservationToken:
        who = VerifiedCaller(name=user, kind="user")
        att = attest(self.scheduler, who, rid, "n1", time.time(), reservation=rid,
                     resources=Resources(cpus=1, memory_gb=1)).model_dump(mode="json")
        tok = self.n1.make_reservation(ReservationRequest(request_id=rid, resource="n1", holder=Holder(user=user),
                                                          resources=Resources(cpus=1, memory_gb=1), attestation=att))
        assert isinstance(tok, ReservationToken), tok
        return tok

    def proof(self, who: Credential, call: str, args: Any, to: str = "n1") -> Any:
        return sign_call(who, call, payload_digest(args), time.time(), to=to)

    # the calls the actors make, with a signer (or a given proof)
    def cancel(self, who: Credential | None, items: list[Any], proof: Any = "sign") -> list[Any]:
        args = {"items": items}
        p = self.proof(who, "cancel_reservations", args) if proof == "sign" and who else proof if proof != "sign" else None
        return self.door.gate(p, "cancel_reservations", args, items, self.door.may_cancel, self.group.cancel_reservations)

    def stop(self, who: Credential | None, items: list[Any], reason: str = "stopped") -> list[Any]:
        args = {"items": items, "reason": reason}
        p = self.proof(who, "stop_objects", args) if who else None
        return self.door.gate(p, "stop_objects", args, items, self.door.may_stop,
                              lambda xs: self.group.stop_objects(xs, reason))

    def start(self, who: Credential | None, token: ReservationToken, holder: str = "alice") -> Any:
        starts = [StartRequest(token=token, class_name="W", holder=Holder(user=holder))]
        args = {"starts": starts}
        p = self.proof(who, "start_objects", args) if who else None
        return self.door.gate(p, "start_objects", args, starts, self.door.may_start, self.group.start_objects)[0]

    def untouched(self) -> None:
        assert self.n1.check_reservation(self.kept.token_id) == self.kept
        assert [r.instance_id for r in self.n1.list_instances()] == [self.instance.instance_id]


def _replayed_cancel(s: Site) -> list[Any]:
    args = {"items": [s.kept.token_id]}
    p = s.proof(s.enactor, "cancel_reservations", {"items": ["n1~nothing"]})
    s.door.gate(p, "cancel_reservations", {"items": ["n1~nothing"]}, ["n1~nothing"], s.door.may_cancel,
                s.group.cancel_reservations)
    return s.door.gate(p, "cancel_reservations", args, [s.kept.token_id], s.door.may_cancel, s.group.cancel_reservations)


def _replayed_same(s: Site) -> list[Any]:
    args = {"items": ["n1~nothing"]}
    p = s.proof(s.enactor, "cancel_reservations", args)
    s.door.gate(p, "cancel_reservations", args, ["n1~nothing"], s.door.may_cancel, s.group.cancel_reservations)
    return s.door.gate(p, "cancel_reservations", args, ["n1~nothing"], s.door.may_cancel, s.group.cancel_reservations)


HOST_ATTACKS = [
    ("a stranger cancels with a bare token id", lambda s: s.cancel(s.mallory, [s.kept.token_id]), "auth.not_owner"),
    ("a stranger cancels with (host, token id)", lambda s: s.cancel(s.mallory, [("n1", s.kept.token_id)]), "auth.not_owner"),
    ("a stranger cancels with the whole token", lambda s: s.cancel(s.mallory, [s.kept]), "auth.not_owner"),
    ("a cancel with no proof", lambda s: s.cancel(None, [s.kept.token_id]), "auth.no_proof"),
    ("a cancel by someone in no registry", lambda s: s.cancel(s.outsider, [s.kept.token_id]), "auth.unknown_user"),
    ("an administrator cancels at the host", lambda s: s.cancel(s.ops, [s.kept.token_id]), "auth.not_owner"),
    ("a host agent cancels another's token", lambda s: s.cancel(s.host_agent, [s.kept.token_id]), "auth.forbidden"),
    ("alice's cancel proof reused for another token",
     lambda s: s.cancel(None, [s.kept.token_id], proof=s.proof(s.alice, "cancel_reservations", {"items": ["n1~x"]})),
     "auth.wrong_call"),
    ("the Enactor's proof replayed for other items", _replayed_cancel, "auth.wrong_call"),
    ("the Enactor's proof replayed as is", _replayed_same, "auth.replayed"),
    ("a stranger stops an instance by id", lambda s: s.stop(s.mallory, [s.instance.instance_id]), "auth.not_owner"),
    ("a stranger stops by (host, instance id)", lambda s: s.stop(s.mallory, [("n1", s.instance.instance_id)]), "auth.not_owner"),
    ("a stranger stops with the instance's ref", lambda s: s.stop(s.mallory, [s.instance]), "auth.not_owner"),
    ("a stop with no proof", lambda s: s.stop(None, [s.instance.instance_id]), "auth.no_proof"),
    ("a stranger probes an unknown instance", lambda s: s.stop(s.mallory, ["n1~i999"]), "auth.not_owner"),
    ("a host agent stops an instance", lambda s: s.stop(s.host_agent, [s.instance.instance_id]), "auth.forbidden"),
    ("the token's holder starts directly", lambda s: [s.start(s.alice, s.kept)], "auth.forbidden"),
    ("a stranger starts with a stolen token", lambda s: [s.start(s.mallory, s.kept, "mallory")], "auth.forbidden"),
    ("a start with no proof", lambda s: [s.start(None, s.kept)], "auth.no_proof"),
    ("the Scheduler starts (it only approves)", lambda s: [s.start(s.scheduler, s.kept)], "auth.forbidden"),
    ("the Enactor starts for someone not attested", lambda s: [s.start(s.enactor, s.kept, "mallory")], "auth.not_owner"),
    ("a class starts for someone not attested", lambda s: [s.start(s.klass, s.kept, "mallory")], "auth.not_owner"),
]


@pytest.mark.parametrize(("name", "attack", "code"), HOST_ATTACKS, ids=[a[0] for a in HOST_ATTACKS])
def test_each_host_attack_is_refused_with_its_code(name: str, attack: Any, code: str) -> None:
    s = Site()
    answers = attack(s)
    refused = [a for a in answers if isinstance(a, Refusal)]
    assert refused and refused[-1].code == code, answers
    assert refused[-1].by == "n1"
    s.untouched()


def test_the_attested_holder_cancels_and_stops_her_own_work() -> None:
    s = Site()
    assert s.cancel(s.alice, [s.kept.token_id]) == [True]
    assert isinstance(s.stop(s.alice, [s.instance.instance_id])[0], Resources)
    assert s.n1.list_instances() == []


def test_a_batch_is_decided_item_by_item() -> None:
    s = Site()
    other = s.reserve("r-mallory", user="mallory")
    got = s.cancel(s.mallory, [s.kept.token_id, other.token_id])
    assert isinstance(got[0], Refusal) and got[0].code == "auth.not_owner" and got[1] is True
    assert s.n1.check_reservation(s.kept.token_id) == s.kept


@pytest.mark.parametrize("agent", ["scheduler", "enactor"])
def test_the_systems_agents_cancel_and_stop_anyones_work(agent: str) -> None:
    s = Site()
    who = getattr(s, agent)
    assert s.cancel(who, [s.kept.token_id]) == [True]
    assert isinstance(s.stop(who, [s.instance.instance_id])[0], Resources)


@pytest.mark.parametrize("agent", ["enactor", "klass"])
def test_a_start_signed_by_the_enactor_or_a_class_for_the_attested_holder_runs(agent: str) -> None:
    s = Site()
    ref = s.start(getattr(s, agent), s.kept)
    assert isinstance(ref, InstanceRef) and ref.user == "alice"


def test_an_open_door_passes_everything() -> None:
    s = Site()
    s.door = ResourceDoor(None, token_holder=s.group.attested_holder, by="n1")
    assert s.door.gate(None, "cancel_reservations", {}, [s.kept.token_id], s.door.may_cancel,
                       s.group.cancel_reservations) == [True]


# --- the class object -------------------------------------------------------------------------


def _class_door(s: Site) -> ClassDoor:
    return ClassDoor(Guard(Verifier(s.registry, time.time, by="class:W")),
                     lambda iid: "alice" if iid == s.instance.instance_id else None, by="class:W")


def _create(s: Site, who: Credential | None) -> Refusal | None:
    args = create_args("n1", None, s.kept, {}, None, Holder(user="alice"))
    return _class_door(s).check_create(s.proof(who, "create_instance", args, "class:W") if who else None, args)


def _create_batch(s: Site, who: Credential | None, signed_as: str = "create_instances", to: str = "class:W",
                  batch_signed: list | None = None) -> Refusal | None:
    """A batched create: one proof over the whole batch (``signed_as`` / ``batch_signed``: a proof made
    for another call or another batch)."""
    batch = [CreateRequest(host="n1", token=s.kept, holder=Holder(user="alice"))]
    args = {"batch": batch}
    proof = s.proof(who, signed_as, {"batch": batch_signed} if batch_signed is not None else args, to) if who else None
    return _class_door(s).check_create(proof, args, call="create_instances")


def _destroy(s: Site, who: Credential | None, iid: str) -> Refusal | None:
    args = {"instance_id": iid, "reason": "x"}
    return _class_door(s).check_destroy(s.proof(who, "destroy_instance", args, "class:W") if who else None, args, iid)


CLASS_ATTACKS = [
    ("the token's holder creates directly", lambda s: _create(s, s.alice), "auth.forbidden"),
    ("a stranger creates with a stolen token", lambda s: _create(s, s.mallory), "auth.forbidden"),
    ("a create with no proof", lambda s: _create(s, None), "auth.no_proof"),
    ("the Scheduler creates past the Enactor", lambda s: _create(s, s.scheduler), "auth.forbidden"),
    ("the token's holder creates a batch directly", lambda s: _create_batch(s, s.alice), "auth.forbidden"),
    ("a batch create with no proof", lambda s: _create_batch(s, None), "auth.no_proof"),
    ("the Scheduler creates a batch past the Enactor", lambda s: _create_batch(s, s.scheduler), "auth.forbidden"),
    ("the Enactor's single create proof replayed for a batch",
     lambda s: _create_batch(s, s.enactor, signed_as="create_instance"), "auth.wrong_call"),
    ("the Enactor's proof of an empty batch replayed for a full one",
     lambda s: _create_batch(s, s.enactor, batch_signed=[]), "auth.wrong_call"),
    ("the Enactor's batch proof made out to another class",
     lambda s: _create_batch(s, s.enactor, to="class:V"), "auth.wrong_audience"),
    ("a stranger destroys another's instance", lambda s: _destroy(s, s.mallory, s.instance.instance_id), "auth.not_owner"),
    ("a destroy with no proof", lambda s: _destroy(s, None, s.instance.instance_id), "auth.no_proof"),
    ("a class agent destroys at another class", lambda s: _destroy(s, s.klass, s.instance.instance_id), "auth.not_owner"),
]


@pytest.mark.parametrize(("name", "attack", "code"), CLASS_ATTACKS, ids=[a[0] for a in CLASS_ATTACKS])
def test_each_class_attack_is_refused_with_its_code(name: str, attack: Any, code: str) -> None:
    got = attack(Site())
    assert isinstance(got, Refusal) and got.code == code and got.by == "class:W", got


def test_the_enactor_creates_and_the_owner_or_agents_destroy() -> None:
    s = Site()
    assert _create(s, s.enactor) is None
    assert _create_batch(s, s.enactor) is None
    for who in (s.alice, s.scheduler, s.enactor):
        assert _destroy(s, who, s.instance.instance_id) is None
