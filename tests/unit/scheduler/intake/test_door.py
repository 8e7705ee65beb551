"""The door of a group: only the gateway agent sends one; each item is its user's, with every rule of
a single call (unknown user, a user's own priority, another's request) applied to it alone; items and
answers cross in their compact form (a request's JSON in, a model's JSON out)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from legionrm.auth import Registry, Verifier, sign_call
from legionrm.auth.canonical import payload_digest
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import Guard
from legionrm.errors import SchedulingError
from legionrm.models import RequestInfo, SchedulerResponse
from legionrm.models.intake import Cancel, Cancelled, Submit, Submitted, pack_items, unpack_replies
from legionrm.scheduler.door import SchedulerDoor
from tests.unit.scheduler.intake.test_group import held, system


class World:
    def __init__(self, path) -> None:  # type: ignore[no-untyped-def]
        self.s = system(path)
        registry = Registry(None)
        self.keys = {"alice": registry.add_user("alice"), "bob": registry.add_user("bob"),
                     "ops": registry.add_user("ops", roles=["admin"]),
                     "gateway": registry.add_agent("gateway", "gateway"),
                     "host": registry.add_agent("host", "h0")}
        self.door = SchedulerDoor(self.s.scheduler, Guard(Verifier(registry, time.time, by="scheduler")))

    def call(self, signer: str | None, method: str, **args: Any) -> Any:
        proof = None if signer is None else sign_call(self.keys[signer], method, payload_digest(args), time.time(),
                                                      to="scheduler")
        return getattr(self.door, method)(**args, proof=proof)


def submit(user: str, request) -> Submit:  # type: ignore[no-untyped-def]
    return Submit(user, request.model_dump_json())


@pytest.mark.parametrize("signer, code", [(None, "auth.no_proof"), ("alice", "auth.forbidden"),
                                          ("ops", "auth.forbidden"), ("host", "auth.forbidden")],
                         ids=["no-proof", "a-user", "an-admin", "another-agent"])
def test_only_the_gateway_sends_a_group(tmp_path, signer, code) -> None:
    w = World(tmp_path / "r.db")
    for items in ([submit("alice", held("a1"))], [Cancel("alice", "a1", "x")]):
        with pytest.raises(AuthRefusedError) as refused:
            w.call(signer, "intake_batch", items=items)
        assert refused.value.code == code
    assert w.s.scheduler.book.entries() == []


@pytest.mark.parametrize("items", [[("alice", "{}")], "not a list", [submit("alice", held("a1")), 3]],
                         ids=["a-plain-tuple", "not-a-list", "one-not-an-item"])
def test_a_group_of_anything_else_is_refused_whole(tmp_path, items) -> None:
    w = World(tmp_path / "r.db")
    with pytest.raises(SchedulingError, match="Submit and Cancel"):
        w.call("gateway", "intake_batch", items=items)
    assert w.s.scheduler.book.entries() == []


def test_each_item_is_its_users_with_the_rules_of_a_single_call(tmp_path) -> None:
    w = World(tmp_path / "r.db")
    claims_bob = held("a2", user="bob")  # the request says bob: the item is alice's, so it is alice's
    pushy = held("a3").model_copy(update={"priority": 10**6})
    got = w.call("gateway", "intake_batch", items=[
        submit("alice", held("a1")), submit("alice", claims_bob), submit("alice", pushy), submit("nobody", held("n1")),
        submit("ops", held("o1").model_copy(update={"priority": 5})), Submit("alice", "{not json")])
    assert [type(g) for g in got] == [Submitted] * 5 + [SchedulingError]
    assert [g.state for g in got[:5]] == ["pending", "pending", "refused", "refused", "pending"]
    answers = [SchedulerResponse.model_validate_json(g.response) for g in got[:5]]
    assert [(a.request_id, a.ok, a.state) for a in answers] == [g[:3] for g in got[:5]]
    assert answers[2].failures[0].code == "request.priority" and answers[3].failures[0].code == "auth.unknown_user"
    assert w.s.scheduler.book.find("a2").user == "alice"
    gone = w.call("gateway", "intake_batch", items=[
        Cancel("bob", "a1", "x"), Cancel("alice", "a1", "mine"), Cancel("ops", "o1", "x"), Cancel("alice", "zz", "x"),
        Cancel("nobody", "a2", "x")])
    assert isinstance(gone[0], AuthRefusedError) and gone[0].code == "auth.not_owner"
    assert [type(g) for g in gone[1:3]] == [Cancelled] * 2
    infos = [RequestInfo.model_validate_json(g.info) for g in gone[1:3]]
    assert [(i.id, i.state) for i in infos] == [("a1", "cancelled"), ("o1", "cancelled")]
    assert isinstance(gone[3], SchedulingError) and "no request" in str(gone[3])
    assert isinstance(gone[4], AuthRefusedError) and gone[4].code == "auth.unknown_user"
    assert w.s.scheduler.book.find("a2").state == "pending"


def test_submits_and_cancels_of_one_group_are_answered_in_order(tmp_path) -> None:
    """A group of both kinds: the submits go in first, so a cancel of one submitted in the same group
    finds it; each answer is at its item's place."""
    w = World(tmp_path / "r.db")
    w.call("gateway", "intake_batch", items=[submit("alice", held("a1"))])
    got = w.call("gateway", "intake_batch", items=[Cancel("alice", "a1", "bye"), submit("bob", held("b1")),
                                                   submit("alice", held("a2")), Cancel("bob", "a1", "mine?")])
    assert [type(g) for g in got] == [Cancelled, Submitted, Submitted, AuthRefusedError]
    assert RequestInfo.model_validate_json(got[0].info).state == "cancelled"
    assert [g.request_id for g in got[1:3]] == ["b1", "a2"]
    assert {e.id: e.state for e in w.s.scheduler.book.entries()} == {"a1": "cancelled", "b1": "pending",
                                                                    "a2": "pending"}


