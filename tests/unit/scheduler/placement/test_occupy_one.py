"""One host's occupy in plain Python against the numpy path, under hypothesis.

``HostState.occupy`` of one host with one number per resource (a
single-host job's start, what ``PathPlacer.occupy`` passes for a bucket
answer of one host) takes a scalar path, and so do the set sums it moves
(``SetSums._shift_one``).  The same holdings given as one-element arrays
take the numpy path.  After any sequence of occupies and releases, both
states hold the same records, the same live view (jobs, exclusive holds,
assigned amounts, next events, pools), the same sums over the universe and
over a placement set, and the same bucket pools; and a placer's occupy of a
one-host bucket answer leaves what the numpy path leaves.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.scheduler.placement.base import PlaceConfig
from legionrm.scheduler.placement.buckets import BucketPlacer
from legionrm.scheduler.placement.bucketset import BucketSet
from legionrm.scheduler.placement.nodes import NodeSpec, NodeTable
from legionrm.scheduler.placement.nodestate import HostState
from legionrm.scheduler.placement.select import SelectRequest

RESOURCES = ("ncpus", "mem", "color")

# (host, start, end, exclusive, ncpus, mem kb or None for the whole host) or a release of an earlier holding
step_st = st.one_of(
    st.tuples(st.just("occupy"), st.integers(0, 5), st.sampled_from([-10.0, 0.0, 5.0, 40.0]),
              st.sampled_from([-5.0, 0.0, 20.0, 100.0]), st.booleans(),
              st.sampled_from([0.0, 0.5, 1.0, 2.0, -0.0]), st.sampled_from([None, 1024.0, 3e6, 0.0])),
    st.tuples(st.just("release"), st.integers(0, 20)),
)


def _table() -> NodeTable:
    return NodeTable([NodeSpec(f"n{i}", resources={"ncpus": 1 + i % 3, "mem": f"{1 + i % 2}gb",
                                                   "color": "red" if i % 2 else "blue"}) for i in range(6)],
                     resources=RESOURCES)


def _snapshot(state: HostState, buckets: BucketSet, sets: list[np.ndarray]) -> tuple:
    v = state.live()
    return (
        state._h, state._s, state._e, state._x, state._alive, {r: list(a) for r, a in state._a.items()},
        v.njobs.tolist(), v.excl.tolist(), v.next_event.tolist(), v.pool.tolist(),
        {r: a.tolist() for r, a in v.assigned.items()},
        [repr(state.set_sums.free_and_avail(s, v)) for s in sets],
        [f.tolist() for f in buckets.free], [b.tolist() for b in buckets.busy_later], buckets.nfree.tolist(),
        buckets.nlater.tolist(),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(step_st, max_size=25))
def test_one_host_occupy_matches_the_numpy_path(steps: list[tuple]) -> None:
    table = _table()
    sets = [table.universe(None), np.asarray([1, 3, 4])]
    sets[1].flags.writeable = False
    fast, slow = HostState(table), HostState(table)
    fb, sb = BucketSet(table, fast), BucketSet(table, slow)
    for s in (fast, slow):
        for hs in sets:
            s.set_sums.free_and_avail(hs, s.live())  # the sums are kept from here on
    tokens: list[tuple[list[int], list[int]]] = []
    for step in steps:
        if step[0] == "release":
            if tokens:
                a, b = tokens[step[1] % len(tokens)]
                fast.release(a)
                slow.release(b)
            continue
        _, h, start, end, excl, cpus, mem = step
        if mem is None:
            whole = {r: np.asarray([float(table.total(r)[h])]) for r in fast.table.consumables()}
            tokens.append((fast.occupy([h], start, end, exclusive=excl),
                           slow.occupy(np.asarray([h]), start, end, exclusive=excl, amounts=whole)))
        else:
            tokens.append((fast.occupy(np.asarray([h]), start, end, exclusive=excl, amounts={"ncpus": cpus, "mem": mem}),
                           slow.occupy(np.asarray([h]), start, end, exclusive=excl,
                                       amounts={"ncpus": np.asarray([cpus]), "mem": np.asarray([mem])})))
        assert _snapshot(fast, fb, sets) == _snapshot(slow, sb, sets)
    assert _snapshot(fast, fb, sets) == _snapshot(slow, sb, sets)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1:ncpus=1", "1:ncpus=2:mem=1gb", "1:mem=512mb:color=red"]),
                          st.sampled_from([0.0, 10.0])), min_size=1, max_size=8))
def test_a_placers_one_host_occupy_matches_the_numpy_path(asks: list[tuple[str, float]]) -> None:
    table = _table()
    fast, slow = HostState(table), HostState(table)
    cfg = PlaceConfig(resources=RESOURCES)
    bp = BucketPlacer(table, cfg, fast)
    for select, start in asks:
        r = bp.place(SelectRequest.parse(select, "excl"), 0.0, 50.0, earliest=False)
        if r.status != "run":
            continue
        (hosts, copies), = r.chunk_arrays()
        per: dict[str, np.ndarray] = {}
        for res, a in r.compiled[0].amounts:
            per[res] = per[res] + a * copies if res in per else a * copies.astype(float)
        bp.occupy(r, start, 50.0)
        slow.occupy(hosts, start, 50.0, exclusive=True, amounts={k: np.asarray(v) for k, v in per.items()})
    u = [table.universe(None)]
    assert _snapshot(fast, bp.buckets, u) == _snapshot(slow, BucketSet(table, slow), u)
