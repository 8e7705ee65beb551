"""A host object's durable state: a restarted host keeps its secret, never
reissues a token id, honours its grants and instances; abandoned grants are cancelled."""

from __future__ import annotations

from pathlib import Path

from legionrm.hostobj.durable import Keeper
from legionrm.hostobj.host import HostObject
from legionrm.models import Holder, InstanceRef, ReservationRequest, ReservationToken, Resources
from legionrm.state import HostStore

ANN = Holder(user="ann", class_name="Foo")


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def host(clock: Clock, name: str = "h1") -> HostObject:
    return HostObject(name, Resources(cpus=4, memory_gb=8), clock=clock)


def ask(rid: str, cpus: float = 1, resource: str = "h1", timeout_s: float = 60) -> ReservationRequest:
    return ReservationRequest(request_id=rid, resource=resource, holder=ANN, resources=Resources(cpus=cpus),
                              duration_s=600, timeout_s=timeout_s)


def test_a_restored_host_honours_its_tokens_and_never_reissues_an_id(tmp_path: Path) -> None:
    clock = Clock()
    old = host(clock)
    granted = old.make_reservation(ask("r1"))
    used = old.make_reservation(ask("r2"))
    assert isinstance(granted, ReservationToken) and isinstance(used, ReservationToken)
    inst = old.start_object(used, "Foo", ANN)
    assert isinstance(inst, InstanceRef)
    keeper = Keeper(HostStore(tmp_path / "g.db"), [old])
    assert keeper.save() == 1 and keeper.save() == 0  # only what changed is written again

    new = host(clock)  # the actor restarted: a fresh object, a fresh secret
    assert Keeper(HostStore(tmp_path / "g.db"), [new]).restore() == {"h1": 2}
    assert new.check_reservation(granted.token_id) == granted  # the old token still verifies and holds
    assert [i.instance_id for i in new.list_instances()] == [inst.instance_id]
    assert float(new.calendar.usage_at(clock.t)[0]) == 2.0
    # the same request id asked again after a restart is the same grant; a new one gets a new id
    assert new.make_reservation(ask("r1")) == granted
    fresh = new.make_reservation(ask("r3"))
    assert isinstance(fresh, ReservationToken) and fresh.token_id not in {granted.token_id, used.token_id}
    started = new.start_object(granted, "Foo", ANN)  # the token granted before the restart starts
    assert isinstance(started, InstanceRef)
    assert new.make_reservation(ask("r4", cpus=2)).code == "capacity"  # 1 + 1 + 1 booked of 4: 2 do not fit


def test_the_serial_survives_even_when_the_reservations_are_gone(tmp_path: Path) -> None:
    clock = Clock()
    old = host(clock)
    ids = set()
    for k in range(5):
        t = old.make_reservation(ask(f"r{k}"))
        ids.add(t.token_id)
        old.cancel_reservation(t)
    body = old.durable_state()
    new = host(clock)
    new.restore_durable(body)
    new.retain_s = 0
    clock.t += 120  # the old records are forgotten: a request id asked again is a new grant
    for k in range(5):
        t = new.make_reservation(ask(f"r{k}"))
        assert isinstance(t, ReservationToken) and t.token_id not in ids
        new.cancel_reservation(t)


def test_reservations_that_came_due_while_down_expire_at_once() -> None:
    clock = Clock()
    old = host(clock)
    old.make_reservation(ask("r1", timeout_s=5))
    new = host(clock)
    new.restore_durable(old.durable_state())
    clock.t += 10
    assert new.reservations() == []


def test_a_body_of_another_host_is_ignored() -> None:
    clock = Clock()
    old = host(clock, "other")
    old.make_reservation(ask("r1", resource="other"))
    new = host(clock)
    assert new.restore_durable(old.durable_state()) == 0 and new.reservations() == []


def test_abandoned_grants_are_cancelled_by_request_id_or_prefix() -> None:
    clock = Clock()
    h = host(clock)
    a = h.make_reservation(ask("req/a/host/0"))
    b = h.make_reservation(ask("req/b/host/0"))
    other = h.make_reservation(ask("reqX/a/host/0"))
    held = h.make_reservation(ask("req/c/host/0"))
    h.start_object(held, "Foo", ANN)
    assert h.cancel_requests(["req/a/host/0", "nope"]) == [a.token_id]
    assert h.cancel_requests(["req/a/host/0"]) == []  # idempotent
    assert h.cancel_requests(["req/"], prefix=True) == [b.token_id]  # the one in use stays, reqX is not req
    assert {t.token_id for t in h.reservations()} == {other.token_id, held.token_id}
