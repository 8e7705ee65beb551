"""The elastic scheduling cycle on a small in-process cluster: real host objects
(calendars, signed tokens, owner policies) in a host group, the Collection, the
Enactor over the in-process port, and the DUCC core."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from legionrm.collection.collection import Collection
from legionrm.enactor.enactor import Enactor
from legionrm.enactor.ports import InProcessPort
from legionrm.errors import EnactmentError, SchedulingError
from legionrm.hostobj import ClassObject, DenyUsers, HostGroup, HostObject
from legionrm.models import CycleReport, ElasticJobRequest, Refusal, Resources
from legionrm.scheduler.elastic.cycle import ElasticCycle, HostStopper
from legionrm.scheduler.fairshare.classes import ResourceClassSpec, RmSettings
from legionrm.scheduler.fairshare.core import DuccCore
from legionrm.testing import FakeClock

QUANTUM = 4.0  # GB: a 32 GB host holds 8 processes of 4 GB
AT_ONCE = RmSettings(quantum_gb=QUANTUM, expand_by_doubling=False, prediction=False)
DOUBLING = RmSettings(quantum_gb=QUANTUM)


class Owner(HostObject):
    """A host whose owner refuses reservations to the users in ``refuse`` (changeable)."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.refuse: set[str] = set()
        self.asked = 0

    def admit_reservation(self, request):
        self.asked += 1
        if request.holder.user in self.refuse:
            return Refusal(code="policy.owner", reason="the owner says no")
        return super().admit_reservation(request)


@dataclass
class World:
    clock: FakeClock
    collection: Collection
    group: HostGroup
    worker: ClassObject
    core: DuccCore
    cycle: ElasticCycle

    def host(self, name: str) -> Owner:
        return self.group.get(name)

    def beat(self, *skip: str) -> None:
        """Heartbeats from every host but ``skip``."""
        for n in self.group.names():
            if n not in skip:
                self.host(n).heartbeat()

    def run(self, n: int = 1) -> CycleReport:
        r = None
        for _ in range(n):
            self.clock.advance(10)
            self.beat()
            r = self.cycle.run_once()
            check(self)
        return r


def world(hosts: int = 4, memory_gb: float = 32, cpus: float = 64, settings: RmSettings = AT_ONCE,
          policies: dict | None = None, classes=None) -> World:
    clock = FakeClock()
    coll = Collection(clock=clock, heartbeat_interval_s=5, stale_after=3)
    hs = [
        Owner(f"h{i}", Resources(cpus=cpus, memory_gb=memory_gb), clock=clock, policy=(policies or {}).get(f"h{i}"),
              attributes={"host_group": "g0"})  # placements carry the group: the port routes by it
        for i in range(1, hosts + 1)
    ]
    group = HostGroup("g0", hs, sink=coll)
    group.join()
    carrier = lambda n: group if n in group else None  # noqa: E731
    worker = ClassObject("Worker", hosts=carrier)
    enactor = Enactor(InProcessPort.of([group], [worker]), clock=clock)
    core = DuccCore(settings, [], classes or [ResourceClassSpec("normal", policy="FAIR_SHARE")])
    cycle = ElasticCycle(core, enactor, HostStopper(carrier, {"Worker": worker}), coll, clock=clock, interval_s=10)
    return World(clock, coll, group, worker, core, cycle)


def job(jid: str, user: str, memory_gb: float = 4, **kw) -> ElasticJobRequest:
    kw.setdefault("time_per_item_ms", 1000)
    return ElasticJobRequest(job_id=jid, user=user, class_name="Worker", memory_gb=memory_gb, cpus=1, **kw)


def check(w: World) -> None:
    """Invariants after every cycle: no host over capacity (by its own calendar and
    by the instances it runs), the core's machines within their size, and the
    cycle's instances exactly the instances running, each on its share's machine."""
    running = {}
    for name in w.group.names():
        h = w.host(name)
        usage = h.calendar.usage_at(w.clock())
        assert (usage <= h.calendar.capacity + 1e-9).all(), name
        running.update({i.instance_id: i for i in h.list_instances()})
    for m in w.core.machines.values():
        assert m.used() <= m.order, m.name
    tracked = {}
    jobs = w.cycle.last_report.jobs
    for jid, st_ in jobs.items():
        assert st_.processes == len(st_.instances) == sum(st_.hosts.values())
        for inst in st_.instances:
            tracked[inst.instance_id] = jid
            share = w.core.jobs[jid].shares[w.cycle.share_of(inst.instance_id)]
            assert share.machine == inst.host and not share.evicted
    assert tracked.keys() == running.keys()
    assert {i.instance_id for i in w.worker.list_instances()} == running.keys()
    for name in w.group.names():
        mem = sum(jobs[tracked[i.instance_id]].memory_gb for i in w.host(name).list_instances())
        assert mem <= w.host(name).capacity.memory_gb + 1e-9, name


