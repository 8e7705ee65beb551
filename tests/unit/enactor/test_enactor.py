"""The enactor core against the scripted fake port (no Ray)."""

from __future__ import annotations

import pytest

from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakeClock, FakePort, FakeResource
from legionrm.errors import EnactmentError
from legionrm.models import (
    DeltaSchedule,
    EnactRequest,
    Holder,
    MasterSchedule,
    Placement,
    Refusal,
    Resources,
)

HOLDER = Holder(user="alice", class_name="Foo")
ONE = Resources(cpus=1)


def P(key: str, host: str, vault: str | None = None, cpus: float = 1) -> Placement:
    return Placement(key=key, class_name="Foo", host=host, vault=vault, resources=Resources(cpus=cpus))


def M(*placements: Placement, deltas: tuple[tuple[Placement, ...], ...] = ()) -> MasterSchedule:
    return MasterSchedule(placements=placements, deltas=tuple(DeltaSchedule(placements=d) for d in deltas))


def req(*masters: MasterSchedule, create: bool = True, timeout_s: float = 30.0) -> EnactRequest:
    return EnactRequest(request_id="r1", holder=HOLDER, masters=masters, create=create, timeout_s=timeout_s)


def gw(*names: str, clock: FakeClock | None = None, **behaviour: dict) -> FakePort:
    g = FakePort.of(*names, clock=clock)
    for attr, which in behaviour.items():
        for name, value in which.items():
            setattr(g.resources[name], attr, value)
    return g


def held_ids(result) -> set[str]:
    return {t.token_id for t in result.host_tokens.values()} | {t.token_id for t in result.vault_tokens.values()}


def reserve_calls(g: FakePort) -> list[list[str]]:
    return [ids for m, ids in g.calls if m == "reserve"]


# --- success and the shape of the calls ---------------------------------------


def test_success_first_try_reserves_everything_in_one_parallel_round():
    g = gw("h1", "h2", "v1")
    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("Foo#0", "h1", "v1"), P("Foo#1", "h2"))))
    assert r.ok and r.master == 0
    assert reserve_calls(g) == [["r1/Foo#0/host/0", "r1/Foo#0/vault/0", "r1/Foo#1/host/0"]]
    assert set(r.host_tokens) == {"Foo#0", "Foo#1"} and set(r.vault_tokens) == {"Foo#0"}
    assert [i.host for i in r.instances] == ["h1", "h2"]
    assert r.reservations_made == 3 and r.reservations_released == 0 and r.thrash == 0
    assert g.live() == held_ids(r)
    assert r.attempts[0].succeeded and r.attempts[0].deltas_tried == 0


def test_reserve_only_leaves_creation_to_the_caller():
    g = gw("h1")
    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("a", "h1")), create=False))
    assert r.ok and r.instances == () and not any(m == "create" for m, _ in g.calls)
    assert g.live() == held_ids(r)


def test_request_ids_are_deterministic_and_replay_is_idempotent():
    g = gw("h1", "h2")
    e = Enactor(g, clock=g.clock)
    r1 = e.enact_schedule(req(M(P("a", "h1"), P("b", "h2")), create=False))
    r2 = e.enact_schedule(req(M(P("a", "h1"), P("b", "h2")), create=False))  # a retried call
    assert held_ids(r1) == held_ids(r2) == g.live()


# --- veto at reservation, deltas ------------------------------------------------


def test_veto_then_delta_keeps_every_other_reservation():
    g = gw("h1", "h2", "h3", "h4", refuse={"h2": "policy.user"})
    master = M(P("a", "h1"), P("b", "h2"), P("c", "h3"), deltas=((P("b", "h4"),),))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok and r.master == 0 and r.thrash == 0
    assert {p.key: p.host for p in r.placements} == {"a": "h1", "b": "h4", "c": "h3"}
    # the second round asks only for the delta's mapping; nothing was released
    assert reserve_calls(g) == [["r1/a/host/0", "r1/b/host/0", "r1/c/host/0"], ["r1/b/host/1"]]
    assert g.cancelled() == [] and r.reservations_released == 0
    assert r.attempts[0].deltas_tried == 1
    assert [(f.key, f.resource, f.code) for f in r.attempts[0].failures] == [("b", "h2", "policy.user")]
    assert g.live() == held_ids(r)


