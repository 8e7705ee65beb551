"""RespoolGate: admission through resource pools for scheduleObjects (no Ray)."""

from __future__ import annotations

import pickle
import sys
import threading
import tomllib

import pytest

from legionrm.config import load_cluster
from legionrm.inprocess import LocalSystem
from legionrm.models import Identity, ObjectRequest, Resources, SchedulingRequest
from legionrm.scheduler.pools.file import build_tree, parse_pools
from legionrm.scheduler.pools.gate import RespoolGate
from legionrm.scheduler.pools.respool import ResourcePoolTree
from legionrm.scheduler.wiring import pool_gate
from legionrm.testing import FakeClock

ALICE = Identity(user="alice")
GB = 1024.0
CAPACITY = {"cpu": 100, "memory": 1000 * GB, "disk": 1000 * GB, "gpu": 4}

# /a and /b share the cluster; /p has one leaf, /p/q.  Memory and disk are
# ample everywhere, so cpu decides.
POOLS = """
[[pool]]
path = "/a"
cpu = {reservation = 40, limit = 60}
memory = {reservation = 100000, limit = 1024000}
disk = {reservation = 0, limit = 1024000}
gpu = {reservation = 2, limit = 4}

[[pool]]
path = "/b"
cpu = {reservation = 20, limit = 100}
memory = {reservation = 100000, limit = 1024000}
disk = {reservation = 0, limit = 1024000}
gpu = {reservation = 2, limit = 4}

[[pool]]
path = "/p"
cpu = {reservation = 30, limit = 40}
memory = {reservation = 0, limit = 1024000}
disk = {reservation = 0, limit = 1024000}

[[pool]]
path = "/p/q"
cpu = {reservation = 30, limit = 40}
memory = {reservation = 0, limit = 1024000}
disk = {reservation = 0, limit = 1024000}
"""


def tree(text: str = POOLS) -> ResourcePoolTree:
    return build_tree(parse_pools(tomllib.loads(text), file="pools"), CAPACITY)


def gate(text: str = POOLS, default_pool: str | None = None) -> RespoolGate:
    return RespoolGate(tree(text), CAPACITY, default_pool=default_pool)


def request(rid: str, pool: str, cpus: float, count: int = 1, class_name: str = "Worker", **kw) -> SchedulingRequest:
    return SchedulingRequest(request_id=rid, identity=ALICE, pool=pool,
                             objects=(ObjectRequest(class_name=class_name, count=count, cpus=cpus, **kw),))


# --- admit: one table of request sequences and what each gets -----------------------------------

ADMITS = [
    # id, default pool, [(pool, cpus, count)], [expected (code, by) or None per request]
    ("within-reservation", None, [("/a", 10, 3)], [None]),
    ("up-to-the-limit-when-others-idle", None, [("/a", 40, 1), ("/a", 20, 1)], [None, None]),
    ("over-the-limit-never", None, [("/a", 61, 1)], [("respool.limit", "respool:/a")]),
    ("gang-is-all-or-nothing", None, [("/a", 7, 9)], [("respool.limit", "respool:/a")]),
    ("over-entitlement-now", None, [("/a", 50, 1), ("/a", 15, 1)], [None, ("respool.entitlement", "respool:/a")]),
    ("other-pool-unaffected", None, [("/a", 60, 1), ("/b", 40, 1)], [None, None]),
    ("nested-leaf", None, [("/p/q", 40, 1), ("/p/q", 1, 1)], [None, ("respool.entitlement", "respool:/p/q")]),
    ("unknown-pool", None, [("/zz", 1, 1)], [("respool.unknown", "respool")]),
    ("malformed-path", None, [("a", 1, 1)], [("respool.unknown", "respool")]),
    ("non-leaf-pool", None, [("/p", 1, 1)], [("respool.not_leaf", "respool:/p")]),
    ("root-with-children-and-no-default", None, [("/", 1, 1)], [("respool.not_leaf", "respool:/")]),
    ("root-goes-to-the-default", "/b", [("/", 90, 1), ("/b", 20, 1)], [None, ("respool.entitlement", "respool:/b")]),
    ("gpu-counts-too", None, [("/a", 1, 1, {"gpus": 5})], [("respool.limit", "respool:/a")]),
]  # fmt: skip