def procs(r: CycleReport) -> dict[str, int]:
    return {u: t.processes for u, t in r.users.items()}


# --- fair shares ----------------------------------------------------------------------------


@pytest.mark.parametrize("rm, cycles", [(AT_ONCE, 2), (DOUBLING, 5)], ids=["at-once", "doubling"])
def test_three_users_reach_their_fair_shares(rm, cycles) -> None:
    w = world(settings=rm)
    for u in ("ann", "bob", "cat"):
        w.cycle.submit(job(f"{u}-1", u))
    history = [procs(w.run()) for _ in range(cycles)]
    final = history[-1]
    assert sum(final.values()) == 32  # 4 hosts x 8 processes: the cluster is full
    assert max(final.values()) - min(final.values()) <= 1
    if rm is DOUBLING:  # growth by doubling: 2, 4, 8, then the fair share
        assert [h["ann"] for h in history[:3]] == [2, 4, 8]
    r = w.run()
    assert procs(r) == final and not r.grew and not r.shrank  # stable once there
    assert r.triggers == ("timer",)


def test_a_user_with_two_jobs_splits_its_share() -> None:
    w = world()
    w.cycle.submit(job("a1", "ann"))
    w.cycle.submit(job("a2", "ann"))
    w.cycle.submit(job("b1", "bob"))
    r = w.run(2)
    assert r.users["ann"].processes == r.users["bob"].processes == 16
    assert abs(r.jobs["a1"].processes - r.jobs["a2"].processes) <= 1
    assert r.users["ann"].memory_gb == 64 and r.users["ann"].jobs == 2


# --- arrival, investment order, completion --------------------------------------------------------


def test_arrival_shrinks_the_others_least_invested_first_and_completion_gives_back() -> None:
    w = world()
    w.cycle.submit(job("a", "ann"))
    w.cycle.submit(job("b", "bob"))
    r = w.run(2)
    assert procs(r) == {"ann": 16, "bob": 16}
    rng = random.Random(7)
    invest = {}
    for jid in ("a", "b"):
        ids = [i.instance_id for i in r.jobs[jid].instances]
        rng.shuffle(ids)
        invest.update({iid: 1000.0 * (k + 1) for k, iid in enumerate(ids)})
    assert w.cycle.report_investment(invest) == 32

    w.cycle.submit(job("c", "cat"))
    assert w.cycle.due()
    r = w.run()
    assert "arrival c" in r.triggers
    evicted = {c.instance_id for c in r.shrank}
    assert len(evicted) == 32 - 22  # ann and bob down to 11 each (32 / 3, remainder to the older)
    for jid in ("a", "b"):
        mine = sorted(invest[i.instance_id] for i in w.cycle.last_report.jobs[jid].instances)
        gone = sorted(invest[c.instance_id] for c in r.shrank if c.job_id == jid)
        assert max(gone) < min(mine)  # the least invested went first
    assert all("above its fair share" in c.reason for c in r.shrank)
    stops = {s.instance_id: s.reason for n in w.group.names() for s in w.host(n).stopped}
    assert evicted <= stops.keys()  # stopped on their hosts
    r = w.run()  # the space left with the evictions: the newcomer grows into it
    assert sorted(procs(r).values()) == [10, 11, 11]

    assert w.cycle.complete("c") and not w.cycle.complete("c")
    r = w.run()
    assert {c.reason for c in r.shrank} == {"job completed"} and len(r.shrank) == 10
    assert "c" not in r.jobs
    r = w.run()
    assert procs(r) == {"ann": 16, "bob": 16}


def test_lowering_max_processes_shrinks_the_job() -> None:
    w = world()
    w.cycle.submit(job("a", "ann"))
    assert w.run().jobs["a"].processes == 32
    w.cycle.update("a", max_processes=5)
    r = w.run()
    assert r.jobs["a"].processes == 5 and len(r.shrank) == 27
    with pytest.raises(SchedulingError, match="cannot update"):
        w.cycle.update("a", memory_gb=8)
    with pytest.raises(SchedulingError, match="no elastic job"):
        w.cycle.update("zz", work_items=3)
    w.cycle.update("a", max_processes=None, work_items=None)
    assert w.run().jobs["a"].processes == 32


