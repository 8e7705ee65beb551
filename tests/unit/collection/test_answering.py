"""Which resources do not answer, and why (issue 27, item 7): the Collection's
door keeps each resource's refused write; ``up`` and ``status`` say it in one line."""

from __future__ import annotations

import time

import pytest

from legionrm import codes
from legionrm.auth import CallSigner
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import Guard, auth_home, ensure_home, signer_for
from legionrm.auth.registry import Registry
from legionrm.collection.answering import RefusedWrites, answering
from legionrm.collection.collection import Collection
from legionrm.collection.door import CollectionDoor
from legionrm.models import RefusedWrite
from legionrm.testing import FakeClock, host


def refused(name: str, code: str = "auth.bad_signature", at: float = 1.0) -> RefusedWrite:
    return RefusedWrite(resource=name, principal=f"host:{name}", code=code, reason="r", at=at)


@pytest.mark.parametrize("expected, present, refusals, line", [
    (["h1", "h2"], ["h1", "h2"], [], "all 2 resources answer"),
    (["h1", "h2", "h3"], ["h1"], [refused("h2"), refused("h3")],
     "2 of 3 resources not answering: auth.bad_signature from host:h2, host:h3"),
    (["h1", "h2", "h3"], ["h1"], [refused("h2")],
     "2 of 3 resources not answering: auth.bad_signature from host:h2; never joined: h3"),
    ([], ["h1", "h2"], [refused("h2", "auth.unknown_user")],  # no up.json: what the Collection saw
     "1 of 2 resources not answering: auth.unknown_user from host:h2"),
    ([f"h{i}" for i in range(16)], ["h0", "h1"], [refused(f"h{i}") for i in range(2, 16)],
     "14 of 16 resources not answering: auth.bad_signature from host:h10, host:h11, host:h12, host:h13 and 10 more"),
], ids=["all-answer", "two-refused", "one-refused-one-silent", "present-but-refused", "fourteen-of-sixteen"])
def test_the_line_says_how_many_do_not_answer_and_why(expected, present, refusals, line) -> None:
    got = answering(expected, present, refusals)
    assert got.line() == line
    assert got.ok == (line.startswith("all"))


def test_refused_writes_keep_the_latest_per_resource_and_forget_one_that_answers() -> None:
    clock = FakeClock()
    kept = RefusedWrites(clock, max_kept=2)
    kept.refused("h1", "host:h1", "auth.bad_signature", "x")
    clock.advance(1)
    kept.refused("h1", "host:h1", "auth.bad_signature", "x")
    assert [(r.resource, r.count) for r in kept.latest()] == [("h1", 2)]
    kept.refused("h2", "host:h2", "auth.expired", "y")
    kept.refused("h3", "host:h3", "auth.expired", "y")  # over the bound: the oldest goes
    assert {r.resource for r in kept.latest()} == {"h2", "h3"}
    kept.answered("h2")
    assert [r.resource for r in kept.latest()] == ["h3"]


def test_the_door_keeps_a_join_signed_with_a_stale_key_as_why_the_host_is_silent(tmp_path) -> None:
    home = tmp_path / "home"
    ensure_home(home, operator="ops")
    registry = Registry(auth_home(home))
    stale = registry.add_agent("host", "h3")
    fresh = registry.add_agent("host", "h3")  # issued anew: the first is no good any more
    door = CollectionDoor(Collection(), Guard.for_home(home, by="collection"))
    rec = host("h3", cpus=4)

    def join(cred) -> None:
        door.join(rec, CallSigner(cred, time.time).sign("join", {"record": rec}, to="collection"))

    with pytest.raises(AuthRefusedError):
        join(stale)
    admin = signer_for(home, "ops")
    (why,) = door.refused_writes(admin.sign("refused_writes", {}, to="collection"))
    assert (why.resource, why.principal, why.code) == ("h3", "host:h3", codes.AUTH_BAD_SIGNATURE)
    assert answering(["h3"], door.core.names(), [why]).line() == \
        "1 of 1 resources not answering: auth.bad_signature from host:h3"
    join(fresh)
    assert door.refused_writes(admin.sign("refused_writes", {}, to="collection")) == []
    assert door.core.names() == ["h3"]


def test_only_agents_and_administrators_see_why(tmp_path) -> None:
    home = tmp_path / "home"
    ensure_home(home, operator="ops")
    Registry(auth_home(home)).add_user("ann")
    door = CollectionDoor(Collection(), Guard.for_home(home, by="collection"))
    with pytest.raises(AuthRefusedError, match="auth.forbidden"):
        door.refused_writes(signer_for(home, "ann").sign("refused_writes", {}, to="collection"))