def test_delta_releases_exactly_the_reservations_it_conflicts_with():
    # the delta moves b (failed) and c (held on h3) to h4, h5: only c's h3 token goes
    g = gw("h1", "h2", "h3", "h4", "h5", refuse={"h2": "capacity"})
    master = M(P("a", "h1"), P("b", "h2"), P("c", "h3"), deltas=((P("b", "h4"), P("c", "h5")),))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok and r.thrash == 0
    assert g.cancelled() == ["h3:r1/c/host/0"] and r.reservations_released == 1
    assert r.host_tokens["a"].token_id == "h1:r1/a/host/0"  # kept from the master round


def test_delta_that_changes_the_vault_re_pairs_the_host():
    # a host reserves for a host-vault pair, so a new vault means a new host reservation
    g = gw("h1", "h2", "v1", "v2", refuse={"v1": "vault.full"})
    master = M(P("a", "h1", "v1"), P("b", "h2", "v2"), deltas=((P("a", "h1", "v2"),),))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok and r.thrash == 1 and g.cancelled() == ["h1:r1/a/host/0"]
    assert r.host_tokens["a"].token_id == "h1:r1/a/host/1" and r.vault_tokens["a"].issuer == "v2"
    assert r.host_tokens["b"].token_id == "h2:r1/b/host/0"  # untouched mapping kept


@pytest.mark.parametrize(
    "deltas, hosts, ok, tried",
    [
        pytest.param(((P("x", "h9"),),), {}, False, 0, id="no-applicable-delta"),
        pytest.param(((P("b", "h3"),), (P("b", "h4"),)), {"h3": "policy"}, True, 2, id="second-delta-works"),
        pytest.param(((P("c", "h4"),), (P("b", "h4"),)), {}, True, 1, id="inapplicable-delta-skipped"),
        pytest.param(((P("b", "h3"),), (P("b", "h5"),)), {"h3": "policy", "h5": "policy"}, False, 2, id="all-deltas-fail"),
    ],
)
def test_delta_paths(deltas, hosts, ok, tried):
    g = gw("h1", "h2", "h3", "h4", "h5", refuse={"h2": "policy", **hosts})
    master = M(P("a", "h1"), P("b", "h2"), P("c", "h1"), deltas=deltas)
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok is ok
    assert r.attempts[0].deltas_tried == tried
    assert g.live() == (held_ids(r) if ok else set())
    if not ok:
        assert r.reservations_released == r.reservations_made  # everything given back


def test_delta_that_itself_conflicts_then_next_delta_restores_counts_thrash():
    # delta 1 moves b (failed) AND c (held on h3); its b->h4 is refused, so c lost
    # h3 for nothing. delta 2 fixes b alone: c goes back to h3 = one thrash.
    g = gw("h1", "h2", "h3", "h4", "h5", "h6", refuse={"h2": "policy", "h4": "policy"})
    master = M(P("a", "h1"), P("b", "h2"), P("c", "h3"), deltas=((P("b", "h4"), P("c", "h5")), (P("b", "h6"),)))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok and {p.key: p.host for p in r.placements} == {"a": "h1", "b": "h6", "c": "h3"}
    assert r.thrash == 1
    # c's h5 reservation from the abandoned delta is released as well
    assert sorted(g.cancelled()) == ["h3:r1/c/host/0", "h5:r1/c/host/1"]
    assert g.live() == held_ids(r)


def test_two_one_key_deltas_compose_to_repair_two_failures():
    g = gw("h1", "h2", "h3", "h4", refuse={"h1": "policy", "h2": "policy"})
    master = M(P("a", "h1"), P("b", "h2"), deltas=((P("a", "h3"),), (P("b", "h4"),)))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok and {p.key: p.host for p in r.placements} == {"a": "h3", "b": "h4"}
    assert r.thrash == 0 and g.cancelled() == []
    # independent repairs go in one parallel round; the refusing hosts are not asked again
    assert reserve_calls(g)[1:] == [["r1/a/host/1", "r1/b/host/1"]]


def test_independent_repairs_share_a_round_and_each_key_keeps_its_delta_order():
    g = gw("h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", refuse={"h1": "policy", "h2": "policy", "h4": "policy"})
    deltas = (
        (P("a", "h4"),),  # a's first alternative (refused)
        (P("b", "h5"),),  # b's repair: same round as a's first
        (P("a", "h6"),),  # a's second alternative: next round
        (P("a", "h8"), P("c", "h7")),  # would release c: never reached
    )
    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("a", "h1"), P("b", "h2"), P("c", "h3"), deltas=deltas)))
    assert r.ok and {p.key: p.host for p in r.placements} == {"a": "h6", "b": "h5", "c": "h3"}
    assert reserve_calls(g) == [["r1/a/host/0", "r1/b/host/0", "r1/c/host/0"], ["r1/a/host/1", "r1/b/host/1"], ["r1/a/host/2"]]
    assert r.attempts[0].deltas_tried == 3 and r.thrash == 0 and g.cancelled() == []


