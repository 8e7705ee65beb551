"""Issue 15 for objects: only the owner of an object (or an administrator)
may deactivate, migrate or ask after it; others are refused with a code and
nothing moves."""

from __future__ import annotations

import time
from typing import Any

import pytest

from legionrm.auth import Registry, Verifier, sign_call
from legionrm.auth.canonical import payload_digest
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import Guard
from legionrm.models import ObjectStatus
from legionrm.scheduler.door import SchedulerDoor
from tests.unit.scheduler.test_mobility import start, system


class World:
    def __init__(self) -> None:
        self.s = system()
        registry = Registry(None)
        self.users = {"alice": registry.add_user("alice"), "mallory": registry.add_user("mallory"),
                      "ops": registry.add_user("ops", roles=["admin"])}
        self.door = SchedulerDoor(self.s.scheduler, Guard(Verifier(registry, time.time, by="scheduler")),
                                  mobility=self.s.mobility)
        self.ref = start(self.s, "r1", "a1")

    def call(self, who: str | None, method: str, **args: Any) -> Any:
        proof = None if who is None else sign_call(self.users[who], method, payload_digest(args), time.time(),
                                                            to="scheduler")
        return getattr(self.door, method)(**args, proof=proof)


@pytest.mark.parametrize("who, method, extra, code", [
    ("alice", "deactivate", {"reason": "mine"}, None),
    ("ops", "migrate", {"constraint": '$name == "b1"'}, None),
    ("alice", "object_status", {}, None),
    ("mallory", "deactivate", {"reason": "hers"}, "auth.not_owner"),
    ("mallory", "migrate", {"constraint": '$name == "b1"'}, "auth.not_owner"),
    ("mallory", "object_status", {}, "auth.not_owner"),
    (None, "deactivate", {"reason": "anon"}, "auth.no_proof"),
], ids=["owner-deactivates", "admin-migrates", "owner-asks", "stranger-deactivates", "stranger-migrates",
        "stranger-asks", "no-proof"])
def test_only_the_owner_or_an_admin_moves_an_object(who, method, extra, code) -> None:
    w = World()
    if code is None:
        assert isinstance(w.call(who, method, object_id=w.ref.instance_id, **extra), ObjectStatus)
        return
    with pytest.raises(AuthRefusedError) as err:
        w.call(who, method, object_id=w.ref.instance_id, **extra)
    assert err.value.code == code
    assert [i.instance_id for i in w.s.host("a1").list_instances()] == [w.ref.instance_id]  # nothing moved
    assert not w.s.mobility.changes
