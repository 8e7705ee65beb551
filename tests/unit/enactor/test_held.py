"""Starting what an advance reservation holds: every instance or none; a
veto, an expired or missing token stops what started and cancels every
token; ``release`` only cancels."""

from __future__ import annotations

import pytest

from legionrm import codes
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakeClock, FakePort
from legionrm.hostobj.policies import Policy
from legionrm.inprocess import LocalSystem
from legionrm.models import (
    ClassSpec,
    ClusterSpec,
    EnactRequest,
    Holder,
    HostSpec,
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


def test_a_start_vetoed_half_way_stops_what_started_and_a_cancel_alone_would_not() -> None:
    gw = FakePort.of("a", "b")
    held = reserved(gw, ("a", "b"))
    gw.resources["b"].veto_start = "policy.veto"
    result = Enactor(gw).start_reserved(held)
    assert not result.ok and [m for m, _ in gw.calls].count("stop") == 1  # a's instance, stopped
    assert gw.running() == set() and gw.live() == set()
    # as a host does, the fake does not free a started token on a cancel: only the stop ended a's instance
    gw2 = FakePort.of("a")
    held2 = reserved(gw2, ("a",))
    started = Enactor(gw2).start_reserved(held2)
    gw2.cancel(list(held2.host_tokens.values()))
    assert started.ok and len(gw2.running()) == 1


class VetoWhileAsked(Policy):
    vetoing = False

    def admit_start(self, host, token, class_name):
        return self.refuse(host, "policy.veto", "not now") if VetoWhileAsked.vetoing else super().admit_start(
            host, token, class_name)


def test_against_real_hosts_a_start_that_fails_half_way_leaves_no_instance_running() -> None:
    VetoWhileAsked.vetoing = False
    spec = ClusterSpec(hosts=(HostSpec(name="a", attributes={"cpus": 4, "memory_gb": 8}),
                              HostSpec(name="b", attributes={"cpus": 4, "memory_gb": 8},
                                       policy="tests.unit.enactor.test_held:VetoWhileAsked")),
                       classes=(ClassSpec(name="W"),))
    s = LocalSystem(spec, clock=FakeClock())
    enactor = Enactor(s.resource_port, clock=s.clock)
    master = MasterSchedule(placements=tuple(
        Placement(key=f"W#{i}", class_name="W", host=h, resources=Resources(cpus=1)) for i, h in enumerate("ab")))
    got = enactor.enact_schedule(EnactRequest(request_id="r", holder=HOLDER, masters=(master,), create=False,
                                              timeout_s=60))
    assert got.ok
    VetoWhileAsked.vetoing = True  # b's owner changed its mind before the start
    result = enactor.start_reserved(ReservedStart(request_id="r", holder=HOLDER, placements=got.placements,
                                                  host_tokens=got.host_tokens))
    assert not result.ok and result.attempts[0].failures[0].code == "policy.veto"
    assert s.host("a").list_instances() == [] and s.host("b").list_instances() == []
    assert s.host("a").reservations() == [] and s.host("b").reservations() == []
