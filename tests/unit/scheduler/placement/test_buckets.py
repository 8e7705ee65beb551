"""Node buckets: signatures, bitmaps, chunk-to-bucket map, allocation order,
exec_vnode, outcomes with reasons, earliest start, and the upstream pitfalls
fixed (L3, L4, L7) or kept on purpose (L5).  Placement sets (L1) are in
test_psets.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.scheduler.placement import PlaceConfig, Placer, requested_resources
from legionrm.scheduler.placement.buckets import BucketPlacer
from legionrm.scheduler.placement.bucketset import BucketSet, first_true
from legionrm.scheduler.placement.chunkfit import (
    BadValue,
    _few_per_host,
    _numpy_per_host,
    compile_request,
)
from legionrm.scheduler.placement.nodes import NodeSpec, NodeTable
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.pernode import PerNodePlacer
from legionrm.scheduler.placement.select import SelectRequest

RES = ("ncpus", "mem", "color", "switch", "host", "vnode")


def node(name: str, prio: int = 0, queue: str | None = None, **res: Any) -> NodeSpec:
    return NodeSpec(name, prio, queue, res)


def make(nodes: list[NodeSpec], resources: tuple[str, ...] = RES, **cfg: Any) -> Placer:
    table = NodeTable(nodes, resources=resources, node_sort_key=cfg.pop("node_sort_key", None))
    return Placer(table, PlaceConfig(resources=resources, node_sort_key=table_keys(table), **cfg))


def table_keys(table: NodeTable) -> tuple[str, ...]:
    return tuple(f"{k.resource} {'HIGH' if k.high else 'LOW'} {k.qualifier}".replace(" total", "") for k in table.sort_keys)


def req(select: str, place: str = "free:excl") -> SelectRequest:
    return SelectRequest.parse(select, place)


def busy(p: Placer, names: list[str], start: float, end: float) -> None:
    p.state.occupy([p.table.index[n] for n in names], start, end)


# --- the seed example (12-cpu and 24-cpu hosts) ------------------------------


def seed() -> Placer:
    return make([node("small", ncpus=12), node("big", ncpus=24)])


def test_seed_three_chunks_of_twelve_run() -> None:
    r = seed().place(req("3:ncpus=12"), 0, 100)
    assert r.status == "run" and r.path == "buckets"
    assert r.exec_vnode == "(small:ncpus=12)+(big:ncpus=12)+(big:ncpus=12)"
    assert r.nodes == [["small", "big"]]
    assert r.earliest_start == 0


def test_seed_split_request_does_not_run_on_buckets() -> None:
    p = seed()
    r = p.place(req("2:ncpus=12+1:ncpus=6"), 0, 100)
    assert r.status == "not_now" and r.path == "buckets"
    assert r.comment == "Not Running: No available resources on nodes"
    assert r.earliest_start is None  # L5: no future time helps: chunks never share a host


def test_seed_split_request_runs_on_the_per_node_path() -> None:
    r = seed().nodes.place(req("2:ncpus=12+1:ncpus=6"), 0, 100)
    assert r.status == "run" and r.path == "nodes"
    assert r.exec_vnode == "(small:ncpus=12)+(big:ncpus=12)+(big:ncpus=6)"


# --- chunks per host, exec_vnode --------------------------------------------

EXEC = [
    ("free packs within a chunk", [("A1", 24), ("A2", 24)], "3:ncpus=12", "free:excl",
     "(A1:ncpus=12)+(A1:ncpus=12)+(A2:ncpus=12)"),
    ("scatter takes one per host", [("A1", 24), ("A2", 24), ("A3", 24)], "3:ncpus=12", "scatter:excl",
     "(A1:ncpus=12)+(A2:ncpus=12)+(A3:ncpus=12)"),
    ("vscatter like scatter", [("A1", 24), ("A2", 24)], "2:ncpus=1", "vscatter:excl", "(A1:ncpus=1)+(A2:ncpus=1)"),
    ("over-allocation across buckets", [("A", 24), ("B", 24), ("C", 12)], "3:ncpus=12", "excl",
     "(A:ncpus=12)+(A:ncpus=12)+(B:ncpus=12)"),
    ("select order, not node order", [("A", 4), ("B", 8)], "1:ncpus=8+1:ncpus=4", "scatter:excl",
     "(B:ncpus=8)+(A:ncpus=4)"),
]


@pytest.mark.parametrize("why,hosts,select,place,want", EXEC, ids=[e[0] for e in EXEC])
def test_exec_vnode(why: str, hosts: list, select: str, place: str, want: str) -> None:
    p = make([node(n, ncpus=c) for n, c in hosts])
    r = p.place(req(select, place), 0, 10)
    assert r.status == "run" and r.path == "buckets", r
    assert r.exec_vnode == want


def test_exec_vnode_sizes_in_kb_and_default_ncpus() -> None:
    p = make([node("vnA", ncpus=4, mem="8gb"), node("vnB", ncpus=4, mem="8gb")])
    r = p.place(req("2:ncpus=2:mem=1gb", "scatter:excl"), 0, 10)
    assert r.exec_vnode == "(vnA:ncpus=2:mem=1048576kb)+(vnB:ncpus=2:mem=1048576kb)"
    r = p.place(req("1:mem=1gb"), 0, 10)
    assert r.exec_vnode == "(vnA:mem=1048576kb:ncpus=1)"


def test_resources_off_the_resources_line_are_ignored_but_booleans_count() -> None:
    p = make([node("a", ncpus=2, gpu_model="k80", fast=False), node("b", ncpus=2, gpu_model="v100", fast=True)],
             resources=("ncpus", "host", "vnode"))
    r = p.place(req("1:ncpus=1:gpu_model=v100"), 0, 10)
    assert r.nodes == [["a"]]  # gpu_model is not on the line: ignored
    r = p.place(req("1:ncpus=1:fast=True"), 0, 10)
    assert r.nodes == [["b"]]  # booleans are always honoured


# --- signatures and buckets ---------------------------------------------------


def buckets_of(p: Placer) -> BucketSet:
    return p.buckets.buckets


def test_signature_splits_on_resources_booleans_queue_priority() -> None:
    p = make([
        node("a", ncpus=2, color="red"), node("b", ncpus=2, color="red"),
        node("c", ncpus=2, color="blue"), node("d", ncpus=4, color="red"),
        node("e", ncpus=2, color="red", bigmem=True), node("f", ncpus=2, color="red", bigmem=False),
        node("g", ncpus=2, color="red", queue="q"), node("h", prio=5, ncpus=2, color="red"),
    ])
    bs = buckets_of(p)
    groups = {tuple(sorted(p.table.names[i] for i in m)) for m in bs.members}
    # unset boolean == False, so a, b, f share a bucket
    assert groups == {("a", "b", "f"), ("c",), ("d",), ("e",), ("g",), ("h",)}
    assert p.table.names[bs.members[0][0]] == "h"  # highest priority bucket first


def test_l4_signature_is_symmetric_with_explicit_unset() -> None:
    # upstream: a host with color unset that creates the bucket absorbs a later color=red host
    p = make([node("plain", ncpus=2), node("red", ncpus=2, color="red")])
    assert len(buckets_of(p)) == 2
    r = p.place(req("1:ncpus=1:color=red"), 0, 10)
    assert r.status == "run" and r.nodes == [["red"]]


def test_l3_every_host_points_at_its_own_bucket_and_updates_land_there() -> None:
    hosts = [node(f"h{i}", prio=i % 3, ncpus=1 + i % 4, color="rgb"[i % 3]) for i in range(30)]
    p = make(hosts)
    bs = buckets_of(p)
    for h in range(p.table.n):
        assert bs.members[bs.bucket_of[h]][bs.pos[h]] == h
    target = p.table.index["h7"]
    b, pos = bs.bucket_of[target], bs.pos[target]
    before = int(bs.nfree[b])
    tok = p.state.occupy([target], 0, 50)
    assert bs.busy[b][pos] and not bs.free[b][pos] and bs.nfree[b] == before - 1
    assert sum(int(x.sum()) for x in bs.busy) == 1
    p.state.release(tok)
    assert bs.free[b][pos] and bs.nfree[b] == before


def test_bitmaps_follow_work_starting_and_ending() -> None:
    p = make([node(f"n{i}", ncpus=1) for i in range(1, 5)])
    bs = buckets_of(p)
    assert len(bs) == 1 and bs.nfree[0] == 4
    tok_now = p.state.occupy([0], 0, 100)
    tok_later = p.state.occupy([1], 500, 600)
    assert bs.busy[0].tolist() == [True, False, False, False]
    assert bs.busy_later[0].tolist() == [False, True, False, False]
    assert (bs.nfree[0], bs.nlater[0]) == (2, 1)
    p.state.release(tok_later)
    p.state.release(tok_later)  # idempotent
    p.state.release(tok_now)
    assert bs.free[0].all() and bs.nfree[0] == 4
    r = p.place(req("2:ncpus=1"), 0, 10)
    p.occupy(r, 0, 10)
    assert bs.nfree[0] == 2  # occupy keeps the buckets current; nothing is rebuilt


def test_first_true_matches_flatnonzero() -> None:
    rng = np.random.default_rng(1)
    bits = rng.random(50000) < 0.1
    for k in (1, 7, 500, 4000, 10**6):
        assert first_true(bits, k).tolist() == np.flatnonzero(bits)[:k].tolist()


# --- allocation order -----------------------------------------------------------

ORDER = [
    ("busy-later host taken first when the job ends before its event", 500.0, "n2"),
    ("ending exactly at the event is allowed", 1000.0, "n2"),
    ("a job that would overlap the event takes a free host", 2000.0, "n1"),
    ("no walltime is 5 years: never before an event", None, "n1"),
]


@pytest.mark.parametrize("why,walltime,want", ORDER, ids=[o[0] for o in ORDER])
def test_busy_later_first(why: str, walltime: float | None, want: str) -> None:
    p = make([node(f"n{i}", ncpus=1) for i in (1, 2, 3)])
    busy(p, ["n2"], 1000, 2000)
    r = p.place(req("1:ncpus=1"), 0, walltime)
    assert r.nodes == [[want]]


def test_busy_later_first_holds_inside_each_bucket_only() -> None:
    p = make([node("hi", prio=10, ncpus=1), node("lo", ncpus=1)])
    busy(p, ["lo"], 1000, 2000)
    assert p.place(req("1:ncpus=1"), 0, 10).nodes == [["hi"]]


def test_a_host_serves_one_chunk_of_a_request() -> None:
    # L5 kept: buckets never give one host to two chunks; per-node path shares it
    p = make([node("big", ncpus=24)])
    r = p.place(req("1:ncpus=12+1:ncpus=12"), 0, 10)
    assert r.status == "not_now"
    assert p.nodes.place(req("1:ncpus=12+1:ncpus=12"), 0, 10).exec_vnode == "(big:ncpus=12)+(big:ncpus=12)"


def test_busy_hosts_are_skipped_and_placed_work_is_respected() -> None:
    p = make([node(f"n{i}", ncpus=1) for i in (1, 2, 3)])
    busy(p, ["n1"], 0, 100)
    r = p.place(req("2:ncpus=1"), 0, 10)
    assert r.nodes == [["n2", "n3"]]
    p.occupy(r, 0, 10)
    r2 = p.place(req("1:ncpus=1"), 0, 10)
    assert r2.status == "not_now" and r2.earliest_start == 10


# --- outcomes and their texts -----------------------------------------------------

COLOURED = [("b1", "blue"), ("r1", "red"), ("g1", "green")]

OUTCOMES = [
    ("chunk capacity short: first failing bucket named", "2:ncpus=1:color=red", "scatter:excl", "never",
     "Can Never Run: Insufficient amount of resource: color (red != blue) (chunk 1: 2:ncpus=1:color=red)"),
    ("value nowhere in the complex", "1:color=purple", "excl", "never",
     "Can Never Run: Insufficient amount of resource: color (purple != blue,red,green) (chunk 1: 1:color=purple)"),
    ("job-wide sum beyond totals", "4:ncpus=2", "excl", "never",
     "Can Never Run: Insufficient amount of resource: ncpus (R: 8 A: 6 T: 6)"),
    ("more chunks than hosts, scatter", "4:ncpus=1", "scatter:excl", "never",
     "Can Never Run: Not enough total nodes available"),
    ("chunk bigger than any host", "1:ncpus=3", "excl", "never",
     "Can Never Run: Insufficient amount of resource: ncpus (R: 3 A: 2 T: 2) (chunk 1: 1:ncpus=3)"),
    ("runs", "1:ncpus=2:color=green", "excl", "run", "Job run at 0 on (g1:ncpus=2)"),
]


@pytest.mark.parametrize("why,select,place,status,comment", OUTCOMES, ids=[o[0] for o in OUTCOMES])
def test_outcomes(why: str, select: str, place: str, status: str, comment: str) -> None:
    p = make([node(n, ncpus=2, color=c) for n, c in COLOURED])
    r = p.place(req(select, place), 0, 10)
    assert (r.status, r.comment) == (status, comment)
    assert r.earliest_start == (0 if status == "run" else None)


def test_not_now_texts_and_earliest_start() -> None:
    p = make([node(n, ncpus=2, color=c) for n, c in COLOURED])
    busy(p, ["b1"], 0, 100)
    busy(p, ["r1"], 0, 200)
    r = p.place(req("2:ncpus=1", "scatter:excl"), 0, 10)
    assert r.comment == "Not Running: Not enough free nodes available"
    assert r.earliest_start == 100
    r = p.place(req("3:ncpus=1", "scatter:excl"), 0, 10)
    assert r.earliest_start == 200
    r = p.place(req("1:ncpus=2:color=red"), 0, 10)
    assert r.comment == "Not Running: No available resources on nodes" and r.earliest_start == 200


def test_earliest_start_respects_future_events() -> None:
    p = make([node("n1", ncpus=1)])
    busy(p, ["n1"], 50, 300)  # a reservation later on
    r = p.place(req("1:ncpus=1"), 0, 100)
    assert r.status == "not_now" and r.earliest_start == 300
    assert p.place(req("1:ncpus=1"), 0, 50).status == "run"


def test_l7_chunk_without_constraining_consumable_matches() -> None:
    p = make([node("r1", ncpus=2, color="red"), node("r2", ncpus=2, color="red")])
    r = p.place(req("2:ncpus=0:color=red", "scatter:excl"), 0, 10)
    assert r.status == "run" and r.exec_vnode == "(r1:ncpus=0)+(r2:ncpus=0)"
    r = p.place(req("2:ncpus=0:color=red", "free:excl"), 0, 10)
    assert r.status == "run" and r.nodes == [["r1", "r2"]]  # one copy per host, never infinitely many


def test_booleans_string_arrays_and_sizes() -> None:
    p = make([
        node("a", ncpus=2, mem="64gb", switch=["s1", "s2"], bigmem=True),
        node("b", ncpus=2, mem="8gb", switch=["s3"]),
    ])
    assert p.place(req("1:switch=s2"), 0, 1).nodes == [["a"]]
    assert p.place(req("1:bigmem=false"), 0, 1).nodes == [["b"]]
    assert p.place(req("1:mem=16gb"), 0, 1).nodes == [["a"]]
    r = p.place(req("1:mem=65gb"), 0, 1)
    assert r.status == "never" and "mem (R: 65gb A: 64gb T: 64gb)" in r.comment


def test_queue_owned_hosts() -> None:
    p = make([node("q1", ncpus=1, queue="fast"), node("n1", ncpus=1)])
    assert p.place(req("1:ncpus=1"), 0, 1).nodes == [["n1"]]
    assert p.place(req("1:ncpus=1"), 0, 1, queue="fast").nodes == [["q1"]]
    assert p.place(req("1:ncpus=1"), 0, 1, queue="slow").nodes == [["n1"]]  # a queue without hosts
    assert p.place(req("2:ncpus=1"), 0, 1, queue="fast").status == "never"


# --- why not host X ------------------------------------------------------------


def test_why_not_names_the_filter() -> None:
    p = make([node("n1", ncpus=1, color="red"), node("n2", ncpus=1, color="blue"), node("n3", ncpus=1, color="red")])
    busy(p, ["n1"], 0, 100)
    r = p.place(req("1:ncpus=1:color=red"), 0, 10)
    assert r.nodes == [["n3"]]
    assert r.why_not("n3") is None
    w = r.why_not("n1")
    assert (w.code, w.by) == ("busy", "state")
    w = r.why_not("n2")
    assert (w.code, w.by) == ("resource.color", "resources") and "red != blue" in w.reason
    assert r.why_not("nope").code == "unknown"


def test_bucket_and_direct_placers_share_state() -> None:
    table = NodeTable([node("a", ncpus=1), node("b", ncpus=1)], resources=RES)
    state = HostState(table)
    bp = BucketPlacer(table, PlaceConfig(resources=RES), state)
    pn = PerNodePlacer(table, PlaceConfig(resources=RES), state)
    bp.occupy(bp.place(req("1:ncpus=1"), 0, 10), 0, 10)
    assert pn.place(req("1:ncpus=1"), 0, 10).nodes == [["b"]]


def test_refusals_name_the_chunk() -> None:
    p = make([node(n, ncpus=2, color=c) for n, c in COLOURED])
    r = p.place(req("1:ncpus=1+2:ncpus=1:color=red", "scatter:excl"), 0, 10)
    assert r.status == "never" and r.failed_chunk == "2:ncpus=1:color=red"
    r = p.place(req("1:ncpus=1+1:color=purple"), 0, 10)
    assert r.failed_chunk == "1:color=purple"
    assert p.place(req("4:ncpus=2"), 0, 10).failed_chunk is None  # a job-wide refusal


def test_host_calendar_adapter() -> None:
    p = make([node("n1", ncpus=1), node("n2", ncpus=1)])
    p.state.load_calendar({"n1": [(0, 50)], "n2": [(100, 200)], "elsewhere": [(0, 1)]})
    assert p.place(req("1:ncpus=1"), 0, 100).nodes == [["n2"]]  # ends exactly at n2's event
    r = p.place(req("2:ncpus=1"), 0, 100)
    assert r.status == "not_now" and r.earliest_start == 200


def test_node_value_kinds_mix_sensibly() -> None:
    table = NodeTable([node("a", mem="2gb", sw="s1"), node("b", mem=2048, sw=["s1", "s2"])], resources=RES)
    assert table.columns["mem"].value(1) == 2  # a bare number among sizes is bytes -> 2 kb
    assert table.columns["sw"].kind == "strarr" and table.columns["sw"].value(0) == ("s1",)
    with pytest.raises(ValueError, match="resource 'x'"):
        NodeTable([node("a", x=1), node("b", x="one")], resources=RES)


# --- audit: rules checked against upstream, one case per gap -----------------------


EMPTY_LINE = [
    # PBS: an empty resources line means every resource is checked and bucketed
    ("a string mismatch is checked", "1:ncpus=1:color=blue", "excl", "never", ""),
    ("consumables appear in exec_vnode", "1:ncpus=2", "excl", "run", "(r1:ncpus=2)"),
    ("a chunk bigger than any host can never run", "1:ncpus=3", "excl", "never", ""),
    ("host is on the (empty) line: per-node path", "1:ncpus=1:host=R2", "excl", "run", "(r2:ncpus=1)"),
]


@pytest.mark.parametrize("why,select,place,status,ev", EMPTY_LINE, ids=[c[0] for c in EMPTY_LINE])
def test_empty_resources_line_means_every_resource(why: str, select: str, place: str, status: str, ev: str) -> None:
    p = make([node("r1", ncpus=2, color="red"), node("r2", ncpus=2, color="red")], resources=())
    r = p.place(req(select, place), 0, 10)
    assert (r.status, r.exec_vnode) == (status, ev)
    assert r.path == ("nodes" if "host" in select else "buckets")


def _interleaved(requested: tuple[str, ...] | None) -> Placer:
    hosts = [node("x", ncpus=4, mem="8gb"), node("y", ncpus=4, mem="16gb"), node("z", ncpus=4, mem="8gb")]
    table = NodeTable(hosts, resources=("ncpus", "mem"))
    return Placer(table, PlaceConfig(resources=("ncpus", "mem"), requested=requested))


SIGNATURE = [
    # upstream builds signatures from the resources the cycle's jobs request (L13):
    # if no job asks for mem, x, y and z share one bucket and go in node order
    ("no request names mem: one bucket, node order", ("ncpus",), 1, [["x", "y"]]),
    ("a request names mem: mem splits buckets", ("ncpus", "mem"), 2, [["x", "z"]]),
    ("no cycle given: the whole resources line", None, 2, [["x", "z"]]),
]


@pytest.mark.parametrize("why,requested,nbuckets,nodes", SIGNATURE, ids=[c[0] for c in SIGNATURE])
def test_signature_covers_the_cycles_requested_resources(why: str, requested: tuple[str, ...] | None,
                                                         nbuckets: int, nodes: list) -> None:
    p = _interleaved(requested)
    assert len(p.buckets.buckets) == nbuckets
    assert p.place(req("2:ncpus=1", "scatter:excl"), 0, 10).nodes == nodes


def test_requested_resources_include_the_default_chunk() -> None:
    reqs = [req("2:mem=1gb+1:color=red"), req("1:ncpus=2:bigmem=true")]
    assert requested_resources(reqs) == ("mem", "ncpus", "color", "bigmem")


NEVER_NAMES_CHUNK = [
    ("second chunk's value is nowhere", "1:ncpus=1+1:color=purple", "excl",
     "Can Never Run: Insufficient amount of resource: color (purple != blue,red,green) (chunk 2: 1:color=purple)"),
    ("second chunk short of hosts", "1:ncpus=1+2:ncpus=1:color=red", "scatter:excl",
     "Can Never Run: Insufficient amount of resource: color (red != blue) (chunk 2: 2:ncpus=1:color=red)"),
    ("a job-wide refusal names no chunk", "4:ncpus=2", "excl",
     "Can Never Run: Insufficient amount of resource: ncpus (R: 8 A: 6 T: 6)"),
]


@pytest.mark.parametrize("why,select,place,comment", NEVER_NAMES_CHUNK, ids=[c[0] for c in NEVER_NAMES_CHUNK])
def test_never_comment_names_the_chunk(why: str, select: str, place: str, comment: str) -> None:
    p = make([node(n, ncpus=2, color=c) for n, c in COLOURED])
    r = p.place(req(select, place), 0, 10)
    assert (r.status, r.comment) == ("never", comment)


VALUE_KINDS = [
    # a value is read as the hosts' kind of the resource, as PBS reads it by type
    ("boolean written 1", "1:ncpus=1:fast=1", "run", [["f"]]),
    ("boolean written 0", "1:ncpus=1:fast=0", "run", [["s"]]),
    ("boolean written t", "1:ncpus=1:fast=t", "run", [["f"]]),
    ("boolean written False", "1:ncpus=1:fast=False", "run", [["s"]]),
    ("number for a string resource", "1:ncpus=1:rack=12", "run", [["s"]]),
    ("size for a resource of bare byte counts", "1:ncpus=1:mem=2gb", "run", [["f"]]),
    ("size beyond every host", "1:ncpus=1:mem=3gb", "never", []),
]


@pytest.mark.parametrize("why,select,status,nodes", VALUE_KINDS, ids=[c[0] for c in VALUE_KINDS])
def test_values_are_read_as_the_hosts_kind(why: str, select: str, status: str, nodes: list) -> None:
    gb = 1024**3
    hosts = [node("f", ncpus=2, mem=2 * gb, fast=True, rack="11"), node("s", ncpus=2, mem=gb, rack="12")]
    p = make(hosts, resources=("ncpus", "mem", "rack"))
    r = p.place(req(select, "excl"), 0, 10)
    assert (r.status, r.nodes) == (status, nodes)
    if "mem=2gb" in select:
        assert r.exec_vnode == "(f:ncpus=1:mem=2097152kb)"


BAD_VALUES = [
    ("not a number", "1:ncpus=abc", "ncpus"),
    ("negative", "2:ncpus=-1", "ncpus"),
    ("not a boolean", "1:ncpus=1+1:fast=maybe", "fast"),
    ("not a size", "1:mem=lots", "mem"),
]


@pytest.mark.parametrize("why,select,resource", BAD_VALUES, ids=[c[0] for c in BAD_VALUES])
def test_values_of_the_wrong_kind_are_refused(why: str, select: str, resource: str) -> None:
    p = make([node("f", ncpus=2, mem="2gb", fast=True)])
    with pytest.raises(BadValue) as info:
        p.place(req(select, "excl"), 0, 10)
    assert info.value.resource == resource
    assert info.value.chunk == select.count("+")


def test_a_size_no_host_defines_is_shown_as_a_size() -> None:
    r = make([node("n1", ncpus=2)]).place(req("1:ncpus=1:mem=1gb"), 0, 10)
    assert r.status == "never" and "mem (R: 1gb A: 0kb T: 0kb)" in r.comment



@settings(max_examples=200, deadline=None)
@given(cpus=st.lists(st.integers(0, 300) | st.floats(0, 1e6), min_size=1, max_size=70),
       ask=st.sampled_from(["1", "3", "0.5", "7"]), mem=st.sampled_from(["", ":mem=1gb", ":mem=0mb"]))
def test_a_few_hosts_are_counted_as_numpy_counts_them(cpus: list[float], ask: str, mem: str) -> None:
    """chunks_per_host counts a few hosts (a bucket set's representatives) in Python: as numpy does."""
    table = NodeTable([node(f"n{i}", ncpus=c, mem="4gb") for i, c in enumerate(cpus)], resources=RES)
    chunk = compile_request(table, req(f"1:ncpus={ask}{mem}"))[0]
    idx = np.arange(table.n)
    assert _few_per_host(table, chunk, idx, None) == _numpy_per_host(table, chunk, idx, None).tolist()
