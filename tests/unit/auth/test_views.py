"""Issue 15, views: make_schedules / explain, status, instances and cycle
reports answer a user with their own work and the hosts their access allows
(administrators and agents see all); and the property that no sequence of
calls by one user touches another's work, at the Scheduler's door and at the
hosts' (cancel, stop, start with whatever ids the stranger has seen)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.auth.errors import AuthRefusedError
from legionrm.models import (
    CycleReport,
    ElasticChange,
    ElasticJobStatus,
    ElasticUserTotals,
    Identity,
    InstanceRef,
    ObjectRequest,
    Refusal,
    SchedulerStatus,
    SchedulingRequest,
)
from legionrm.scheduler.door import own_report, own_status
from tests.unit.auth.test_hostdoor import Site
from tests.unit.auth.test_wire import World


def _plan(user: str, gpus: int = 0) -> SchedulingRequest:
    return SchedulingRequest(request_id=f"plan-{user}", identity=Identity(user=user),
                             objects=(ObjectRequest(class_name="W", cpus=1, gpus=gpus),), wait=False)


def _running(w: World) -> None:
    assert w.submit(w.alice, "a1").ok
    assert w.submit(w.mallory, "m1").ok


def test_instances_show_a_user_only_their_own() -> None:
    w = World()
    _running(w)
    every = list(w.scheduler.instances.values())  # (the fake port's ids may collide across requests)
    mine = w.door.instances(w.proof(w.mallory, "instances", {}))
    assert mine == [i for i in every if i.user == "mallory"]
    assert w.door.instances(w.proof(w.alice, "instances", {})) == [i for i in every if i.user == "alice"]
    assert w.door.instances(w.proof(w.ops, "instances", {})) == every
    assert w.door.instances(w.proof(w.enactor_agent, "instances", {})) == every


@pytest.mark.parametrize("call", ["instances", "status", "cycle_reports"])
def test_a_view_without_a_proof_is_refused(call: str) -> None:
    w = World()
    with pytest.raises(AuthRefusedError) as err:
        w.door.view_user(None, call, {})
    assert err.value.code == "auth.no_proof"


def test_a_plan_names_no_host_hidden_from_the_user() -> None:
    w = World()
    req = _plan("visitor", gpus=1)
    suite = w.door.make_schedules(req, w.proof(w.visitor, "make_schedules", {"request": req}))
    named = {p.host for m in suite.masters for p in m.placements} | {f.resource for f in (*suite.failures, *suite.refused)}
    assert "gpu1" not in named and "bigmem" not in named
    req = _plan("alice", gpus=1)
    suite = w.door.make_schedules(req, w.proof(w.alice, "make_schedules", {"request": req}))
    assert {p.host for m in suite.masters for p in m.placements} == {"gpu1"}


def test_a_plan_is_made_as_the_verified_caller_whatever_it_claims() -> None:
    w = World()
    req = SchedulingRequest(request_id="p", identity=Identity(user="alice", groups=("genomics",)),
                            objects=(ObjectRequest(class_name="W", cpus=1, memory_gb=256),), wait=False)
    suite = w.door.make_schedules(req, w.proof(w.mallory, "make_schedules", {"request": req}))
    assert not suite.masters  # only bigmem fits, and it admits genomics, which mallory is not in
    assert all(f.resource != "bigmem" for f in suite.refused)


def test_explain_of_a_host_the_user_may_not_use_is_forbidden() -> None:
    w = World()
    req = _plan("visitor")
    with pytest.raises(AuthRefusedError) as err:
        w.door.explain(req, "gpu1", w.proof(w.visitor, "explain", {"request": req, "host": "gpu1"}))
    assert err.value.code == "auth.forbidden"
    assert isinstance(w.door.explain(req, "n1", w.proof(w.visitor, "explain", {"request": req, "host": "n1"})), str)
    assert isinstance(w.door.explain(req, "gpu1", w.proof(w.ops, "explain", {"request": req, "host": "gpu1"})), str)


def _inst(iid: str, user: str, host: str) -> InstanceRef:
    return InstanceRef(instance_id=iid, class_name="W", host=host, token_id=f"{host}~t", user=user, started_at=0.0)


def _job(user: str, hosts: dict[str, int]) -> ElasticJobStatus:
    return ElasticJobStatus(job_id=f"{user}-job", user=user, class_name="W", ducc_class="normal", processes=1,
                            target=1, hosts=hosts)


def test_status_shows_a_user_only_their_own_work() -> None:
    full = SchedulerStatus(instances=3, hosts={"n1": 2, "gpu1": 1}, requests={"running": 3},
                           elastic={"alice-job": _job("alice", {"n1": 1}), "bob-job": _job("bob", {"gpu1": 1})},
                           pools={"/": {"entitlement": 1}})
    insts = [_inst("n1~i1", "alice", "n1"), _inst("n1~i2", "bob", "n1"), _inst("gpu1~i1", "bob", "gpu1")]
    mine = own_status(full, "alice", insts, {"running": 1})
    assert (mine.instances, mine.hosts, mine.requests, set(mine.elastic)) == (1, {"n1": 1}, {"running": 1}, {"alice-job"})
    assert mine.pools == full.pools
    assert own_status(full, None, insts, {}) == full


def test_a_cycle_report_shows_a_user_only_their_own_jobs_and_hosts() -> None:
    ch = lambda user, host: ElasticChange(job_id=f"{user}-job", user=user, share=1, host=host,  # noqa: E731
                                          change="grew", reason="")
    rep = CycleReport(cycle=3, at=0.0, jobs={"alice-job": _job("alice", {"n1": 1}), "bob-job": _job("bob", {"gpu1": 1})},
                      users={u: ElasticUserTotals(user=u, jobs=1, processes=1, target=1, memory_gb=1, cpus=1)
                             for u in ("alice", "bob")},
                      grew=(ch("alice", "n1"), ch("bob", "gpu1")), hosts={"n1": "up", "gpu1": "up", "bigmem": "dead"},
                      needy=("bob-job",))
    mine = own_report(rep, "alice")
    assert set(mine.jobs) == {"alice-job"} and set(mine.users) == {"alice"}
    assert [c.user for c in mine.grew] == ["alice"] and mine.hosts == {"n1": "up"} and mine.needy == ()
    assert own_report(rep, None) == rep


# --- the property, at the Scheduler's door and at the hosts ----------------------------------

HOST_OPS = st.lists(st.tuples(
    st.sampled_from(["cancel-id", "cancel-pair", "cancel-token", "stop-id", "stop-pair", "stop-ref", "start",
                     "start-as-alice", "replay", "instances", "own"]),
    st.integers(0, 3)), max_size=14)


@settings(max_examples=40, deadline=None)
@given(HOST_OPS)
def test_no_sequence_of_host_calls_by_one_user_touches_anothers_work(ops: list[tuple[str, int]]) -> None:
    s = Site()
    w = World()
    _running(w)
    theirs = {i.instance_id for i in w.scheduler.instances.values() if i.user == "alice"}
    mine_tok = s.reserve("r-mallory", user="mallory")
    seen: list[Any] = []  # proofs of mallory's own calls, which she may try again elsewhere
    for op, k in ops:
        tok = [s.kept, mine_tok][k % 2]
        if op == "cancel-id":
            s.cancel(s.mallory, [tok.token_id])
        elif op == "cancel-pair":
            s.cancel(s.mallory, [("n1", tok.token_id)])
        elif op == "cancel-token":
            s.cancel(s.mallory, [tok])
        elif op == "stop-id":
            s.stop(s.mallory, [s.instance.instance_id])
        elif op == "stop-pair":
            s.stop(s.mallory, [("n1", s.instance.instance_id)])
        elif op == "stop-ref":
            s.stop(s.mallory, [s.instance])
        elif op == "start":
            got = s.start(s.mallory, tok, "mallory")
            assert isinstance(got, Refusal) and got.code == "auth.forbidden"
        elif op == "start-as-alice":
            got = s.start(s.mallory, s.kept, "alice")
            assert isinstance(got, Refusal)
        elif op == "replay" and seen:
            args = {"items": [s.kept.token_id]}
            got = s.door.gate(seen[-1], "cancel_reservations", args, [s.kept.token_id], s.door.may_cancel,
                              s.group.cancel_reservations)
            assert isinstance(got[0], Refusal)
        elif op == "instances":
            assert {i.user for i in w.door.instances(w.proof(w.mallory, "instances", {}))} <= {"mallory"}
        elif op == "own":
            args = {"items": [mine_tok.token_id]}
            p = s.proof(s.mallory, "cancel_reservations", args)
            seen.append(p)
            s.door.gate(p, "cancel_reservations", args, [mine_tok.token_id], s.door.may_cancel, s.group.cancel_reservations)
        s.untouched()  # alice's reservation and instance, whatever mallory did
    assert {i.instance_id for i in w.scheduler.instances.values() if i.user == "alice"} == theirs
    # and the door is not simply shut: mallory's cancels of her own reservation went through
    cancelled_own = any(op == "own" or (op.startswith("cancel-") and k % 2) for op, k in ops)
    assert (s.n1.check_reservation(mine_tok.token_id) == mine_tok) != cancelled_own