def test_a_bigger_job_gets_room_on_a_packed_cluster() -> None:
    w = world()
    w.cycle.submit(job("small", "ann"))
    assert w.run().jobs["small"].processes == 32
    w.cycle.submit(job("big", "bob", memory_gb=8))  # order 2: needs a hole of two quanta
    for _ in range(3):
        r = w.run()
    assert r.jobs["big"].processes == r.jobs["big"].target == 8
    assert r.jobs["small"].processes == 16


@pytest.mark.parametrize("host_gb, big_gb", [(16, 12), (20, 16)], ids=["o3-on-o4-hosts", "o4-on-o5-hosts"])
def test_defragmentation_evicts_for_a_starved_job(host_gb, big_gb) -> None:
    w = world(memory_gb=host_gb)
    w.cycle.submit(job("small", "ann"))
    r = w.run()
    # the least invested processes are spread over every host, so the fair-share
    # evictions leave holes too small for the big job's processes
    by_host: dict[str, list[str]] = {}
    for i in r.jobs["small"].instances:
        by_host.setdefault(i.host, []).append(i.instance_id)
    w.cycle.report_investment({iid: 1000.0 * k for ids in by_host.values() for k, iid in enumerate(ids)})
    w.cycle.submit(job("big", "bob", memory_gb=big_gb))
    reports = [w.run() for _ in range(4)]
    assert "big" in reports[0].needy and reports[0].jobs["big"].processes == 0
    defrag = [c for r in reports for c in r.shrank if c.reason.startswith("evicted by defragmentation")]
    assert defrag and all(c.job_id == "small" and "room for big" in c.reason for c in defrag)
    assert reports[-1].jobs["big"].processes >= w.core.settings.fragmentation_threshold


# --- hosts come and go --------------------------------------------------------------------------


def _off(w: World, name: str, how: str) -> None:
    if how == "missed-heartbeats":
        w.clock.advance(20)  # three intervals of 5 s without a heartbeat from it
        w.beat(name)
    elif how == "varied-off":
        w.collection.vary_off(name)
    else:
        w.group.remove(name)


@pytest.mark.parametrize("how", ["missed-heartbeats", "varied-off", "left"])
def test_a_host_lost_evicts_its_work_and_it_is_rescheduled(how) -> None:
    w = world()
    for u in ("ann", "bob", "cat"):
        w.cycle.submit(job(u, u))
    w.run(2)
    on_h2 = {i.instance_id for st_ in w.cycle.last_report.jobs.values() for i in st_.instances if i.host == "h2"}
    assert len(on_h2) == 8
    _off(w, "h2", how)
    assert w.cycle.watch() and w.cycle.due()
    w.clock.advance(1)
    w.beat("h2")
    r = w.cycle.run_once()
    check(w)
    kind = "host-leave" if how == "left" else "host-unavailable"
    assert f"{kind} h2" in r.triggers
    lost = {c.instance_id for c in r.shrank if c.host == "h2"}
    assert lost == on_h2
    assert {c.reason for c in r.shrank if c.host == "h2"} == {f"host h2 {'left' if how == 'left' else 'unavailable'}"}
    # the core may also even out what is left (24 processes, 8 each)
    assert all("above its fair share" in c.reason for c in r.shrank if c.host != "h2")
    assert w.host("h2") is None or w.host("h2").list_instances() == []
    assert ("h2" not in r.hosts) if how == "left" else r.hosts["h2"] == "dead"
    r = w.cycle.run_once()
    check(w)
    assert sum(procs(r).values()) == 24 and max(procs(r).values()) - min(procs(r).values()) <= 1
    assert all(i.host != "h2" for st_ in r.jobs.values() for i in st_.instances)
    if how != "left":  # it comes back: the work spreads onto it again
        if how == "varied-off":
            w.collection.vary_on("h2")
        r = w.run()
        assert "host-back h2" in r.triggers
        r = w.run()
        assert sum(procs(r).values()) == 32


def test_a_new_host_joining_is_grown_into() -> None:
    w = world(hosts=2)
    w.cycle.submit(job("a", "ann"))
    assert w.run().jobs["a"].processes == 16
    h = Owner("h9", Resources(cpus=64, memory_gb=32), clock=w.clock, attributes={"host_group": "g0"})
    w.group.add(h)
    h.join()
    assert w.cycle.watch() == ["host-join h9"]
    r = w.run()
    assert "host-join h9" in r.triggers
    r = w.run()
    assert r.jobs["a"].hosts.get("h9") == 8