def test_a_packed_group_is_answered_packed_as_its_list_is(tmp_path) -> None:
    """The gateway's form: the items as one text, the proof over that text, the replies packed; the same
    answers, and the same refusals, as the group given as a list."""
    w = World(tmp_path / "r.db")
    got = unpack_replies(w.call("gateway", "intake_batch", items=pack_items([
        submit("alice", held("a1")), submit("nobody", held("n1")), Submit("alice", "{not json")])))
    assert [type(g) for g in got] == [Submitted, Submitted, SchedulingError]
    assert [g.state for g in got[:2]] == ["pending", "refused"]
    gone = unpack_replies(w.call("gateway", "intake_batch", items=pack_items([
        Cancel("bob", "a1", "x"), Cancel("alice", "a1", "mine")])))
    assert isinstance(gone[0], AuthRefusedError) and gone[0].code == "auth.not_owner"
    assert RequestInfo.model_validate_json(gone[1].info).state == "cancelled"
    with pytest.raises(AuthRefusedError) as refused:
        w.call("alice", "intake_batch", items=pack_items([submit("alice", held("a2"))]))
    assert refused.value.code == "auth.forbidden"
    with pytest.raises(SchedulingError, match="Submit and Cancel"):
        w.call("gateway", "intake_batch", items='[["s", "alice"]]')
    assert {e.id for e in w.s.scheduler.book.entries()} == {"a1"}


def test_a_packed_groups_proof_covers_its_text(tmp_path) -> None:
    """A proof made for one packed group does not carry another (nor the same items as a list)."""
    w = World(tmp_path / "r.db")
    text = pack_items([submit("alice", held("a1"))])
    proof = sign_call(w.keys["gateway"], "intake_batch", payload_digest({"items": text}), time.time(), to="scheduler")
    for items in (pack_items([submit("alice", held("a2"))]), [submit("alice", held("a1"))]):
        with pytest.raises(AuthRefusedError) as refused:
            w.door.intake_batch(items, proof=proof)
        assert refused.value.code == "auth.wrong_call"
    assert w.s.scheduler.book.entries() == []
