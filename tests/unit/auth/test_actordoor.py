"""The door of views and housekeeping (:mod:`legionrm.auth.actordoor`): who
sees everything, what a user sees, who may do the system's housekeeping,
each refusal with its code; and a cycle report's triggers name only the
user's own jobs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from legionrm.auth import Registry, Verifier, sign_call
from legionrm.auth.actordoor import ActorDoor, own, own_or_refusal, require_visible, visible
from legionrm.auth.canonical import payload_digest
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.guard import Guard
from legionrm.models import AccessPolicy, CycleReport, ElasticJobRequest, ElasticJobStatus, InstanceRef, Refusal
from legionrm.scheduler.door import SchedulerDoor, own_report


class World:
    def __init__(self) -> None:
        self.registry = Registry(None)
        self.creds = {
            "alice": self.registry.add_user("alice", groups=["genomics"]),
            "mallory": self.registry.add_user("mallory"),
            "ops": self.registry.add_user("ops", roles=["admin"]),
            "scheduler": self.registry.add_agent("scheduler", "scheduler"),
            "enactor": self.registry.add_agent("enactor", "enactor"),
            "dashboard": self.registry.add_agent("dashboard", "dashboard"),
            "host": self.registry.add_agent("host", "n1"),
        }
        self.door = ActorDoor(Guard(Verifier(self.registry, time.time, by="g")), "g")

    def proof(self, who: str, call: str, args: Any, to: str = "g") -> Any:
        return sign_call(self.creds[who], call, payload_digest(args), time.time(), to=to)


def _code(fn: Any) -> str | None:
    try:
        fn()
    except AuthRefusedError as exc:
        return exc.code
    return None


VIEWERS = [("alice", "alice"), ("mallory", "mallory"), ("ops", None), ("scheduler", None), ("enactor", None),
           ("dashboard", None), ("host", "host:n1")]


@pytest.mark.parametrize(("who", "filtered_for"), VIEWERS, ids=[w for w, _ in VIEWERS])
def test_a_view_is_filtered_for_users_and_other_agents_not_for_admins_or_the_system(who: str,
                                                                                  filtered_for: str | None) -> None:
    w = World()
    got = w.door.viewer(w.proof(who, "list_instances", {"host": None}), "list_instances", {"host": None})
    assert (got.name if got is not None else None) == filtered_for


HOUSEKEEPING = [  # (caller, admin allowed, expected code)
    ("scheduler", False, None), ("enactor", False, None), ("ops", False, "auth.forbidden"), ("ops", True, None),
    ("alice", True, "auth.forbidden"), ("dashboard", True, "auth.forbidden"), ("host", True, "auth.forbidden"),
]


@pytest.mark.parametrize(("who", "admin", "code"), HOUSEKEEPING, ids=[f"{w}-admin={a}" for w, a, _ in HOUSEKEEPING])
def test_housekeeping_is_the_systems(who: str, admin: bool, code: str | None) -> None:
    w = World()
    assert _code(lambda: w.door.require_system(w.proof(who, "expire", {}), "expire", {}, admin=admin)) == code


BAD_PROOFS = [
    ("none", lambda w: None, "auth.no_proof"),
    ("another call", lambda w: w.proof("scheduler", "heartbeat", {}), "auth.wrong_call"),
    ("other arguments", lambda w: w.proof("scheduler", "expire", {"x": 1}), "auth.wrong_call"),
]


@pytest.mark.parametrize(("name", "make", "code"), BAD_PROOFS, ids=[n for n, _, _ in BAD_PROOFS])
def test_a_bad_proof_is_refused_before_any_role(name: str, make: Any, code: str) -> None:
    w = World()
    assert _code(lambda: w.door.require_system(make(w), "expire", {})) == code
    assert _code(lambda: w.door.viewer(make(w), "expire", {})) == code


def test_a_replayed_proof_is_refused() -> None:
    w = World()
    p = w.proof("scheduler", "expire", {})
    w.door.require_system(p, "expire", {})
    assert _code(lambda: w.door.require_system(p, "expire", {})) == "auth.replayed"


def test_an_open_door_sees_everything_and_allows_housekeeping() -> None:
    door = ActorDoor(None, "g")
    assert door.viewer(None, "x", {}) is None and door.require_system(None, "x", {}) is None


def _inst(iid: str, user: str) -> InstanceRef:
    return InstanceRef(instance_id=iid, class_name="W", host="n1", token_id=f"n1~{iid}", user=user, started_at=0.0)


def test_own_and_visible_filter_for_a_user_and_pass_all_for_none() -> None:
    w = World()
    alice = w.door.viewer(w.proof("alice", "v", {}), "v", {})
    items = [_inst("a", "alice"), _inst("m", "mallory")]
    assert [i.instance_id for i in own(alice, items, lambda i: i.user)] == ["a"]
    assert own(None, items, lambda i: i.user) == items
    access = {"open": AccessPolicy(), "genomics": AccessPolicy(allow_groups=("genomics",)),
              "nobody": AccessPolicy(allow_users=("root",))}
    admits = lambda name, ident: access[name].accepts(ident)  # noqa: E731
    assert visible(alice, list(access), admits) == ["open", "genomics"]
    mallory = w.door.viewer(w.proof("mallory", "v", {}), "v", {})
    assert visible(mallory, list(access), admits) == ["open"]
    assert visible(None, list(access), admits) == list(access)
    with pytest.raises(AuthRefusedError) as exc:
        require_visible(mallory, "genomics", lambda ident: admits("genomics", ident), "g")
    assert exc.value.code == "auth.forbidden"
    require_visible(alice, "genomics", lambda ident: admits("genomics", ident), "g")


def test_own_or_refusal_answers_the_holder_and_refuses_others_and_the_unknown_alike() -> None:
    w = World()
    alice = w.door.viewer(w.proof("alice", "v", {}), "v", {})
    assert own_or_refusal(alice, "tok", "alice", "t", "g") == "tok"
    assert own_or_refusal(None, "tok", None, "t", "g") == "tok"
    for holder in ("mallory", None):
        got = own_or_refusal(alice, "tok", holder, "t", "g")
        assert isinstance(got, Refusal) and got.code == "auth.not_owner"


def test_a_cycle_reports_triggers_name_only_the_users_own_jobs() -> None:
    report = CycleReport(cycle=3, at=0.0, triggers=("timer", "arrival a-job", "arrival m-job", "exit m-job i1 (done)",
                                                    "host bigmem1 joined"))
    jobs = {"a-job": ElasticJobStatus(job_id="a-job", user="alice", class_name="W", ducc_class="normal", processes=1,
                                      target=1)}
    mine = own_report(report.model_copy(update={"jobs": jobs}), "alice")
    assert mine.triggers == ("timer", "arrival a-job")
    assert own_report(report, None).triggers == report.triggers


def test_an_elastic_job_runs_with_the_registrys_groups_not_the_ones_it_claims() -> None:
    w = World()
    door = SchedulerDoor(None, Guard(Verifier(w.registry, time.time, by="scheduler")))  # type: ignore[arg-type]
    job = ElasticJobRequest(job_id="j", user="root", class_name="W", memory_gb=1, groups=("genomics",))
    mine = door.elastic_request(job, w.proof("mallory", "submit_elastic", {"request": job}, "scheduler"))
    assert (mine.user, mine.groups) == ("mallory", ())
    hers = door.elastic_request(job, w.proof("alice", "submit_elastic", {"request": job}, "scheduler"))
    assert (hers.user, hers.groups) == ("alice", ("genomics",))
