"""The per-node path, the path choice, and the two paths against each other."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.placement import PlaceConfig, Placer, choose_path
from legionrm.scheduler.placement.nodes import NodeSpec, NodeTable
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.select import SelectRequest

RES = ("ncpus", "mem", "color", "host", "vnode")


def node(name: str, prio: int = 0, queue: str | None = None, **res: Any) -> NodeSpec:
    return NodeSpec(name, prio, queue, res)


def make(nodes: list[NodeSpec], resources: tuple[str, ...] = RES, **cfg: Any) -> Placer:
    table = NodeTable(nodes, resources=resources, node_sort_key=cfg.get("node_sort_key"))
    return Placer(table, PlaceConfig(resources=resources, **cfg))


def req(select: str, place: str = "free") -> SelectRequest:
    return SelectRequest.parse(select, place)


# --- choosing the path ------------------------------------------------------------

PATHS = [
    ("scatter:excl", "1:ncpus=1", {}, "buckets"),
    ("vscatter:excl", "1:ncpus=1", {}, "buckets"),
    ("free:excl", "1:ncpus=1", {}, "buckets"),
    ("excl", "1:ncpus=1", {}, "buckets"),
    ("exclhost", "1:ncpus=1", {}, "buckets"),
    ("pack:excl", "1:ncpus=1", {}, "nodes"),
    ("scatter", "1:ncpus=1", {}, "nodes"),
    ("free:shared", "1:ncpus=1", {}, "nodes"),
    ("excl", "1:ncpus=1:host=n1", {}, "nodes"),
    ("excl", "1:ncpus=1:vnode=n1", {}, "nodes"),
    ("excl", "1:ncpus=1", {"qrun": True}, "nodes"),
    ("excl", "1:ncpus=1", {"in_reservation": True}, "nodes"),
    ("excl", "1:ncpus=1", {"has_exec_vnode": True}, "nodes"),
]


@pytest.mark.parametrize("place,select,flags,path", PATHS, ids=[f"{p[0]}|{p[1]}|{','.join(p[2])}" for p in PATHS])
def test_choose_path(place: str, select: str, flags: dict, path: str) -> None:
    table = NodeTable([node("n1", ncpus=1)], resources=RES)
    got, why = choose_path(req(select, place), PlaceConfig(resources=RES), table, **flags)
    assert got == path and why


def test_choose_path_config_and_complex_conditions() -> None:
    r = req("1:ncpus=1", "excl")
    table = NodeTable([node("n1", ncpus=1)], resources=RES)
    assert choose_path(r, PlaceConfig(node_sort_key=("ncpus HIGH unused",)), table)[0] == "nodes"
    assert choose_path(r, PlaceConfig(node_sort_key=("ncpus HIGH assigned",)), table)[0] == "nodes"
    assert choose_path(r, PlaceConfig(node_sort_key=("ncpus HIGH",)), table)[0] == "buckets"
    assert choose_path(r, PlaceConfig(provision_policy="avoid_provision"), table)[0] == "nodes"
    multi = NodeTable([node("v1", ncpus=1, host="h"), node("v2", ncpus=1, host="h")], resources=RES)
    assert multi.multi_vnode
    assert choose_path(r, PlaceConfig(), multi) == ("nodes", "the complex has a multi-vnode host")
    # host off the resources line: the select's resource set drops it (upstream L11)
    no_host = NodeTable([node("n1", ncpus=1)], resources=("ncpus",))
    assert choose_path(req("1:host=n1", "excl"), PlaceConfig(resources=("ncpus",)), no_host)[0] == "buckets"


def test_the_result_says_which_path_ran() -> None:
    p = make([node("n1", ncpus=4), node("n2", ncpus=4)])
    assert p.place(req("1:ncpus=1", "excl"), 0, 1).path == "buckets"
    r = p.place(req("1:ncpus=1", "scatter"), 0, 1)
    assert r.path == "nodes" and r.path_reason == "the request is not excl (hosts can be shared)"


# --- the per-node path ----------------------------------------------------------


def test_shared_hosts_are_partially_allocated() -> None:
    p = make([node("n1", ncpus=8)])
    for _ in range(2):
        r = p.place(req("1:ncpus=4"), 0, 100)
        assert r.status == "run" and r.path == "nodes" and r.nodes == [["n1"]]
        p.occupy(r, 0, 100)
    r = p.place(req("1:ncpus=4"), 0, 100)
    assert r.status == "not_now" and r.earliest_start == 100
    assert r.comment == "Not Running: Not enough free nodes available"  # n1 is job-busy now
    r = p.place(req("1:ncpus=1", "excl"), 0, 100)
    assert r.status == "not_now"


def test_per_node_not_now_names_the_first_refusing_host() -> None:
    p = make([node("n1", ncpus=8), node("n2", ncpus=4)])
    p.occupy(p.place(req("1:ncpus=4"), 0, 100), 0, 100)
    r = p.place(req("1:ncpus=6"), 0, 10)
    assert r.comment == "Not Running: Insufficient amount of resource: ncpus (R: 6 A: 4 T: 8)"
    r = p.place(req("1:ncpus=9"), 0, 10)
    assert r.comment == "Not Running: Insufficient amount of resource: ncpus (R: 9 A: 8 T: 12)"


def test_exclusive_hold_refuses_shared_requests() -> None:
    p = make([node("n1", ncpus=8), node("n2", ncpus=8)])
    p.occupy(p.place(req("1:ncpus=1", "excl"), 0, 50), 0, 50)
    r = p.place(req("2:ncpus=1", "scatter"), 0, 10)
    assert r.status == "not_now"
    assert r.comment == "Not Running: Not enough free nodes available"
    r = p.place(req("1:ncpus=1", "scatter"), 0, 10)
    assert r.nodes == [["n2"]]
    assert r.why_not("n1").reason == "Node is in an ineligible state: job-exclusive"


PACKS = [
    ("all chunks on the first host that holds them", [("h1", 2), ("h2", 4)], "2:ncpus=2", "run",
     "(h2:ncpus=2)+(h2:ncpus=2)"),
    ("two chunk kinds on one host", [("h1", 8)], "1:ncpus=4+2:ncpus=2", "run",
     "(h1:ncpus=4)+(h1:ncpus=2)+(h1:ncpus=2)"),
    ("no host holds them all", [("h1", 2), ("h2", 2)], "2:ncpus=2", "never", ""),
]


@pytest.mark.parametrize("why,hosts,select,status,ev", PACKS, ids=[p[0] for p in PACKS])
def test_pack(why: str, hosts: list, select: str, status: str, ev: str) -> None:
    p = make([node(n, ncpus=c) for n, c in hosts])
    r = p.place(req(select, "pack"), 0, 1)
    assert r.path == "nodes" and (r.status, r.exec_vnode) == (status, ev)


def test_requests_naming_a_host() -> None:
    p = make([node("n1", ncpus=2), node("n2", ncpus=2)])
    r = p.place(req("1:ncpus=1:host=N2", "excl"), 0, 1)
    assert r.path == "nodes" and r.nodes == [["n2"]]  # host names compare case-insensitively
    assert p.place(req("1:host=n9"), 0, 1).status == "never"


def test_free_placement_fills_hosts_in_node_order() -> None:
    p = make([node("a", ncpus=4), node("b", ncpus=4)])
    r = p.place(req("3:ncpus=2"), 0, 1)
    assert r.exec_vnode == "(a:ncpus=2)+(a:ncpus=2)+(b:ncpus=2)"


def test_per_node_never_and_calendar() -> None:
    p = make([node("a", ncpus=8), node("b", ncpus=8)])
    r = p.place(req("1:ncpus=16"), 0, 1)
    assert r.comment == "Can Never Run: Insufficient amount of resource: ncpus (R: 16 A: 8 T: 8) (chunk 1: 1:ncpus=16)"
    p.state.occupy([0, 1], 50, 80)
    r = p.place(req("1:ncpus=1"), 0, 100)
    assert r.comment == "Not Running: Job would conflict with reservation or top job"
    assert r.earliest_start == 80


def test_per_node_path_honours_priority_order_and_psets() -> None:
    p = make([node("lo", ncpus=2, color="x"), node("hi", prio=9, ncpus=2, color="y")], node_group_key="color")
    assert p.table.names == ["hi", "lo"]
    r = p.place(req("1:ncpus=1", "shared"), 0, 1)
    assert r.nodes == [["hi"]] and r.placement_set == "color=y"


# --- both paths, side by side ---------------------------------------------------

COLORS = ("a", "b", "c")


@st.composite
def scenarios(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(1, 10))
    hosts = [
        (draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from(COLORS)), draw(st.integers(0, 2)),
         draw(st.sampled_from(["free", "free", "busy", "later"])))
        for _ in range(n)
    ]
    arrangement = draw(st.sampled_from(["scatter", "vscatter", "free"]))
    colors = draw(st.lists(st.sampled_from(COLORS + ("",)), min_size=1, max_size=2, unique=True))
    if "" in colors:
        colors = [""]  # a chunk without colour overlaps the others: keep one chunk then
    chunks = []
    for c in colors:
        part = f"{draw(st.integers(1, 5))}:ncpus={draw(st.sampled_from([1, 2, 3, 4]))}"
        chunks.append(part + (f":color={c}" if c else ""))
    walltime = draw(st.sampled_from([10.0, 100.0, 1000.0]))
    return hosts, "+".join(chunks), f"{arrangement}:excl", walltime


def build(hosts: list) -> Placer:
    nodes = [NodeSpec(f"h{i}", prio, None, {"ncpus": cpus, "color": col}) for i, (cpus, col, prio, _) in enumerate(hosts)]
    p = make(nodes)
    for i, (_, _, _, st_) in enumerate(hosts):
        if st_ == "busy":
            p.state.occupy([p.table.index[f"h{i}"]], 0, 300)
        elif st_ == "later":
            p.state.occupy([p.table.index[f"h{i}"]], 500, 900)
    return p


def assert_feasible(p: Placer, request: SelectRequest, r: Any, walltime: float) -> None:
    view = p.state.live()
    chunks = p.buckets.compile(request)
    seen: set[int] = set()
    for ch, alloc in zip(chunks, r.allocation):
        assert sum(c for _, c in alloc) == ch.count
        for h, copies in alloc:
            assert h not in seen, "a host serves two chunks on the bucket path"
            seen.add(h)
            assert view.njobs[h] == 0 and view.next_event[h] >= view.now + walltime
            if request.place.arrangement != "free":
                assert copies == 1
            for c in ch.checks:
                col = p.table.columns.get(c.res)
                if c.consumable:
                    assert copies * c.value <= p.table.total(c.res)[h]
                elif col is not None:
                    assert col.value(h) == c.value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_bucket_path_is_feasible_and_agrees_with_per_node(case: tuple) -> None:
    hosts, select, place, walltime = case
    p = build(hosts)
    request = req(select, place)
    rb = p.buckets.place(request, 0, walltime, earliest=False)
    rn = p.nodes.place(request, 0, walltime, earliest=False)
    if rb.status == "run":
        assert_feasible(p, request, rb, walltime)
    assert rb.status == rn.status, (rb.comment, rn.comment)


def test_hypothesis_strategy_covers_all_outcomes() -> None:
    # the generator must reach every outcome, or agreement would be vacuous
    seen = set()
    rng = np.random.default_rng(3)
    for _ in range(300):
        hosts = [(int(rng.choice([1, 2, 4])), str(rng.choice(COLORS)), 0, str(rng.choice(["free", "busy", "later"])))
                 for _ in range(int(rng.integers(1, 8)))]
        select = f"{int(rng.integers(1, 5))}:ncpus={int(rng.choice([1, 2, 3]))}:color={rng.choice(COLORS)}"
        seen.add(build(hosts).buckets.place(req(select, "free:excl"), 0, 100, earliest=False).status)
    assert seen == {"run", "not_now", "never"}


def test_table_and_state_are_shared_by_both_paths() -> None:
    table = NodeTable([node("a", ncpus=1)], resources=RES)
    state = HostState(table)
    p = Placer(table, PlaceConfig(resources=RES), state)
    assert p.buckets.state is p.nodes.state is state


HOST_ON_LINE = [
    # the select's resource set holds the resources line (everything when it is
    # empty) plus booleans; host/vnode in that set send the job per node
    ("default line has host", None, "1:ncpus=1:host=n1", "nodes"),
    ("empty line means every resource", (), "1:ncpus=1:host=n1", "nodes"),
    ("empty line, vnode", (), "1:ncpus=1:vnode=n1", "nodes"),
    ("line without host drops it", ("ncpus",), "1:ncpus=1:host=n1", "buckets"),
]


@pytest.mark.parametrize("why,line,select,path", HOST_ON_LINE, ids=[c[0] for c in HOST_ON_LINE])
def test_choose_path_host_follows_the_resources_line(why: str, line: tuple[str, ...] | None, select: str,
                                                     path: str) -> None:
    table = NodeTable([node("n1", ncpus=1)], resources=line)
    config = PlaceConfig() if line is None else PlaceConfig(resources=line)
    assert choose_path(req(select, "excl"), config, table)[0] == path
    assert choose_path(req(select, "excl"), config)[0] == path  # the config alone says the same
