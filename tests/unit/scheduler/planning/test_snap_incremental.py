"""What the planner derives from a snapshot and reuses on the next one (the host table while the
table is the same, :mod:`...snaptables`; the masks of a query and of an access list, the vaults,
:mod:`...snapmasks`; and the Collection's table keeping a column a write leaves unchanged) equals what a build from
nothing makes of the same snapshot, whatever changed between the two: hosts' dynamic and static
attributes (the same values written again, or new ones), hosts joining, leaving, going stale or
varied off, and the query the view serves."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.collection import kindmask
from legionrm.collection.collection import Collection
from legionrm.models import AccessPolicy, ClassSpec, Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning import snapmasks, snaptables
from legionrm.scheduler.planning.snaptables import _build, base_table, vault_table
from legionrm.testing import FakeClock, host, vault

NAMES = [f"h{i}" for i in range(8)]
CONSTRAINTS = ["true", '$arch == "x86_64"', "$cpus >= 8", "$load < 1.5 and $gpus == 0"]
CALLERS = [Identity(user="alice"), Identity(user="bob"), Identity(user="bob", class_name="Shell")]
POLICIES = [AccessPolicy(), AccessPolicy(allow_users=("alice",)), AccessPolicy(deny_classes=("Shell",))]
FLOATS = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, math.nan])

dynamic = st.fixed_dictionaries({}, optional={
    "free_cpus": st.sampled_from([0, 1, 2, 4, 8]), "load": FLOATS, "instances": st.sampled_from([0, 1, 3]),
    "next_event": st.sampled_from([5.0, 50.0]), "free_fpga": st.sampled_from([0, 1]),
    "owner_policies": st.sampled_from([0, 1]), "state": st.sampled_from(["up", "busy"]),
})
static = st.fixed_dictionaries({}, optional={
    "cpus": st.sampled_from([4, 8, 16]), "memory_gb": st.sampled_from([16.0, 64.0]), "gpus": st.sampled_from([0, 2]),
    "arch": st.sampled_from(["x86_64", "aarch64"]), "fpga": st.sampled_from([0, 2]),
    "nodepool": st.sampled_from(["a", "b"]),
})
step = st.one_of(
    st.tuples(st.just("beat"), st.lists(st.tuples(st.sampled_from(NAMES), dynamic), max_size=5)),
    st.tuples(st.just("static"), st.sampled_from(NAMES), static),
    st.tuples(st.just("join"), st.sampled_from(NAMES), static, st.sampled_from(range(len(POLICIES)))),
    st.tuples(st.just("leave"), st.sampled_from(NAMES)),
    st.tuples(st.just("off"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("time"), st.sampled_from([1.0, 6.0, 20.0])),
    st.tuples(st.just("serve"), st.sampled_from([None, '$nodepool == "a"', "$cpus >= 8"])),
    st.tuples(st.just("plan"), st.sampled_from(CONSTRAINTS), st.sampled_from(range(len(CALLERS))),
              st.sampled_from([1, 2, 4])),
)


def forget() -> None:
    """Drop everything kept between snapshots: the next answers are built from nothing."""
    snaptables._last = None
    snapmasks._last = None
    snapmasks._across.clear()
    kindmask._kept.clear()


def same_arrays(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f") and (
            a.dtype.kind != "f" or np.array_equal(np.signbit(a), np.signbit(b)))
    return a == b


def digest(plan: Any) -> str:
    return plan.suite().model_dump_json()


def same_value(a: Any, b: Any) -> bool:
    """Equal, bit for bit for floats (a NaN is itself, -0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes() or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def check(snap: Any, text: str, caller: Identity, count: int, planner: Planner, model: dict[str, dict[str, Any]]
          ) -> None:
    for name, attrs in model.items():  # the table holds what was written last (a write of equal values too)
        got = snap.record(name).attributes
        assert all(same_value(got[k], v) for k, v in attrs.items()), (name, got, attrs)
    table = base_table(snap)
    fresh = _build(snap)
    for field in vars(fresh):
        assert same_arrays(getattr(table, field), getattr(fresh, field)), field
    query = f'$kind == "host" and ({text})'
    assert snapmasks.query_mask(snap, query).tolist() == snap.mask(query).tolist()
    assert snapmasks.accepts_mask(snap, caller).tolist() == snap.accepts(caller).tolist()
    kept, made = snapmasks.vaults_of(snap), vault_table(snap)
    assert (kept.names, kept.serves, kept.free) == (made.names, made.serves, made.free)
    request = SchedulingRequest(request_id="r", identity=caller, objects=(
        ObjectRequest(class_name="A", count=count, cpus=1, constraint=text, placement="scatter"),))
    incremental = digest(planner.make_schedules(request, snap))
    forget()
    assert incremental == digest(planner.make_schedules(request, snap))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=30))
def test_answers_reused_across_snapshots_equal_a_build_from_nothing(steps: list[tuple[Any, ...]]) -> None:
    forget()
    clock = FakeClock(0.0)
    c = Collection(heartbeat_interval_s=5, stale_after=3, clock=clock)
    for i, name in enumerate(NAMES[:5]):
        c.join(host(name, cpus=8, memory_gb=32.0, gpus=0, arch="x86_64", fpga=1, nodepool="ab"[i % 2],
                    free_cpus=8, load=0.0, access=POLICIES[i % len(POLICIES)]))
    c.join(vault("v1", storage_gb=10.0, serves="h1*,h2"))
    planner = Planner({"A": ClassSpec(name="A")})
    served: str | None = None
    model = {name: dict(c.record(name).attributes) for name in c.names()}  # what each resource last wrote
    for s in steps + [("plan", "true", 0, 1)]:
        kind, *args = s
        if kind == "beat":
            updates = [(n, a) for n, a in dict(args[0]).items() if n in c.names()]
            if updates:
                c.update_many(updates)
            for n, a in updates:
                model[n].update(a)
        elif kind == "static" and args[0] in c.names():
            c.update(args[0], args[1])
            model[args[0]].update(args[1])
        elif kind == "join" and args[0] not in c.names():
            c.join(host(args[0], **args[1], access=POLICIES[args[2]]))
            model[args[0]] = dict(args[1])
        elif kind == "leave" and args[0] in c.names():
            c.leave(args[0])
            del model[args[0]]
        elif kind == "off" and args[0] in c.names():
            (c.vary_off if args[1] else c.vary_on)(args[0])
        elif kind == "time":
            clock.advance(args[0])
        elif kind == "serve":
            served = args[0]
        elif kind == "plan":
            snap = c.snapshot()
            check(snap if served is None else snap.served(served), args[0], CALLERS[args[1]], args[2], planner, model)
