"""Placement sets: smallest set first, do_not_span_psets, the fallback to all
hosts (kept as upstream's original rule, L1), place=group over node_group_key,
and each path's own test for falling back."""

from __future__ import annotations

from typing import Any

import pytest

from legionrm.scheduler.placement import Placer
from tests.unit.scheduler.placement.test_buckets import busy, make, node, req


def switched(**cfg: Any) -> Placer:
    hosts = [node(f"a{i}", ncpus=1, switch="s1") for i in (1, 2, 3)] + [node(f"b{i}", ncpus=1, switch="s2") for i in (1, 2)]
    return make(hosts, node_group_key="switch", **cfg)


PSETS = [
    ("smallest set first", "2:ncpus=1", "run", [["b1", "b2"]]),
    ("next set when the smallest can never fit", "3:ncpus=1", "run", [["a1", "a2", "a3"]]),
    ("no set fits: all hosts", "4:ncpus=1", "run", [["a1", "a2", "a3", "b1"]]),
]


@pytest.mark.parametrize("why,select,status,nodes", PSETS, ids=[p[0] for p in PSETS])
def test_placement_sets(why: str, select: str, status: str, nodes: list) -> None:
    r = switched().place(req(select, "scatter:excl"), 0, 10)
    assert (r.status, r.nodes) == (status, nodes)


def test_do_not_span_psets() -> None:
    r = switched(do_not_span_psets=True).place(req("4:ncpus=1", "scatter:excl"), 0, 10)
    assert r.comment == "Can Never Run: can't fit in the largest placement set, and can't span psets"


def test_l1_a_set_that_fits_later_means_wait_not_span() -> None:
    hosts = [node(f"a{i}", ncpus=1, switch="A") for i in (1, 2)] + [node(f"b{i}", ncpus=1, switch="B") for i in (1, 2)]
    p = make(hosts, node_group_key="switch")
    busy(p, ["a1"], 0, 100)
    busy(p, ["b1"], 0, 150)
    r = p.place(req("2:ncpus=1", "scatter:excl"), 0, 10)
    assert r.status == "not_now"  # upstream HEAD would run it across A and B
    assert r.comment == "Not Running: No available resources on nodes"  # set A's own bucket search
    assert r.earliest_start == 100


def test_place_group_overrides_node_group_key_and_partly_used_sets_first() -> None:
    hosts = [node(f"x{i}", ncpus=1, color="red", switch=f"s{i % 2}") for i in range(4)]
    p = make(hosts, node_group_key="color")
    busy(p, ["x0"], 0, 100)  # s0 is now partly used: tried before s1
    r = p.place(req("1:ncpus=1", "excl:group=switch"), 0, 10)
    assert r.nodes == [["x2"]] and r.placement_set == "switch=s0"


def test_hosts_without_the_key_form_their_own_set() -> None:
    p = make([node("k", ncpus=1, switch="s1"), node("u1", ncpus=1), node("u2", ncpus=1)], node_group_key="switch")
    r = p.place(req("2:ncpus=1", "scatter:excl"), 0, 10)
    assert r.placement_set == 'switch=""' and r.nodes == [["u1", "u2"]]


def _three_sets() -> Placer:
    """Sets C (1 host), A and B (2 hosts each) of 3-cpu hosts; a1 busy.  The
    group key is not on the resources line, so all hosts share one bucket."""
    hosts = [node(f"a{i}", ncpus=3, sw="A") for i in (1, 2)] + [node(f"b{i}", ncpus=3, sw="B") for i in (1, 2)]
    hosts.append(node("c1", ncpus=3, sw="C"))
    p = make(hosts, resources=("ncpus",), node_group_key="sw")
    busy(p, ["a1"], 0, 100)
    return p


PSET_SPAN = [
    # 3:ncpus=2 holds one copy per 3-cpu host: every set can *never* hold it by its
    # buckets, though set A is only "too small now" by its summed free cpus.
    # Upstream's bucket path has no per-set prefilter: no set said NOT_RUN, so it spans.
    ("bucket path: a set short now by its sums but never by its buckets spans",
     "3:ncpus=2", "free:excl", "buckets", "run", [["a2", "b1", "b2"]]),
    # The per-node path runs the prefilter on each set (as eval_selspec does):
    # set A fails on free amounts now, fits by totals, so the job waits for A.
    ("per-node path: a set short now by its sums means wait",
     "3:ncpus=2", "free", "nodes", "not_now", []),
]


@pytest.mark.parametrize("why,select,place,path,status,nodes", PSET_SPAN, ids=[c[0] for c in PSET_SPAN])
def test_pset_fallback_follows_each_paths_own_test(why: str, select: str, place: str, path: str, status: str,
                                                   nodes: list) -> None:
    r = _three_sets().place(req(select, place), 0, 10)
    assert (r.path, r.status, r.nodes) == (path, status, nodes)
