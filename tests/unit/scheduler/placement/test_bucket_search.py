"""The bucket search in numpy against plain references, under hypothesis.

1. The bucket path's search (bitmaps, counts, first free hosts) returns
   exactly what the same rules give walked host by host in Python: status,
   the chunk that failed, and every (host, copies) pair in order.
2. Where the two paths must agree (one scatter:excl chunk: every eligible
   matching host can take one copy), the bucket path answers as the per-node
   path does: same status, same failing chunk; and a request that cannot run
   (the bench's shape) gets the same answer, placements included.
3. The bucket set's per-bucket counts equal :func:`chunks_per_host` on the
   representatives (numpy's count).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.scheduler.placement.base import PlaceConfig
from legionrm.scheduler.placement.buckets import BucketPlacer
from legionrm.scheduler.placement.chunkfit import CompiledChunk, chunks_per_host, compile_request, prefilter
from legionrm.scheduler.placement.nodes import NodeSpec, NodeTable
from legionrm.scheduler.placement.nodestate import BUSY_LATER, FREE, HostState
from legionrm.scheduler.placement.pernode import PerNodePlacer
from legionrm.scheduler.placement.select import SelectRequest

RESOURCES = ("ncpus", "mem", "color", "host", "vnode")

host_st = st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from(["2gb", "4gb", "8gb"]),
                    st.sampled_from(["red", "blue", "green"]),
                    st.sampled_from(["free", "free", "busy", "later_soon", "later_far"]))
chunk_st = st.tuples(st.integers(1, 12), st.sampled_from([0, 1, 2, 3, 4]), st.sampled_from(["", "1gb", "3gb", "5gb"]),
                     st.sampled_from(["", "red", "blue"]))


def _fleet(hosts: list[tuple[int, str, str, str]]) -> tuple[NodeTable, HostState]:
    table = NodeTable([NodeSpec(f"n{i}", resources={"ncpus": c, "mem": m, "color": col})
                       for i, (c, m, col, _) in enumerate(hosts)], resources=RESOURCES)
    state = HostState(table)
    for i, (*_, how) in enumerate(hosts):
        k = table.index[f"n{i}"]
        if how == "busy":
            state.occupy(np.asarray([k]), 0.0, 500.0, exclusive=True)
        elif how == "later_soon":
            state.occupy(np.asarray([k]), 30.0, 500.0, exclusive=True)
        elif how == "later_far":
            state.occupy(np.asarray([k]), 300.0, 500.0, exclusive=True)
    return table, state


def _select(chunks: list[tuple[int, int, str, str]]) -> str:
    out = []
    for count, cpus, mem, color in chunks:
        parts = [str(count)] + ([f"ncpus={cpus}"] if cpus else []) + ([f"mem={mem}"] if mem else [])
        out.append(":".join(parts + ([f"color={color}"] if color else [])))
    return "+".join(out)


def reference_search(bp: BucketPlacer, request: SelectRequest, chunks: tuple[CompiledChunk, ...],
                     wall: float) -> tuple[str, int | None, list[list[tuple[int, int]]]]:
    """The bucket rules walked host by host: buckets in bucket order; per
    bucket, busy-later hosts whose next event is after the work first, then
    free hosts, each in node order; never a host twice in one request; the
    copies per host counted by numpy on the bucket's representative."""
    bs, table = bp.buckets, bp.table
    view = bp.state.live()
    scatter = request.place.arrangement in ("scatter", "vscatter")
    buckets = sorted(set(bs.bucket_of.tolist()))
    per: list[list[tuple[int, int]]] = []
    for ch in chunks:
        caps = chunks_per_host(table, ch, np.asarray([int(bs.rep[b]) for b in buckets], np.int64))
        entries = [(b, 1 if scatter else int(c)) for b, c in zip(buckets, caps.tolist()) if c > 0]
        if not entries or sum(len(bs.members[b]) * c for b, c in entries) < ch.count:
            return "never", ch.index, []
        per.append(entries)
    for ch, entries in zip(chunks, per):
        usable = sum(c * sum(1 for h in bs.members[b].tolist() if view.pool[h] in (FREE, BUSY_LATER))
                     for b, c in entries)
        if usable < ch.count:
            return "not_now", ch.index, []
    taken: set[int] = set()
    out: list[list[tuple[int, int]]] = []
    for ch, entries in zip(chunks, per):
        need = ch.count
        picks: list[tuple[int, int]] = []
        for b, c in entries:
            if need <= 0:
                break
            hosts_needed, got = -(-need // c), 0
            for wanted in (BUSY_LATER, FREE):
                for h in bs.members[b].tolist():
                    if got == hosts_needed:
                        break
                    if h in taken or view.pool[h] != wanted:
                        continue
                    if wanted == BUSY_LATER and view.next_event[h] < view.now + wall:
                        continue
                    taken.add(h)
                    picks.append((h, c))
                    got += 1
            need -= got * c
        if need > 0:
            return "not_now", ch.index, []
        picks.sort()
        left, alloc = ch.count, []
        for h, c in picks:
            if left > 0:
                alloc.append((h, min(c, left)))
                left -= min(c, left)
        out.append(alloc)
    return "run", None, out


@settings(max_examples=300, deadline=None)
@given(hosts=st.lists(host_st, min_size=1, max_size=40), chunks=st.lists(chunk_st, min_size=1, max_size=3),
       arrangement=st.sampled_from(["scatter", "vscatter", "free"]), wall=st.sampled_from([10.0, 100.0, 1000.0]))
def test_the_bucket_search_returns_what_the_rules_give_host_by_host(
        hosts: list, chunks: list, arrangement: str, wall: float) -> None:
    table, state = _fleet(hosts)
    bp = BucketPlacer(table, PlaceConfig(resources=RESOURCES), state)
    request = SelectRequest.parse(_select(chunks), f"{arrangement}:excl")
    compiled = compile_request(table, request)
    got = bp._search(request, compiled, table.universe(None), state.live(), wall)
    alloc = [list(zip(h.tolist(), c.tolist())) for h, c in got.arrays or []]
    assert (got.status, got.chunk, alloc) == reference_search(bp, request, compiled, wall)
    # the answer as Python pairs (made when asked for) is the same answer
    res = bp.place(request, 0.0, wall, earliest=False)
    if res.status == "run" and not prefilter(table, request, compiled, table.universe(None), state.live(), bp.sums):
        assert res.allocation == alloc


@settings(max_examples=300, deadline=None)
@given(hosts=st.lists(host_st, min_size=1, max_size=40), chunk=chunk_st, wall=st.sampled_from([10.0, 100.0, 1000.0]))
def test_one_scatter_chunk_gets_the_per_node_answer(hosts: list, chunk: tuple, wall: float) -> None:
    table, state = _fleet(hosts)
    cfg = PlaceConfig(resources=RESOURCES)
    bp, pn = BucketPlacer(table, cfg, state), PerNodePlacer(table, cfg, state)
    request = SelectRequest.parse(_select([chunk]), "scatter:excl")
    a, b = bp.place(request, 0.0, wall, earliest=False), pn.place(request, 0.0, wall, earliest=False)
    assert (a.status, a.failed_chunk) == (b.status, b.failed_chunk)
    if a.status == "run":  # the same number of distinct hosts, each one copy
        assert sorted(c for _, c in a.allocation[0]) == sorted(c for _, c in b.allocation[0])


@settings(max_examples=100, deadline=None)
@given(n=st.integers(2, 12), blue=st.integers(1, 20), yellow=st.integers(1, 20), mem=st.integers(1, 8192))
def test_a_request_that_cannot_run_gets_the_per_node_answer(n: int, blue: int, yellow: int, mem: int) -> None:
    colors = ["red", "yellow", "blue"]
    table = NodeTable([NodeSpec(f"v{i}", resources={"ncpus": 1, "mem": "8gb", "color": colors[i % 3]})
                       for i in range(3 * n)], resources=RESOURCES)
    state = HostState(table)
    cfg = PlaceConfig(resources=RESOURCES)
    bp, pn = BucketPlacer(table, cfg, state), PerNodePlacer(table, cfg, state)
    blocker = bp.place(SelectRequest.parse(f"{n - 1}:ncpus=1:color=yellow", "scatter:excl"), 0.0, 3600.0)
    bp.occupy(blocker, 0.0, 3600.0)
    request = SelectRequest.parse(f"{blue}:color=blue:mem={mem}mb+{yellow}:color=yellow:mem={8192 - mem + 1}mb",
                                  "scatter:excl")
    a, b = bp.place(request, 0.0, 100.0, earliest=False), pn.place(request, 0.0, 100.0, earliest=False)
    assert (a.status, a.failed_chunk) == (b.status, b.failed_chunk)
    if a.status != "run":
        assert a.allocation == b.allocation == []


@settings(max_examples=200, deadline=None)
@given(hosts=st.lists(host_st, min_size=1, max_size=40), chunk=chunk_st)
def test_bucket_counts_are_numpys_counts(hosts: list, chunk: tuple) -> None:
    table, state = _fleet(hosts)
    bp = BucketPlacer(table, PlaceConfig(resources=RESOURCES), state)
    count, cpus, mem, color = chunk
    request = SelectRequest.parse(_select([(count, max(cpus, 1), mem, color)]), "free:excl")
    ch = compile_request(table, request)[0]
    counts = bp.buckets.chunks_per_bucket(ch)
    assert counts == chunks_per_host(table, ch, bp.buckets.rep).tolist()
    assert all(type(x) is int for x in counts)


step_st = st.tuples(st.sampled_from(["place", "release", "later"]), chunk_st, st.sampled_from([10.0, 100.0, 1000.0]),
                    st.integers(0, 39))


@settings(max_examples=200, deadline=None)
@given(hosts=st.lists(host_st, min_size=1, max_size=40), steps=st.lists(step_st, min_size=1, max_size=12),
       arrangement=st.sampled_from(["scatter", "free"]))
def test_kept_host_lists_follow_work_starting_and_ending(hosts: list, steps: list, arrangement: str) -> None:
    """The free and busy-later host lists a bucket keeps between requests
    (sliced instead of scanning the bitmaps) give, after any sequence of work
    placed, booked ahead and released, exactly what the rules give walked
    host by host; a request placed twice in a row (the second from the kept
    lists) gets the same answer."""
    table, state = _fleet(hosts)
    bp = BucketPlacer(table, PlaceConfig(resources=RESOURCES), state)
    tokens: list[list[int]] = []
    for what, chunk, wall, k in steps:
        request = SelectRequest.parse(_select([chunk]), f"{arrangement}:excl")
        compiled = compile_request(table, request)
        for _ in range(2):
            got = bp._search(request, compiled, table.universe(None), state.live(), wall)
            alloc = [list(zip(h.tolist(), c.tolist())) for h, c in got.arrays or []]
            assert (got.status, got.chunk, alloc) == reference_search(bp, request, compiled, wall)
        if what == "place" and got.status == "run":
            tokens.append(bp.occupy(bp.place(request, 0.0, wall, earliest=False), 0.0, wall))
        elif what == "release" and tokens:
            bp.release(tokens.pop(k % len(tokens)))
        elif what == "later":
            tokens.append(state.occupy(np.asarray([k % table.n]), 50.0 + k, 400.0, exclusive=True))
