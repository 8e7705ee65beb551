"""Invariants of the enactor over random schedules and random resource behaviour."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakeClock, FakePort, FakeResource
from legionrm.errors import EnactmentError
from legionrm.models import (
    DeltaSchedule,
    EnactRequest,
    Holder,
    MasterSchedule,
    Placement,
    Resources,
)

HOSTS = [f"h{i}" for i in range(6)]
VAULTS = ["v0", "v1"]
KEYS = ["a", "b", "c"]


@st.composite
def placement(draw, key: str) -> Placement:
    return Placement(
        key=key,
        class_name="Foo",
        host=draw(st.sampled_from(HOSTS)),
        vault=draw(st.sampled_from([None, *VAULTS])),
        resources=Resources(cpus=draw(st.sampled_from([1.0, 2.0, 4.0]))),
    )


@st.composite
def master(draw) -> MasterSchedule:
    keys = KEYS[: draw(st.integers(1, 3))]
    placements = tuple(draw(placement(k)) for k in keys)
    deltas = []
    for _ in range(draw(st.integers(0, 3))):
        dkeys = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=len(keys), unique=True))
        deltas.append(DeltaSchedule(placements=tuple(draw(placement(k)) for k in sorted(dkeys))))
    return MasterSchedule(placements=placements, deltas=tuple(deltas))


@st.composite
def world(draw):
    clock = FakeClock()
    resources = {}
    for name in HOSTS + VAULTS:
        resources[name] = FakeResource(
            name,
            capacity=draw(st.sampled_from([2.0, 4.0, 8.0])),
            refuse=draw(st.sampled_from([None, None, None, "policy"])),
            dead=draw(st.booleans().map(lambda b: b and draw(st.integers(0, 4)) == 0)),
            veto_start=draw(st.sampled_from([None, None, None, "policy.start"])) if name in HOSTS else None,
        )
    g = FakePort(resources, clock=clock)
    g.raise_on = draw(st.sampled_from([None, None, None, 1, 2, 3, 5, 8]))
    tick = draw(st.sampled_from([0.0, 0.0, 4.0]))  # time passing per reserve round
    g.before_reserve = lambda rq: clock.advance(tick)
    request = EnactRequest(
        request_id="p",
        holder=Holder(user="u"),
        masters=tuple(draw(st.lists(master(), min_size=1, max_size=3))),
        timeout_s=draw(st.sampled_from([5.0, 30.0])),
        create=draw(st.booleans()),
    )
    approve = draw(st.sampled_from([True, True, True, False]))
    return g, clock, request, approve


def run(g, clock, request, approve):
    e = Enactor(g, clock=clock, approve=lambda p: approve)
    try:
        return e.enact_schedule(request)
    except EnactmentError:
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world())
def test_only_the_result_tokens_are_held_afterwards(w):
    g, clock, request, approve = w
    result = run(g, clock, request, approve)
    if result is None or not result.ok:
        assert g.live() == set()
        return
    held = {t.token_id for t in result.host_tokens.values()} | {t.token_id for t in result.vault_tokens.values()}
    if request.create:
        assert g.live() == held  # started tokens are held by their instances
    else:
        assert g.live() <= held  # un-started tokens may expire after the call returns
    # the result is coherent: one host token per placement, on the placement's host
    assert {p.key for p in result.placements} == set(result.host_tokens)
    for p in result.placements:
        assert result.host_tokens[p.key].issuer == p.host
        assert (p.key in result.vault_tokens) == (p.vault is not None)
        if p.vault:
            assert result.vault_tokens[p.key].issuer == p.vault
    if request.create:
        assert sorted(i.host for i in result.instances) == sorted(p.host for p in result.placements)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_deterministic(data):
    seed_world = data.draw(world())
    _, _, request, approve = seed_world
    # same request, two fresh identical worlds -> the same result and the same calls
    outs = []
    for _ in range(2):
        g, clock, _, _ = seed_world
        fresh = FakePort(
            {n: FakeResource(r.name, r.capacity, r.refuse, r.veto_start, r.dead) for n, r in g.resources.items()},
            clock=FakeClock(),
        )
        outs.append((run(fresh, fresh.clock, request, approve), fresh.calls))
    assert outs[0] == outs[1]