def test_dead_host_is_a_refusal_and_a_delta_repairs_it():
    g = gw("h1", "h2", "h3", dead={"h2": True})
    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("a", "h1"), P("b", "h2"), deltas=((P("b", "h3"),),))))
    assert r.ok and r.attempts[0].failures[0].code == "resource.dead"


def test_delta_naming_unknown_key_is_a_plan_failure():
    g = gw("h1", "h2", refuse={"h1": "policy"})
    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("a", "h1"), deltas=((P("a", "h2"), P("zz", "h2")),))))
    assert not r.ok
    assert [f.code for f in r.attempts[0].failures] == ["policy", "delta.unknown_key"]


# --- masters ------------------------------------------------------------------


def test_next_master_after_all_deltas_fail_and_nothing_leaks():
    g = gw("h1", "h2", "h3", "h4", refuse={"h2": "policy", "h3": "capacity"})
    m0 = M(P("a", "h1"), P("b", "h2"), deltas=((P("b", "h3"),),))
    m1 = M(P("a", "h1"), P("b", "h4"))
    r = Enactor(g, clock=g.clock).enact_schedule(req(m0, m1))
    assert r.ok and r.master == 1
    assert [a.succeeded for a in r.attempts] == [False, True]
    assert "h1:r1/a/host/0" in g.cancelled()  # master 0's reservation was released ...
    assert r.host_tokens["a"].token_id == "h1:r1/a/host/1"  # ... and master 1 asked anew
    assert r.thrash == 1  # same resource, same mapping, after a release: counted
    assert g.live() == held_ids(r)


def test_all_masters_fail_and_every_failure_is_reported():
    g = gw("h1", "h2", "h3", "v1", refuse={"h1": "policy.user", "v1": "vault.full"}, dead={"h3": True})
    m0 = M(P("a", "h1", "v1"), P("b", "h2"))
    m1 = M(P("a", "h2"), P("b", "h3"), deltas=((P("b", "h1"),),))
    r = Enactor(g, clock=g.clock).enact_schedule(req(m0, m1))
    assert not r.ok and r.master is None and r.host_tokens == {} and r.instances == ()
    got = [[(f.key, f.resource, f.code) for f in a.failures] for a in r.attempts]
    assert got == [
        [("a", "h1", "policy.user"), ("a", "v1", "vault.full")],
        [("b", "h3", "resource.dead"), ("b", "h1", "policy.user")],
    ]
    assert all(f.reason for a in r.attempts for f in a.failures)
    assert g.live() == set()


def test_empty_request_fails_cleanly():
    r = Enactor(gw("h1")).enact_schedule(req())
    assert not r.ok and r.attempts == ()


# --- time ---------------------------------------------------------------------


def test_token_expiring_mid_enactment_is_renewed_not_counted_as_thrash():
    clock = FakeClock()
    g = gw("h1", "h2", "h3", clock=clock, refuse={"h2": "policy"})
    # a's token (timeout 10s) expires while the delta round runs
    rounds = []

    def slow(requests):
        rounds.append(len(requests))
        if len(rounds) == 2:
            clock.advance(11)

    g.before_reserve = slow
    master = M(P("a", "h1"), P("b", "h2"), deltas=((P("b", "h3"),),))
    r = Enactor(g, clock=clock).enact_schedule(req(master, timeout_s=10))
    assert r.ok
    assert r.host_tokens["a"].token_id == "h1:r1/a/host/1"  # renewed with a fresh request id
    assert r.thrash == 0
    assert g.live() == held_ids(r)


def test_token_that_expires_before_start_is_renewed():
    clock = FakeClock()
    g = gw("h1", clock=clock)

    def approve(proposal):
        clock.advance(60)  # the scheduler took its time
        return True

    r = Enactor(g, clock=clock, approve=approve).enact_schedule(req(M(P("a", "h1"))))
    assert r.ok and r.instances[0].token_id == "h1:r1/a/host/1"
    assert g.live() == held_ids(r)


