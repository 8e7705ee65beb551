"""The door of a group: only the gateway agent sends one; each item is its user's, with every rule of
a single call (unknown user, a user's own priority, another's request) applied to it alone."""

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


@pytest.mark.parametrize("signer, code", [(None, "auth.no_proof"), ("alice", "auth.forbidden"),
                                          ("ops", "auth.forbidden"), ("host", "auth.forbidden")],
                         ids=["no-proof", "a-user", "an-admin", "another-agent"])
def test_only_the_gateway_sends_a_group(tmp_path, signer, code) -> None:
    w = World(tmp_path / "r.db")
    for method, items in (("submit_batch", [("alice", held("a1"))]), ("cancel_batch", [("alice", "a1", "x")])):
        with pytest.raises(AuthRefusedError) as refused:
            w.call(signer, method, items=items)
        assert refused.value.code == code
    assert w.s.scheduler.book.entries() == []


def test_each_item_is_its_users_with_the_rules_of_a_single_call(tmp_path) -> None:
    w = World(tmp_path / "r.db")
    claims_bob = held("a2", user="bob")  # the request says bob: the item is alice's, so it is alice's
    pushy = held("a3").model_copy(update={"priority": 10**6})
    got = w.call("gateway", "submit_batch", items=[("alice", held("a1")), ("alice", claims_bob), ("alice", pushy),
                                                   ("nobody", held("n1")), ("ops", held("o1").model_copy(
                                                       update={"priority": 5}))])
    assert [type(g) for g in got] == [SchedulerResponse] * 5
    assert [g.state for g in got] == ["pending", "pending", "refused", "refused", "pending"]
    assert got[2].failures[0].code == "request.priority" and got[3].failures[0].code == "auth.unknown_user"
    assert w.s.scheduler.book.find("a2").user == "alice"
    gone = w.call("gateway", "cancel_batch", items=[("bob", "a1", "x"), ("alice", "a1", "mine"), ("ops", "o1", "x"),
                                                    ("alice", "zz", "x"), ("nobody", "a2", "x")])
    assert isinstance(gone[0], AuthRefusedError) and gone[0].code == "auth.not_owner"
    assert [g.state for g in gone[1:3]] == ["cancelled", "cancelled"] and isinstance(gone[1], RequestInfo)
    assert isinstance(gone[3], SchedulingError) and "no request" in str(gone[3])
    assert isinstance(gone[4], AuthRefusedError) and gone[4].code == "auth.unknown_user"
    assert w.s.scheduler.book.find("a2").state == "pending"
