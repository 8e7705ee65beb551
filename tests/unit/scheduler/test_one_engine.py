"""One engine, two ways in: for exclusive requests the live planner's master
schedule is the placement engine's choice, the same hosts ``legionrm place``
chooses from a scenario file describing the same hosts and holdings, even
where the pipeline's own rankers would choose otherwise (bigger hosts first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from legionrm.collection.collection import Collection
from legionrm.models import Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.placement import load_scenario, run_scenario
from legionrm.scheduler.planner import Planner
from legionrm.testing import FakeClock, host

ALICE = Identity(user="alice")
# (name, cpus, memory GB, gpus, busy): the GPU host sorts first by name, the big hosts last
HOSTS = [("a-gpu", 48, 256, 4, False)] + [(f"b0{i}", 16, 64, 0, i == 2) for i in range(1, 5)] + [
    (f"c0{i}", 64, 512, 0, i == 1) for i in range(1, 5)]


def collection() -> Collection:
    c = Collection(clock=FakeClock())
    for name, cpus, mem, gpus, busy in HOSTS:
        c.join(host(name, cpus=cpus, memory_gb=float(mem), gpus=gpus, free_cpus=0 if busy else cpus,
                    free_memory_gb=0.0 if busy else float(mem), instances=1 if busy else 0))
    return c


def scenario_file(tmp: Path, select: str, place: str) -> Path:
    """The same cluster as a ``legionrm place`` scenario: a host with GPUs has
    priority -1 (the planner's scarce-hosts rule), busy hosts are held now."""
    lines = ['[scheduler]', 'resources = ["ncpus", "mem", "ngpus", "host", "vnode"]', "now = 0", ""]
    for name, cpus, mem, gpus, _ in HOSTS:
        lines += ["[[node]]", f'name = "{name}"', f"priority = {-1 if gpus else 0}", "[node.resources]",
                  f"ncpus = {cpus}", f'mem = "{mem}gb"', f"ngpus = {gpus}", ""]
    busy = [f'"{n}"' for n, *_, b in HOSTS if b]
    lines += ["[[busy]]", f"nodes = [{', '.join(busy)}]", "start = 0", "end = 3600", ""]
    lines += ["[[job]]", 'id = "j1"', f'select = "{select}"', f'place = "{place}"']
    path = tmp / "one_engine.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "obj, select, place, expected",
    [
        pytest.param(ObjectRequest(class_name="A", count=4, cpus=8, memory_gb=16, exclusive=True),
                     "4:ncpus=8:mem=16gb", "scatter:excl", ["b01", "b03", "b04", "c02"],
                     id="small-hosts-first-in-bucket-order"),
        pytest.param(ObjectRequest(class_name="A", count=2, cpus=32, memory_gb=16, exclusive=True,
                                   placement="vscatter"),
                     "2:ncpus=32:mem=16gb", "vscatter:excl", ["c02", "c03"], id="only-the-big-hosts-fit"),
        pytest.param(ObjectRequest(class_name="A", count=6, cpus=8, memory_gb=16, exclusive=True),
                     "6:ncpus=8:mem=16gb", "scatter:excl", ["b01", "b03", "b04", "c02", "c03", "c04"],
                     id="the-gpu-host-last"),
        pytest.param(ObjectRequest(class_name="A", count=1, cpus=8, memory_gb=16, gpus=1, exclusive=True),
                     "1:ncpus=8:mem=16gb:ngpus=1", "scatter:excl", ["a-gpu"], id="gpu-work-on-the-gpu-host"),
    ],
)
def test_the_live_planner_and_legionrm_place_choose_the_same_hosts(obj, select, place, expected, tmp_path) -> None:
    plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)),
                                    collection().snapshot())
    assert plan.ok
    live = [p.host for p in plan.masters[0].placements]
    _, results = run_scenario(load_scenario(str(scenario_file(tmp_path, select, place))))
    placed = results["j1"]
    assert placed.runs and placed.path == "buckets"
    assert live == [h for chunk in placed.nodes for h in chunk] == expected


def test_the_pipeline_still_chooses_where_buckets_do_not_apply() -> None:
    """Shared (not exclusive) work keeps the pipeline's rankers: most free cpus first."""
    obj = ObjectRequest(class_name="A", count=2, cpus=8, memory_gb=16, placement="scatter")
    plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)),
                                    collection().snapshot())
    assert [p.host for p in plan.masters[0].placements] == ["c02", "c03"]


def test_later_masters_are_alternatives_on_other_hosts() -> None:
    obj = ObjectRequest(class_name="A", count=2, cpus=8, memory_gb=16, exclusive=True)
    plan = Planner(max_masters=3).make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(obj,)),
                                                 collection().snapshot())
    masters = [[p.host for p in m.placements] for m in plan.masters]
    assert masters[:2] == [["b01", "b03"], ["b04", "c02"]]
    assert all(not ({"b02", "c01"} & set(m)) for m in masters)  # busy hosts never


def test_an_exclusive_request_after_a_shared_one_never_takes_its_hosts() -> None:
    """The engine sees the snapshot, not what this schedule placed a moment ago:
    hosts an earlier object request of the same request uses are not offered."""
    shared = ObjectRequest(class_name="A", count=3, cpus=2, memory_gb=1, placement="scatter",
                           constraint='$name == "b01" or $name == "b03" or $name == "b04"')
    excl = ObjectRequest(class_name="B", count=2, cpus=8, memory_gb=16, exclusive=True)
    plan = Planner().make_schedules(SchedulingRequest(request_id="r", identity=ALICE, objects=(shared, excl)),
                                    collection().snapshot())
    hosts = [p.host for p in plan.masters[0].placements]
    assert sorted(hosts[:3]) == ["b01", "b03", "b04"]
    assert hosts[3:] == ["c02", "c03"]  # the engine's next bucket, not b01 / b03 again