@pytest.mark.parametrize("default, asks, expected", [c[1:] for c in ADMITS], ids=[c[0] for c in ADMITS])
def test_admit(default, asks, expected) -> None:
    g = gate(default_pool=default)
    for i, (ask, want) in enumerate(zip(asks, expected)):
        pool, cpus, count, *extra = ask
        got = g.admit(request(f"r{i}", pool, cpus, count, **(extra[0] if extra else {})))
        if want is None:
            assert got is None, got
        else:
            assert got is not None and (got.code, got.by) == want, got
            assert got.reason
    # nothing refused stays queued, and no demand is left behind
    for path, p in g.report().items():
        assert not any(p["queues"].values()), path


def test_refusal_reasons_name_what_to_do() -> None:
    g = gate()
    assert "/p/q" in g.admit(request("r", "/p", 1)).reason
    root = g.admit(request("r", "/", 1)).reason
    assert "/a" in root and "default pool" in root
    assert "cpu 61 > 60" in g.admit(request("r", "/a", 61)).reason
    assert "leaf pools: /a, /b, /p/q" in g.admit(request("r", "/nope", 1)).reason


@pytest.mark.parametrize(
    "capacity, asks, expected",
    [
        (CAPACITY, [100, 1], [None, "respool.entitlement"]),
        (CAPACITY, [101], ["respool.limit"]),
        (Resources(cpus=8, memory_gb=16, gpus=1, storage_gb=10), [8], [None]),
        (Resources(cpus=8, memory_gb=0.5, gpus=1, storage_gb=10), [1], ["respool.limit"]),  # 1 GB asked, 512 MB there
    ],
    ids=["root-leaf-to-capacity", "root-leaf-over-capacity", "capacity-as-resources", "memory-in-mb"],
)
def test_without_pools_the_root_is_the_leaf(capacity, asks, expected) -> None:
    g = RespoolGate(ResourcePoolTree(), capacity)
    got = [g.admit(request(f"r{i}", "/", c)) for i, c in enumerate(asks)]
    assert [r if r is None else r.code for r in got] == expected


def test_activation_only_request_is_admitted_with_nothing_charged() -> None:
    g = gate()
    assert g.admit(SchedulingRequest(request_id="act", identity=ALICE, pool="/a", activate=("obj-1",))) is None
    assert g.held() == {} and g.allocation("/a")["cpu"] == 0


def test_same_request_id_twice_is_refused() -> None:
    g = gate()
    assert g.admit(request("r", "/a", 1)) is None
    again = g.admit(request("r", "/a", 1))
    assert again is not None and (again.code, again.by) == ("respool.duplicate", "respool:/a")


# --- release --------------------------------------------------------------------------------


def test_release_returns_the_allocation_and_a_second_request_then_fits() -> None:
    g = gate()
    assert g.admit(request("first", "/a", 60)) is None
    assert g.allocation("/a") == {"cpu": 60, "memory": 1024, "disk": 0, "gpu": 0}
    assert g.admit(request("second", "/a", 30)).code == "respool.entitlement"
    g.release("first")
    assert g.allocation("/a")["cpu"] == 0 and g.allocation("/")["cpu"] == 0
    assert g.admit(request("second", "/a", 30)) is None  # the refused gang was withdrawn: same id again
    assert g.held() == {"second": "/a"}


@pytest.mark.parametrize(
    "releases",
    [["r"], ["r", "r"], ["nobody"], ["refused"], ["r", "nobody", "r", "refused"]],
    ids=["once", "twice", "unknown-id", "refused-id", "mixed"],
)
def test_release_is_idempotent(releases) -> None:
    g = gate()
    assert g.admit(request("r", "/a", 20)) is None
    assert g.admit(request("keep", "/a", 10)) is None
    assert g.admit(request("refused", "/a", 99)) is not None
    for rid in releases:
        g.release(rid)
    expected = 10 if "r" in releases else 30
    assert g.allocation("/a")["cpu"] == expected
    assert "keep" in g.held()


def test_set_capacity_moves_entitlement_at_once() -> None:
    g = RespoolGate(ResourcePoolTree(), CAPACITY)
    assert g.admit(request("big", "/", 50)) is None
    g.set_capacity({**CAPACITY, "cpu": 40})
    assert g.capacity["cpu"] == 40
    assert g.admit(request("more", "/", 1)).code == "respool.entitlement"
    g.release("big")
    assert g.admit(request("more", "/", 40)) is None


