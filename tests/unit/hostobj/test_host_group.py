"""HostGroup: many host cores in one process, batched calls, never a failed batch."""

from __future__ import annotations

from legionrm import codes
from legionrm.collection.collection import Collection
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.policies import DenyUsers
from legionrm.models import (
    Holder,
    InstanceRef,
    ReservationRequest,
    ReservationToken,
    Resources,
    StartRequest,
)

ANN = Holder(user="ann", class_name="Foo")


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


class BatchSink:
    def __init__(self) -> None:
        self.joined: list[str] = []
        self.batches: list[list] = []

    def join(self, record):
        self.joined.append(record.name)

    def update(self, name, attrs):
        raise AssertionError("a group uses update_many when the sink has it")

    def update_many(self, updates):
        self.batches.append(updates)

    def leave(self, name):
        self.joined.remove(name)


class Exploding(HostObject):
    def make_reservation(self, request):
        raise RuntimeError("disk on fire")


def group(clock: Clock, sink=None) -> HostGroup:
    hosts = [HostObject(f"n{i}", Resources(cpus=2), clock=clock) for i in range(3)]
    hosts.append(HostObject("grumpy", Resources(cpus=2), clock=clock, policy=DenyUsers(["ann"])))
    hosts.append(Exploding("boom", Resources(cpus=2), clock=clock))
    return HostGroup("g1", hosts, sink=sink)


def req(host: str, rid: str, cpus: float = 1) -> ReservationRequest:
    return ReservationRequest(request_id=rid, resource=host, holder=ANN, resources=Resources(cpus=cpus), timeout_s=5)


def test_batch_answers_in_order_and_never_fails_whole() -> None:
    g = group(Clock())
    out = g.make_reservations([req("n0", "a"), req("gone", "b"), req("grumpy", "c"), req("boom", "d"), req("n0", "e", 5)])
    assert isinstance(out[0], ReservationToken) and out[0].issuer == "n0"
    assert [o.code for o in out[1:]] == [codes.RESOURCE_UNKNOWN, codes.POLICY_USER, codes.RESOURCE_ERROR, codes.CAPACITY_TOTAL]
    assert "disk on fire" in out[3].reason and out[1].by == "gone"


def test_hosts_keep_their_own_secrets() -> None:
    g = group(Clock())
    t0, t1 = g.make_reservations([req("n0", "a"), req("n1", "a")])
    forged = t0.model_copy(update={"issuer": "n1", "token_id": t1.token_id})
    out = g.start_objects([StartRequest(token=forged, class_name="Foo", holder=ANN)])
    assert out[0].code == codes.TOKEN_FORGED


def test_start_cancel_stop_batches() -> None:
    clock = Clock()
    g = group(clock)
    toks = g.make_reservations([req(f"n{i}", f"r{i}", 2) for i in range(3)])
    assert g.cancel_reservations([toks[2], toks[2].token_id, ("n2", "n2~x"), "ghost~1"]) == [True, False, False, False]
    refs = g.start_objects([StartRequest(token=t, class_name="Foo", holder=ANN) for t in toks])
    assert isinstance(refs[0], InstanceRef) and isinstance(refs[1], InstanceRef) and refs[2].code == codes.TOKEN_CANCELLED
    assert [r.host for r in g.list_instances()] == ["n0", "n1"] and len(g.list_instances("n1")) == 1
    freed = g.stop_objects([refs[0], refs[1].instance_id, ("n5", "n5~i1")], reason="preempted")
    assert freed[0] == Resources(cpus=2) and freed[1] == Resources(cpus=2) and freed[2].code == codes.RESOURCE_UNKNOWN
    assert g.list_instances() == []


def test_check_and_expire_by_each_hosts_clock() -> None:
    clock = Clock()
    g = group(clock)
    (tok,) = g.make_reservations([req("n0", "a", 2)])
    assert g.check_reservations([tok.token_id]) == [tok]
    clock.t = 5
    assert g.expire() == {"n0": [tok.token_id]}
    assert g.check_reservations([tok])[0].code == codes.TOKEN_EXPIRED


def test_removed_host_answers_unknown_and_leaves() -> None:
    clock = Clock()
    sink = BatchSink()
    g = group(clock, sink)
    g.join()
    (tok,) = g.make_reservations([req("n0", "a")])
    g.start_objects([StartRequest(token=tok, class_name="Foo", holder=ANN)])
    assert g.remove("n0") and not g.remove("n0")
    assert "n0" not in sink.joined
    assert g.start_objects([StartRequest(token=tok, class_name="Foo", holder=ANN)])[0].code == codes.RESOURCE_UNKNOWN


def test_heartbeat_is_one_batched_update() -> None:
    sink = BatchSink()
    g = group(Clock(), sink)
    g.heartbeat()  # first beat joins every host
    assert sorted(sink.joined) == g.names() and sink.batches == [[]]
    g.make_reservations([req("n1", "a")])
    attrs = g.heartbeat()
    assert len(sink.batches[-1]) == 5 and attrs["n1"]["free_cpus"] == 1.0


def test_group_is_a_host_port() -> None:
    g = group(Clock())
    (tok,) = g.make_reservations([req("n2", "a")])
    ref = g.start_object(tok, "Foo", ANN)
    assert ref.host == "n2" and g.stop_object(ref.instance_id) == Resources(cpus=1)


def test_a_group_feeds_the_real_collection() -> None:
    c = Collection()
    g = group(Clock(), sink=c)
    g.heartbeat()
    g.make_reservations([req("n1", "a", 2)])
    g.heartbeat()
    assert c.names() == sorted(g.names()) and c.record("n1").attributes["free_cpus"] == 0.0
