"""How much for scheduleObjects: the DUCC class of an object request decides
who may use it, where it runs, how big its hosts are and how much of its
user's allotment it takes."""

from __future__ import annotations

import pytest

from legionrm.config import load_cluster
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.fairshare.classes import (
    NodepoolSpec,
    ResourceClassSpec,
    RmSettings,
    UserSpec,
)
from legionrm.scheduler.fairshare.core import DuccCore
from legionrm.scheduler.sharegate import ShareGate
from legionrm.testing import FakeClock


def gate(**rm: object) -> ShareGate:
    core = DuccCore(
        RmSettings(quantum_gb=8.0, **rm),  # type: ignore[arg-type]
        nodepools=[NodepoolSpec("batch"), NodepoolSpec("lab", parent="batch"), NodepoolSpec("big", quantum_gb=16.0)],
        classes=[
            ResourceClassSpec("normal", policy="FAIR_SHARE", nodepool="batch", default=True),
            ResourceClassSpec("fixed", policy="FIXED_SHARE", nodepool="batch", priority=7),
            ResourceClassSpec("reserve", policy="RESERVE", nodepool="big"),
            ResourceClassSpec("staff", policy="FAIR_SHARE", nodepool="batch", users=("ann",), weight=3),
        ],
        users=[UserSpec("bob", max_allotment_gb=16)],
    )
    return ShareGate.from_core(core)


def req(rid: str, *objs: ObjectRequest, user: str = "ann", groups: tuple[str, ...] = ()) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=Identity(user=user, groups=groups), objects=objs)


def obj(ducc_class: str | None = None, count: int = 1, memory_gb: float = 4, **kw: object) -> ObjectRequest:
    return ObjectRequest(class_name="W", count=count, memory_gb=memory_gb, ducc_class=ducc_class, **kw)  # type: ignore[arg-type]


# (id, object request, the constraint after shaping, exclusive after shaping)
SHAPES = [
    ("no class: untouched", obj(None), "true", False),
    ("fair share squats in sub-pools", obj("normal"), '(true) and ($nodepool == "batch" or $nodepool == "lab")', False),
    ("fixed share stays in its pool", obj("fixed"), '(true) and ($nodepool == "batch")', False),
    ("reserve: whole host of the matching order (16 GB quanta)", obj("reserve", memory_gb=20),
     '(true) and ($nodepool == "big") and ($memory_gb >= 32.0 and $memory_gb < 48.0)', True),
    ("the caller's constraint is kept", obj("fixed", constraint="$cpus > 2"),
     '($cpus > 2) and ($nodepool == "batch")', False),
]