# --- vetoes -------------------------------------------------------------------------------------


def test_owner_veto_leaves_the_share_unstarted_and_it_is_retried_next_cycle() -> None:
    w = world(hosts=2, memory_gb=16)  # 2 hosts x 4 processes
    w.cycle.submit(job("a", "ann"))
    w.host("h2").refuse = {"ann"}
    r = w.run()
    assert r.jobs["a"].processes == 4 and r.jobs["a"].hosts == {"h1": 4}
    assert len(r.refused) == 4 and {c.code for c in r.refused} == {"policy.owner"}
    assert {c.host for c in r.refused} == {"h2"}
    assert w.core.jobs["a"].current() == 4  # the core forgot the shares that did not start
    asked = w.host("h2").asked
    r = w.run()  # nowhere else has room: the refusing host is asked again
    assert len(r.refused) == 4 and w.host("h2").asked > asked
    w.host("h2").refuse = set()
    r = w.run()
    assert r.jobs["a"].processes == 8 and r.jobs["a"].hosts == {"h1": 4, "h2": 4}
    assert not r.refused


def test_a_refused_process_moves_to_another_host_through_deltas_in_the_same_cycle() -> None:
    w = world(hosts=3, memory_gb=16)
    w.cycle.submit(job("a", "ann", max_processes=4))
    w.host("h1").refuse = {"ann"}
    w.host("h2").refuse = {"ann"}
    r = w.run()
    assert r.jobs["a"].processes == 4 and r.jobs["a"].hosts == {"h3": 4}
    assert not r.refused and all("moved from" in c.reason for c in r.grew if "moved" in c.reason)
    assert {s.machine for s in w.core.jobs["a"].shares.values()} == {"h3"}
    r = w.run()
    assert not r.grew and not r.shrank and not r.refused
    # a later placement of this job on a host that refused it goes elsewhere first
    w.cycle.update("a", max_processes=6)
    asked = w.host("h1").asked + w.host("h2").asked
    w.host("h3").refuse = {"ann"}  # now nobody takes more: nothing starts, the core keeps 4
    r = w.run()
    assert r.jobs["a"].processes == 4 and len(r.refused) == 2
    assert w.host("h1").asked + w.host("h2").asked > asked  # with no room elsewhere they are asked again


def test_access_policy_in_the_collection_means_the_host_is_never_asked() -> None:
    w = world(hosts=2, memory_gb=16, policies={"h1": DenyUsers(["ann"])})
    w.cycle.submit(job("a", "ann", max_processes=4))
    r = w.run()
    assert r.jobs["a"].hosts == {"h2": 4} and not r.refused
    assert w.host("h1").asked == 0
    w.cycle.update("a", max_processes=8)
    r = w.run()
    assert r.jobs["a"].processes == 4
    assert {c.code for c in r.refused} == {"access.denied"} and w.host("h1").asked == 0


# --- timing, errors and input -------------------------------------------------------------------


def test_due_on_the_timer_or_on_events() -> None:
    w = world(hosts=1)
    assert w.cycle.due()  # never ran
    w.cycle.run_once()
    assert not w.cycle.due()
    w.clock.advance(9.9)
    assert not w.cycle.due()
    w.clock.advance(0.2)
    assert w.cycle.due()
    w.cycle.run_once()
    w.cycle.note("operator asked")
    assert w.cycle.due()
    assert w.cycle.run_once().triggers == ("operator asked",)
    w.cycle.submit(job("a", "ann"))
    assert w.cycle.due()
    w.cycle.run_once()
    assert w.cycle.complete("a") and w.cycle.due()


@pytest.mark.parametrize(
    "request_, match",
    [
        (job("a", "ann", ducc_class="nope"), "unknown class"),
        (job("a", "ann", ducc_class="fixed"), "is FIXED_SHARE"),
        (job("dup", "ann"), "already exists"),
    ],
    ids=["unknown-class", "not-fair-share", "duplicate"],
)
def test_bad_submissions_raise(request_, match) -> None:
    w = world(hosts=1, classes=[ResourceClassSpec("normal", policy="FAIR_SHARE"), ResourceClassSpec("fixed", policy="FIXED_SHARE")])
    w.cycle.submit(job("dup", "ann"))
    with pytest.raises(SchedulingError, match=match):
        w.cycle.submit(request_)


