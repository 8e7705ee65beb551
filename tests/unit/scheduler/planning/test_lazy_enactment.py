"""The Enactor is handed the plan's masters as they are (planning.drafts.LazyMasters): a
master is made when the Enactor reaches it, and the enactment is the one the whole list,
made up front, gives: the same result, the same calls to the resources, in the same
order, whichever masters fail on the way."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.collection.collection import Collection
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.fakes import FakeClock, FakePort, FakeResource
from legionrm.models import EnactRequest, Identity, ObjectRequest, SchedulingRequest
from legionrm.scheduler.enactment import Enactment
from legionrm.scheduler.planner import Planner
from legionrm.scheduler.planning.drafts import LazyMasters
from legionrm.testing import host


@st.composite
def case(draw):
    n = draw(st.integers(2, 9))
    hosts = [f"n{i}" for i in range(n)]
    count = draw(st.integers(1, 4))
    mode = draw(st.sampled_from(["pack", "scatter", "free"]))
    behaviour = [draw(st.sampled_from(["ok", "ok", "refuse", "dead", "veto", "small"])) for _ in hosts]
    return hosts, count, mode, behaviour, draw(st.integers(0, 3)), draw(st.booleans()), draw(st.booleans())


def world(hosts, behaviour):
    clock = FakeClock()
    resources = {h: FakeResource(h, capacity=2.0 if b == "small" else 8.0, refuse="policy" if b == "refuse" else None,
                                 dead=b == "dead", veto_start="policy.start" if b == "veto" else None)
                 for h, b in zip(hosts, behaviour)}
    return FakePort(resources, clock=clock), clock


def plan_of(hosts, count, mode, max_deltas):
    c = Collection(clock=FakeClock())
    for h in hosts:
        c.join(host(h, cpus=8, memory_gb=32.0))
    request = SchedulingRequest(request_id="r", identity=Identity(user="u"), objects=(
        ObjectRequest(class_name="W", count=count, cpus=2, placement=mode),))
    return request, Planner(max_masters=3, max_deltas=max_deltas).make_schedules(request, c.snapshot())


def enact(hosts, behaviour, request, plan, create, approve):
    port, clock = world(hosts, behaviour)
    seen: list[EnactRequest] = []

    class Recording(Enactor):
        def enact_schedule(self, schedules, **kw):
            seen.append(schedules)
            return super().enact_schedule(schedules, **kw)

    enactment = Enactment(lambda ok: Recording(port, clock=clock, approve=ok if approve else lambda p: False))
    result = enactment.enact(request, plan, ahead=None if create else 2_000.0)
    return result, port.calls, seen[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case())
def test_lazy_masters_enact_as_the_whole_list(c) -> None:
    hosts, count, mode, behaviour, max_deltas, create, approve = c
    request, lazy = plan_of(hosts, count, mode, max_deltas)
    if not lazy.ok:
        return
    _, eager = plan_of(hosts, count, mode, max_deltas)
    # every master made up front, from what the planner decided (its drafts), as before
    eager = dataclasses.replace(eager, masters=tuple(d.build() for d in eager.masters._drafts))
    got, calls, sent = enact(hosts, behaviour, request, lazy, create, approve)
    want, want_calls, want_sent = enact(hosts, behaviour, request, eager, create, approve)
    assert got == want
    assert calls == want_calls
    # the Enactor was handed the plan's own masters, and made only those it reached
    masters = lazy.masters
    assert isinstance(masters, LazyMasters) and sent.masters is masters
    reached = {a.master for a in got.attempts}
    assert reached == set(range(max(reached) + 1))
    assert [m is not None for m in masters._made] == [i in reached for i in range(len(masters))]
    for i in reached:
        assert masters[i] == eager.masters[i]
    # written out, the request is the whole list, as the eager one
    assert sent.model_dump(mode="json") == want_sent.model_dump(mode="json")
