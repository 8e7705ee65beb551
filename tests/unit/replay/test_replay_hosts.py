"""The replay's light hosts (:mod:`legionrm.replay.hosts`) answer as the live
simulated hosts do, on what a replay asks: the same grants and refusal
codes, and the same reported attributes the planner reads, after the same
reservations, starts, cancels and stops."""

from __future__ import annotations

import random

import pytest

from legionrm import codes
from legionrm.collection.collection import Collection
from legionrm.enactor.ports import CreateItem
from legionrm.hostobj.build import build_host
from legionrm.models import Holder, HostSpec, InstanceRef, Refusal, ReservationRequest, ReservationToken, Resources
from legionrm.replay.hosts import ReplayHosts

PLANNER_READS = ("free_cpus", "free_memory_gb", "free_gpus", "load", "reservations", "state", "owner_policies",
                 "instances", "drained", "drain_reason")
HOLDER = Holder(user="u1", class_name=None, enactor="sched", groups=())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ask(n: int, host: str, cpus: float, wall: float = 100.0, **kw: object) -> ReservationRequest:
    return ReservationRequest(request_id=f"r{n}", resource=host, holder=HOLDER, resources=Resources(cpus=cpus),
                              duration_s=wall, timeout_s=30.0, **kw)


def item(n: int, host: str, token: ReservationToken, user: str = "u1") -> CreateItem:
    return CreateItem(request_id=f"c{n}", key=f"k{n}", class_name="Job", host=host, vault=None, host_token=token,
                      vault_token=None, holder=HOLDER.model_copy(update={"user": user}))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_answers_and_reports_as_a_live_host(seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    spec = HostSpec(name="n00000", attributes={"cpus": 4, "memory_gb": 16})
    live = build_host(spec, clock=clock)
    light = ReplayHosts([spec], Collection(clock=clock), clock)
    running: list[tuple[str, InstanceRef]] = []  # (live instance id, light ref)
    for n in range(200):
        clock.now += rng.choice([0.0, 1.0, 5.0])
        r = ask(n, spec.name, rng.choice([0.5, 1, 2, 3, 4, 5]))
        a, b = live.make_reservation(r), light.reserve([r])[0]
        assert isinstance(a, Refusal) == isinstance(b, Refusal), n
        if isinstance(a, Refusal):
            assert (a.code, a.by) == (b.code, b.by)
        elif rng.random() < 0.2:  # the enactor gives one back
            live.cancel_reservation(a)
            light.cancel([b])
        else:
            started = live.start_object(a, "Job", HOLDER)
            ref = light.create_instances([item(n, spec.name, b)])[0]
            assert isinstance(started, InstanceRef) and isinstance(ref, InstanceRef)
            assert (ref.instance_id, ref.host, ref.user) == (started.instance_id, started.host, started.user)
            running.append((started.instance_id, ref))
        if running and rng.random() < 0.4:
            iid, ref = running.pop(rng.randrange(len(running)))
            live.stop_object(iid, "ended")
            assert light.stop(ref, "ended")
        want = live.dynamic_attributes()
        got = light.attributes(spec.name)
        assert {k: want[k] for k in PLANNER_READS} == got


def test_a_token_is_good_for_one_start_by_its_holder() -> None:
    clock = Clock()
    hosts = ReplayHosts([HostSpec(name="a", attributes={"cpus": 2}), HostSpec(name="b", attributes={"cpus": 2})],
                        Collection(clock=clock), clock)
    token = hosts.reserve([ask(1, "a", 1)])[0]
    assert isinstance(token, ReservationToken)
    assert hosts.reserve([ask(1, "a", 1)])[0] is token  # a repeated id: the same answer
    wrong = hosts.create_instances([item(1, "a", token, user="u2")])[0]
    assert isinstance(wrong, Refusal) and wrong.code == codes.TOKEN_WRONG_HOLDER
    elsewhere = hosts.create_instances([item(1, "b", token)])[0]
    assert isinstance(elsewhere, Refusal) and elsewhere.code == codes.TOKEN_WRONG_ISSUER
    assert isinstance(hosts.create_instances([item(1, "a", token)])[0], InstanceRef)
    again = hosts.create_instances([item(2, "a", token)])[0]
    assert isinstance(again, Refusal) and again.code == codes.TOKEN_USED
    unknown = hosts.reserve([ask(3, "c", 1)])[0]
    assert isinstance(unknown, Refusal) and unknown.code == codes.RESOURCE_UNKNOWN
    ahead = hosts.reserve([ask(4, "a", 1, start=clock.now + 10)])[0]
    assert isinstance(ahead, Refusal) and ahead.code == codes.REQUEST_INVALID


def test_an_unused_token_expires_and_gives_its_cpus_back() -> None:
    clock = Clock()
    hosts = ReplayHosts([HostSpec(name="a", attributes={"cpus": 2})], Collection(clock=clock), clock)
    token = hosts.reserve([ask(1, "a", 2)])[0]
    assert isinstance(hosts.reserve([ask(2, "a", 1)])[0], Refusal)
    clock.now += 31.0
    late = hosts.create_instances([item(1, "a", token)])[0]
    assert isinstance(late, Refusal) and late.code == codes.TOKEN_EXPIRED
    assert hosts.attributes("a")["free_cpus"] == 2.0


def test_a_report_sends_only_what_changed() -> None:
    clock = Clock()
    sent: list[list[tuple[str, dict]]] = []

    class Sink(Collection):
        def update_many(self, updates):  # type: ignore[override]
            sent.append(updates)
            super().update_many(updates)

    sink = Sink(clock=clock)
    hosts = ReplayHosts([HostSpec(name="a", attributes={"cpus": 2}), HostSpec(name="b", attributes={"cpus": 2})],
                        sink, clock)
    token = hosts.reserve([ask(1, "a", 1)])[0]
    hosts.create_instances([item(1, "a", token)])
    hosts.report(["a", "b"])
    assert sent[-1] == [("a", {"free_cpus": 1.0, "load": 0.5, "state": "busy", "instances": 1}), ("b", {})]
    assert sink.snapshot().record("a").attributes["free_cpus"] == 1.0
