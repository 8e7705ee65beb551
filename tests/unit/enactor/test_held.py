"""Starting what an advance reservation holds: every instance or none; a
veto, an expired or missing token stops what started and cancels every
token; ``release`` only cancels."""

from __future__ import annotations

import pytest

from legionrm import codes
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakeClock, FakePort
from legionrm.models import (
    EnactRequest,
    Holder,
    MasterSchedule,
    Placement,
    ReservedStart,
    Resources,
)

HOLDER = Holder(user="alice", enactor="scheduler")


def reserved(gw: FakePort, hosts: tuple[str, ...]) -> ReservedStart:
    """What the Scheduler keeps after an enactment with ``create=False``."""
    master = MasterSchedule(placements=tuple(
        Placement(key=f"W#{i}", class_name="W", host=h, resources=Resources(cpus=1)) for i, h in enumerate(hosts)))
    result = Enactor(gw, clock=gw.clock).enact_schedule(EnactRequest(
        request_id="r", holder=HOLDER, masters=(master,), create=False, timeout_s=60))
    assert result.ok and not result.instances
    return ReservedStart(request_id="r", holder=HOLDER, placements=result.placements, host_tokens=result.host_tokens,
                         args={"W#0": {"n": 1}})


@pytest.mark.parametrize("case, ok, started_left, code", [
    pytest.param("all-start", True, 2, None, id="all-start"),
    pytest.param("veto", False, 0, "policy.veto", id="one-host-vetoes"),
    pytest.param("expired", False, 0, "token.expired", id="tokens-expired"),
    pytest.param("missing", False, 1, codes.TOKEN_MISSING, id="a-token-missing"),  # the token it was not given times out
])
def test_a_reserved_start_is_all_or_nothing(case: str, ok: bool, started_left: int, code: str | None) -> None:
    clock = FakeClock()
    gw = FakePort.of("a", "b", clock=clock)
    held = reserved(gw, ("a", "b"))
    if case == "veto":
        gw.resources["b"].veto_start = "policy.veto"
    elif case == "expired":
        clock.advance(61)
    elif case == "missing":
        held = held.model_copy(update={"host_tokens": {"W#0": held.host_tokens["W#0"]}})
    result = Enactor(gw, clock=clock).start_reserved(held)
    assert result.ok is ok
    assert len(gw.live()) == started_left
    if ok:
        assert sorted(i.host for i in result.instances) == ["a", "b"]
    else:
        assert result.attempts[0].failures[0].code == code and not result.instances
        assert set(gw.cancelled()) >= {t.token_id for t in held.host_tokens.values()}


def test_release_cancels_every_token_and_starts_nothing() -> None:
    gw = FakePort.of("a", "b")
    held = reserved(gw, ("a", "b"))
    result = Enactor(gw).start_reserved(held.model_copy(update={"release": True}))
    assert (result.ok, result.reservations_released) == (False, 2)
    assert gw.live() == set() and not any(m == "create" for m, _ in gw.calls)
