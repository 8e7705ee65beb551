"""One engine, two ways in: the live planner over a Collection snapshot
and ``legionrm place`` over a scenario choose the same hosts."""

from __future__ import annotations

from legionrm.collection.collection import Collection
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.planning.engine_feed import EngineFeed
from legionrm.scheduler.placement import NodeSpec, PlaceConfig, SelectRequest
from legionrm.scheduler.placement.scenario import JobSpec, Scenario, run_scenario
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host

ALICE = Identity(user="alice")
NAMES = [f"n{i:02d}" for i in range(1, 13)]
BUSY = {"n02", "n05", "n06"}  # running work holding the whole host (a [[busy]] holding in a scenario)


def collection() -> Collection:
    c = Collection(clock=FakeClock())
    for n in NAMES:
        busy = n in BUSY
        c.join(host(n, cpus=16, memory_gb=64.0, arch="x86_64", free_cpus=0 if busy else 16,
                    free_memory_gb=0.0 if busy else 64.0, instances=1 if busy else 0))
    return c


def scenario(obj: ObjectRequest) -> Scenario:
    """The same hosts, holdings and request as ``legionrm place`` reads them."""
    nodes = [NodeSpec(n, resources={"ncpus": 16, "mem": "64gb", "ngpus": 0}) for n in NAMES]
    busy = [([n], 0.0, 3600.0) for n in sorted(BUSY)]
    job = JobSpec(id="j1", request=SelectRequest.from_object(obj), walltime=obj.walltime_s, queue=None)
    return Scenario(PlaceConfig(resources=("ncpus", "mem", "ngpus", "host", "vnode")), 0.0, nodes, busy, [job])


def test_live_planner_and_legionrm_place_choose_the_same_hosts() -> None:
    obj = ObjectRequest(class_name="A", count=5, cpus=4, memory_gb=8, placement="scatter", exclusive=True)
    snap = collection().snapshot()
    plan = Planner().make_schedules(SchedulingRequest(request_id="r1", identity=ALICE, objects=(obj,)), snap)
    assert plan.ok
    live = [p.host for p in plan.masters[0].placements]

    _, results = run_scenario(scenario(obj))
    place = results["j1"]
    assert place.runs and place.path == "buckets"
    assert live == place.nodes[0] == ["n01", "n03", "n04", "n07", "n08"]

    fed = EngineFeed().place(obj, snap)  # the engine over the snapshot itself
    assert fed.runs and fed.path == "buckets" and fed.hosts == live


def test_not_now_and_never_agree_and_reach_the_planner() -> None:
    snap = collection().snapshot()
    wait = ObjectRequest(class_name="A", count=10, cpus=4, placement="scatter", exclusive=True)
    never = ObjectRequest(class_name="A", count=13, cpus=4, placement="scatter", exclusive=True)
    feed = EngineFeed()
    for obj, status in ((wait, "not_now"), (never, "never")):
        ans = feed.place(obj, snap)
        _, results = run_scenario(scenario(obj))
        assert ans.status == results["j1"].status == status
        assert ans.reason == results["j1"].reason
        plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)), snap)
        assert not plan.ok
        f = plan.failures[0]
        assert f.resource == "what_of" and f.code == "capacity"  # the pipeline's codes stay
        assert "the placement engine (buckets)" in f.reason and ans.comment in f.reason
        assert f.lasting == (status == "never")


def test_the_node_table_is_built_once_per_host_set() -> None:
    c = collection()
    feed = EngineFeed()
    obj = ObjectRequest(class_name="A", count=2, cpus=4, placement="scatter", exclusive=True)
    feed.place(obj, c.snapshot())
    c.update("n01", {"load": 1.0})  # a heartbeat: same hosts, a new snapshot
    feed.place(obj, c.snapshot())
    assert feed.tables_built == 1
    c.join(host("n13", cpus=16, memory_gb=64.0, arch="x86_64"))
    assert feed.place(obj, c.snapshot()).runs
    assert feed.tables_built == 2