def test_class_refusing_the_user_is_reported() -> None:
    w = world(hosts=1, classes=[ResourceClassSpec("normal", policy="FAIR_SHARE", users=("bob",))])
    w.cycle.submit(job("a", "ann"))
    r = w.run()
    assert r.jobs["a"].processes == 0 and r.jobs["a"].reason.startswith("Refused")


class BrokenEnactor:
    def enact_schedule(self, schedules):
        raise EnactmentError("port down")


def test_a_failing_enactor_drops_the_new_processes_and_the_cycle_goes_on() -> None:
    w = world(hosts=1)
    w.cycle.enactor = BrokenEnactor()
    w.cycle.submit(job("a", "ann"))
    r = w.run()
    assert r.jobs["a"].processes == 0 and len(r.refused) == 8
    assert {c.code for c in r.refused} == {"enactment.error"} and w.core.jobs["a"].current() == 0


class FlakyStopper:
    def __init__(self, inner, failures: int) -> None:
        self.inner, self.failures = inner, failures

    def stop(self, instance, reason):
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("host unreachable")
        return self.inner.stop(instance, reason)


def test_a_failed_stop_keeps_the_space_taken_and_is_retried() -> None:
    w = world(hosts=1)
    w.cycle.submit(job("a", "ann"))
    w.run()
    w.cycle.stopper = FlakyStopper(w.cycle.stopper, failures=3)
    w.cycle.update("a", max_processes=5)
    r = w.cycle.run_once()
    assert len(r.shrank) == 0 and r.jobs["a"].evicting == 3 and r.jobs["a"].processes == 5
    assert len(w.host("h1").list_instances()) == 8 - 3 + 3  # three still run, unconfirmed
    r = w.cycle.run_once()
    assert len(r.shrank) == 3 and r.jobs["a"].evicting == 0
    check(w)


def test_an_instance_that_exits_by_itself_is_replaced() -> None:
    w = world(hosts=1)
    w.cycle.submit(job("a", "ann"))
    r = w.run()
    inst = r.jobs["a"].instances[0]
    w.host("h1").stop_object(inst.instance_id, "crashed")
    w.worker.instance_stopped(inst.instance_id)
    assert w.cycle.instance_gone(inst.instance_id) and not w.cycle.instance_gone(inst.instance_id)
    assert w.cycle.due()
    r = w.run()
    assert r.jobs["a"].processes == 8 and len(r.grew) == 1


# --- invariants under random events ---------------------------------------------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("submit"), st.sampled_from(["ann", "bob", "cat"]), st.sampled_from([4, 8, 12])),
        st.tuples(st.just("complete"), st.integers(1, 6)),
        st.tuples(st.just("off"), st.sampled_from(["h1", "h2", "h3"])),
        st.tuples(st.just("on"), st.sampled_from(["h1", "h2", "h3"])),
        st.tuples(st.just("veto"), st.sampled_from(["h1", "h2", "h3"]), st.sampled_from(["ann", "bob"])),
        st.tuples(st.just("shrink"), st.integers(1, 6), st.integers(0, 3)),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.sampled_from([AT_ONCE, DOUBLING]))
def test_capacity_is_never_exceeded_and_instances_match_the_core(ops, rm) -> None:
    """Any sequence of arrivals, completions, hosts going and coming, vetoes and
    shrinking jobs, with a cycle after each: the invariants of ``check`` hold."""
    w = world(hosts=3, memory_gb=24, settings=rm)
    n = 0
    for op in [("submit", "ann", 4), *ops, ("on", "h1")]:
        if op[0] == "submit":
            n += 1
            w.cycle.submit(job(f"j{n}", op[1], memory_gb=op[2]))
        elif op[0] == "complete":
            w.cycle.complete(f"j{op[1]}")
        elif op[0] == "off":
            w.collection.vary_off(op[1])
        elif op[0] == "on":
            w.collection.vary_on(op[1])
        elif op[0] == "veto":
            w.host(op[1]).refuse ^= {op[2]}
        elif f"j{op[1]}" in w.cycle.last_report.jobs:
            w.cycle.update(f"j{op[1]}", max_processes=op[2])
        w.run()  # check() after every cycle
    snap = w.collection.snapshot()
    for st_ in w.cycle.last_report.jobs.values():
        assert all(snap.is_available(i.host) for i in st_.instances)