def test_token_that_keeps_expiring_fails_with_token_expired():
    clock = FakeClock()
    g = gw("h1", clock=clock)
    grant = g.reserve

    def stale(requests, groups=None):  # every grant is stale by the time it arrives
        out = grant(requests, groups)
        clock.advance(100)
        return out

    g.reserve = stale
    r = Enactor(g, clock=clock, max_renewals=1).enact_schedule(req(M(P("a", "h1")), timeout_s=10))
    assert not r.ok and r.attempts[0].failures[-1].code == "token.expired"
    assert g.live() == set()


# --- approval and start -----------------------------------------------------------


def test_approval_declined_releases_and_reports():
    g = gw("h1", "h2")
    seen = []

    def decline(p):
        seen.append(p)
        return Refusal(code="scheduler.superseded", reason="a newer plan exists", by="sched-1")

    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("a", "h1"), P("b", "h2"))), approve=decline)
    assert not r.ok and g.live() == set() and not any(m == "create" for m, _ in g.calls)
    assert seen[0].master == 0 and [p.key for p in seen[0].placements] == ["a", "b"]
    f = r.attempts[0].failures[-1]
    assert (f.code, f.resource, f.stage) == ("scheduler.superseded", "sched-1", "plan")


def test_approval_false_is_declined():
    g = gw("h1")
    r = Enactor(g, clock=g.clock, approve=lambda p: False).enact_schedule(req(M(P("a", "h1"))))
    assert not r.ok and r.attempts[0].failures[-1].code == "approval.declined" and g.live() == set()


def test_start_veto_repaired_by_a_delta():
    g = gw("h1", "h2", "h3", veto_start={"h2": "policy.start"})
    proposals = []

    def approve(p):
        proposals.append(p.stage)
        return True

    master = M(P("a", "h1"), P("b", "h2"), deltas=((P("b", "h3"),),))
    r = Enactor(g, clock=g.clock, approve=approve).enact_schedule(req(master))
    assert r.ok and {i.host for i in r.instances} == {"h1", "h3"}
    assert proposals == ["reserve", "start"]
    assert g.cancelled() == ["h2:r1/b/host/0"]  # only the vetoing host's token
    f = r.attempts[0].failures[0]
    assert (f.key, f.resource, f.code, f.stage) == ("b", "h2", "policy.start", "start")
    assert g.live() == held_ids(r)


def test_start_veto_without_delta_stops_started_instances_and_releases():
    g = gw("h1", "h2", veto_start={"h2": "policy.start"})
    r = Enactor(g, clock=g.clock).enact_schedule(req(M(P("a", "h1"), P("b", "h2"))))
    assert not r.ok and r.instances == ()
    assert ("stop", ["Foo/a"]) in g.calls
    assert g.live() == set()
    assert r.attempts[0].failures[-1].stage == "start"


def test_start_delta_never_moves_a_started_instance():
    g = gw("h1", "h2", "h3", veto_start={"h2": "policy.start"})
    master = M(P("a", "h1"), P("b", "h2"), deltas=((P("a", "h3"), P("b", "h3")),))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert not r.ok and g.live() == set()


# --- errors ---------------------------------------------------------------------


@pytest.mark.parametrize("call", [1, 2, 3, 4], ids=["first-reserve", "conflict-cancel", "delta-reserve", "create"])
def test_port_exception_cancels_everything(call):
    g = gw("h1", "h2", "h3", "h4", refuse={"h2": "policy"})
    g.raise_on = call
    master = M(P("a", "h1"), P("b", "h2"), P("c", "h3"), deltas=((P("b", "h4"), P("c", "h4")),))
    e = Enactor(g, clock=g.clock)
    with pytest.raises(EnactmentError, match="fake port broke"):
        e.enact_schedule(req(master))
    assert g.live() == set()


def test_approver_exception_cancels_everything():
    g = gw("h1")

    def boom(p):
        raise ValueError("scheduler crashed")

    with pytest.raises(EnactmentError, match="scheduler crashed"):
        Enactor(g, clock=g.clock, approve=boom).enact_schedule(req(M(P("a", "h1"))))
    assert g.live() == set()


def test_capacity_is_shared_between_keys_of_one_schedule():
    g = FakePort({"h1": FakeResource("h1", capacity=2), "h2": FakeResource("h2", capacity=8)})
    master = M(P("a", "h1", cpus=2), P("b", "h1", cpus=1), deltas=((P("b", "h2"),),))
    r = Enactor(g, clock=g.clock).enact_schedule(req(master))
    assert r.ok and r.attempts[0].failures[0].code == "capacity"