def test_a_gate_survives_pickling_with_what_it_holds() -> None:
    g = gate()
    assert g.admit(request("r", "/a", 60)) is None
    copy = pickle.loads(pickle.dumps(g))
    assert copy.held() == {"r": "/a"} and copy.admit(request("s", "/a", 1)).code == "respool.entitlement"
    copy.release("r")
    assert copy.admit(request("s", "/a", 1)) is None


def test_default_pool_must_be_a_leaf() -> None:
    from legionrm.errors import AdmissionError, PoolNotFoundError

    with pytest.raises(AdmissionError, match="not a leaf"):
        gate(default_pool="/p")
    with pytest.raises(PoolNotFoundError):
        gate(default_pool="/nope")


# --- threads ----------------------------------------------------------------------------------


@pytest.fixture
def busy_switching():
    """Threads switch every microsecond, so an unlocked gate would interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_concurrent_admits_never_over_admit(busy_switching) -> None:
    g = gate()
    start = threading.Barrier(16)
    results: list[bool] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        start.wait()
        got = g.admit(request(f"t{k}", "/a", 10))  # /a's limit 60: six fit
        with lock:
            results.append(got is None)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 6 and g.allocation("/a")["cpu"] == 60 and len(g.held()) == 6


def test_concurrent_admit_and_release_keep_the_books_straight(busy_switching) -> None:
    g = gate()
    over: list[float] = []

    def worker(k: int) -> None:
        for n in range(40):
            rid = f"t{k}-{n}"
            if g.admit(request(rid, "/a", 7)) is None:
                used = g.allocation("/a")["cpu"]
                if used > 60 + 1e-9:
                    over.append(used)
                g.release(rid)
                g.release(rid)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert over == []
    assert g.held() == {} and g.allocation("/") == {"cpu": 0, "memory": 0, "disk": 0, "gpu": 0}


# --- from the Scheduler ----------------------------------------------------------------------


@pytest.fixture
def pooled() -> tuple[LocalSystem, RespoolGate]:
    spec = load_cluster()
    g = pool_gate(spec)
    assert isinstance(g, RespoolGate)
    return LocalSystem(spec, clock=FakeClock(), pools=g), g


def test_schedule_objects_refused_by_the_pool_at_plan(pooled) -> None:
    system, g = pooled
    r = system.scheduler.scheduleObjects(request("big", "/teaching", 16, count=9))  # 144 cpus, limit 128
    assert not r.ok and r.masters == 0 and r.instances == ()
    (f,) = r.failures
    assert (f.stage, f.code, f.resource, f.key) == ("plan", "respool.limit", "respool:/teaching", "*")
    assert "respool.limit" in r.message
    assert g.held() == {}


def test_schedule_objects_charges_the_pool_until_its_instances_end(pooled) -> None:
    system, g = pooled
    r = system.scheduler.scheduleObjects(request("ok", "/", 2, count=2))  # "/" -> the default pool
    assert r.ok, r.message
    assert g.held() == {"ok": "/shared"} and g.allocation("/shared")["cpu"] == 4
    for inst in r.instances:
        system.scheduler.instance_ended(inst.instance_id)
    assert g.held() == {} and g.allocation("/shared")["cpu"] == 0


@pytest.mark.parametrize(
    "req, stage, code",
    [
        # only lab1 has 20 cpus, and its owner caps its load at a half: vetoed, no delta to go to
        (request("veto", "/teaching", 12, constraint="$cpus == 20"), "reserve", "policy.load"),
        (request("nohost", "/teaching", 1, constraint='$arch == "mips"'), "plan", "query.no_match"),
        (request("noclass", "/teaching", 1, class_name="Nope"), "plan", "class.unknown"),
    ],
    ids=["failed-enactment", "failed-plan", "unknown-class"],
)
def test_a_failed_schedule_releases_the_pool_allocation(pooled, req, stage, code) -> None:
    system, g = pooled
    r = system.scheduler.scheduleObjects(req)
    assert not r.ok
    assert any((f.stage, f.code) == (stage, code) for f in r.failures), r.failures
    assert g.held() == {} and g.allocation("/teaching") == {"cpu": 0, "memory": 0, "disk": 0, "gpu": 0}