@pytest.mark.parametrize("o,constraint,exclusive", [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_shape_narrows_where_the_class_may_run(o: ObjectRequest, constraint: str, exclusive: bool) -> None:
    shaped, failures = gate().shape(req("r", o))
    assert failures == []
    assert shaped.objects[0].constraint == constraint and shaped.objects[0].exclusive is exclusive


# (id, overage GB, memory GB, the size clause): DUCC's largest order is
# ceil((memory + overage) / quantum), never below the job's order (16 GB quanta)
OVERAGE = [
    ("overage past the next quantum: one order bigger", 14, 20, "($memory_gb >= 32.0 and $memory_gb < 64.0)"),
    ("overage within the same quantum: no bigger host", 10, 20, "($memory_gb >= 32.0 and $memory_gb < 48.0)"),
]


@pytest.mark.parametrize("overage,memory,clause", [o[1:] for o in OVERAGE], ids=[o[0] for o in OVERAGE])
def test_reserve_overage_follows_ducc(overage: float, memory: float, clause: str) -> None:
    shaped, _ = gate(reserve_overage_gb=overage).shape(req("r", obj("reserve", memory_gb=memory)))
    assert shaped.objects[0].constraint.endswith(clause)


def test_priority_and_weight_come_from_the_class_unless_given() -> None:
    g = gate()
    shaped, _ = g.shape(req("r", obj("fixed"), obj("staff", priority=1)))
    assert (shaped.objects[0].priority, shaped.objects[0].weight) == (7, g.classes.classes["fixed"].weight)
    assert (shaped.objects[1].priority, shaped.objects[1].weight) == (1, 3.0)


# (id, request, code, failure key): a class refuses before any host is looked at
REFUSED = [
    ("unknown class", req("r", obj("nope")), "ducc.class_unknown", "W#0"),
    ("user not on the class's list", req("r", obj(), obj("staff", count=2), user="bob"), "ducc.user", "W#1..2"),
]


@pytest.mark.parametrize("request_,code,key", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_a_class_refuses_with_a_code_and_the_placements(request_: SchedulingRequest, code: str, key: str) -> None:
    _, failures = gate().shape(request_)
    assert [(f.code, f.key, f.resource, f.stage) for f in failures] == [(code, key, "ducc", "plan")]


# (id, global allotment, user, requests admitted in turn, which are refused)
ALLOTMENT = [
    ("unlimited by default", None, "ann", [obj("fixed", count=50, memory_gb=8)], []),
    ("per-user limit: 16 GB is two 8 GB shares", None, "bob", [obj("fixed", count=2, memory_gb=8), obj("fixed")], [1]),
    ("job order rounds up: 9 GB takes two shares", 16, "ann", [obj("fixed", memory_gb=9), obj("fixed", memory_gb=1)], [1]),
    ("a gang is all or nothing", 24, "ann", [obj("fixed", count=4, memory_gb=8)], [0]),
    ("fair-share work does not count", 8, "ann", [obj("normal", count=9), obj("fixed", memory_gb=8)], []),
    ("quanta of other nodepools add up in GB", 32, "ann", [obj("reserve", memory_gb=20), obj("fixed", memory_gb=1)], [1]),
]


@pytest.mark.parametrize("limit,user,objs,refused", [a[1:] for a in ALLOTMENT], ids=[a[0] for a in ALLOTMENT])
def test_allotment(limit: float | None, user: str, objs: list[ObjectRequest], refused: list[int]) -> None:
    g = gate(global_allotment_gb=limit)
    got = [i for i, o in enumerate(objs) if g.admit(req(f"r{i}", o, user=user)) is not None]
    assert got == refused


def test_allotment_refusal_says_ducc_text_and_release_gives_it_back() -> None:
    g = gate()
    assert g.admit(req("a", obj("fixed", count=2, memory_gb=8), user="bob")) is None
    refusal = g.admit(req("b", obj("fixed"), user="bob"))
    assert refusal is not None and refusal.code == "ducc.allotment" and refusal.by == "ducc"
    assert refusal.reason.startswith("Deferred: allotment of 16GB is exceeded by user bob")
    g.release("a")
    g.release("a")  # idempotent
    assert g.used_gb("bob") == 0 and g.admit(req("b", obj("fixed"), user="bob")) is None


# --- through scheduleObjects (the default cluster: "fixed" on batch, "reserve" on bigmem, carol 32 GB) ---


@pytest.fixture
def system() -> LocalSystem:
    return LocalSystem(load_cluster(), clock=FakeClock())


def test_fixed_share_request_runs_in_its_nodepool_only(system: LocalSystem) -> None:
    r = system.scheduler.scheduleObjects(req("f1", ObjectRequest(class_name="Worker", count=3, cpus=1, ducc_class="fixed")))
    assert r.ok, r.message
    assert {i.host for i in r.instances} <= {"lab1", "batch1", "batch2", "batch3"}


def test_reserve_takes_a_whole_host_of_its_size(system: LocalSystem) -> None:
    # bigmem hosts have 512 GB in 8 GB quanta: only a request of 505-512 GB matches them exactly
    def plan(memory_gb: float):
        return system.scheduler.make_schedules(req("v", ObjectRequest(class_name="Solver", ducc_class="reserve",
                                                                      memory_gb=memory_gb), user="gina", groups=("genomics",)))

    small = plan(64)
    assert not small.ok and small.failures[0].code == "query.no_match"
    big = plan(510)
    assert big.ok, big.failures
    assert big.masters[0].placements[0].host.startswith("bigmem") and big.masters[0].placements[0].resources.exclusive


def test_allotment_is_charged_until_the_instances_end(system: LocalSystem) -> None:
    first = system.scheduler.scheduleObjects(
        req("c1", ObjectRequest(class_name="Worker", count=4, memory_gb=8, ducc_class="fixed"), user="carol"))
    assert first.ok, first.message
    over = system.scheduler.scheduleObjects(
        req("c2", ObjectRequest(class_name="Worker", memory_gb=1, ducc_class="fixed"), user="carol"))
    assert not over.ok and over.failures[0].code == "ducc.allotment"
    for inst in first.instances:
        system.scheduler.instance_ended(inst.instance_id)
    again = system.scheduler.scheduleObjects(
        req("c3", ObjectRequest(class_name="Worker", memory_gb=1, ducc_class="fixed"), user="carol"))
    assert again.ok, again.message


def test_a_refused_plan_gives_the_allotment_back(system: LocalSystem) -> None:
    r = system.scheduler.scheduleObjects(
        req("c4", ObjectRequest(class_name="Worker", count=2, cpus=999, memory_gb=8, ducc_class="fixed"), user="carol"))
    assert not r.ok and system.scheduler.accounts.shares is not None and system.scheduler.accounts.shares.used_gb("carol") == 0
