"""Water-filling is *optimal*, not just bounded: no child stays below its fair
level while another gets more than its share would allow.

The bounds tests (nothing over a cap, nothing over the amount) pass for a
water-fill that sorts children by cap instead of cap/share; these do not
(checked by planting that bug: hypothesis finds a counterexample at once).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.scheduler.pools.entitlement import split_entitlement, water_fill
from legionrm.scheduler.pools.respool import ResourcePoolTree
from legionrm.scheduler.pools.vec import EPS, vec
from tests.unit.scheduler.pools.test_respool_support import cfg

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-6


def assert_fair(amount: float, shares: np.ndarray, caps: np.ndarray, give: np.ndarray) -> None:
    """The three facts that define weighted water-filling's answer."""
    elig = (shares > 0) & (caps > EPS)
    # 1. bounds: nothing to the ineligible, nobody over its cap, nothing negative
    assert np.all(give[~elig] == 0)
    assert np.all(give >= -TOL) and np.all(give <= caps + TOL)
    # 2. work-conserving: all of the amount is given unless every cap is met
    assert abs(give.sum() - min(amount, caps[elig].sum())) <= TOL * max(1.0, amount)
    # 3. optimal: a child below its cap has the highest level (give/share) of all;
    #    so no child got more than its share allows while another is starved
    level = np.where(elig, give / np.where(shares > 0, shares, 1.0), 0.0)
    below = elig & (give < caps - TOL)
    if below.any():
        top = level[elig].max()
        for i in np.flatnonzero(below):
            assert level[i] >= top - TOL * max(1.0, top), (
                f"child {i} (share {shares[i]}, cap {caps[i]}) got {give[i]} below its cap while "
                f"another child is at level {top} > its level {level[i]}")


children = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 60)), min_size=1, max_size=8,
)


@SETTINGS
@given(children, st.integers(0, 200))
def test_water_fill_is_optimal(kids, amount) -> None:  # type: ignore[no-untyped-def]
    shares = np.array([float(s) for s, _ in kids])
    caps = np.array([float(c) for _, c in kids])
    give = water_fill(float(amount), shares, caps)
    assert_fair(float(amount), shares, caps, give)


def test_water_fill_orders_by_cap_over_share_not_cap() -> None:
    """A fixed case the cap-sorted bug gets wrong: the share-3 child (cap 20,
    cap/share 6.7) fills before the share-1 child (cap 10, cap/share 10),
    though its cap is the larger: level 8 gives (8, 20)."""
    shares, caps = np.array([1.0, 3.0]), np.array([10.0, 20.0])
    give = water_fill(28.0, shares, caps)
    assert give.tolist() == [8.0, 20.0]
    assert_fair(28.0, shares, caps, give)


@SETTINGS
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 60)), min_size=2, max_size=6), st.integers(1, 150))
def test_phase_2_entitlement_is_water_filled(kids, parent) -> None:  # type: ignore[no-untyped-def]
    """Through the tree: with no reservations and roomy limits, phase 2 gives
    each child min(demand, share * level) for one level: optimal, not only bounded."""
    t = ResourcePoolTree()
    for i, (share, demand) in enumerate(kids):
        t.create(f"/c{i}", cfg(res={"cpu": 0}, lim={"cpu": 1000}, share={"cpu": share}), force=True)
        t.add_demand(f"/c{i}", {"cpu": demand})
    t.aggregate()
    t.root.entitlement = vec({"cpu": parent})
    split_entitlement(t.root)
    shares = np.array([float(s) for s, _ in kids])
    demand = np.array([float(d) for _, d in kids])
    got = np.array([t.get(f"/c{i}").entitlement[0] for i in range(len(kids))])
    if demand.sum() >= parent:  # phase 2 uses up everything; phase 3 has nothing left
        assert_fair(float(parent), shares, demand, got)
    else:  # every demand met, and the rest by share (phase 3)
        assert np.all(got >= demand - TOL)
