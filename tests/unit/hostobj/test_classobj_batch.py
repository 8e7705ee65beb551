"""A class object's batched creates (``ClassObject.create_instances``): every
refusal reason in a batch beside successes, one ``start_objects`` call per
host port, all ports asked before any is awaited, and (hypothesis) the same
outcomes and final state as ``create_instance`` on each item in turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm import codes
from legionrm.hostobj.classobj import ClassObject, ClassPolicy
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.policies import ADMIT
from legionrm.hostobj.vault import VaultObject
from legionrm.models import (
    CreateRequest,
    Holder,
    ImplementationSpec,
    InstanceRef,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

ANN = Holder(user="ann", class_name="Foo")
BOB = Holder(user="bob", class_name="Foo")
GROUPED = ("batch1", "batch2", "login1")


class Clock:
    t = 100.0

    def __call__(self) -> float:
        return self.t


class SpyGroup(HostGroup):
    """A host group that counts its batched start calls."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.start_calls: list[int] = []

    def start_objects(self, starts):  # type: ignore[no-untyped-def]
        self.start_calls.append(len(starts))
        return super().start_objects(starts)


class Broken:
    """A host port that raises on every start (a dead adapter)."""

    def __init__(self, host: HostObject) -> None:
        self.host = host

    def start_object(self, *a: Any, **kw: Any) -> Any:
        raise ConnectionError("host went away")

    def stop_object(self, instance_id: str, reason: str = "stopped") -> Any:
        return self.host.stop_object(instance_id, reason)


class NoHost(ClassPolicy):
    def __init__(self, host: str) -> None:
        self.host = host

    def admit_placement(self, cls, host, vault, token):  # type: ignore[no-untyped-def]
        return Refusal(code=codes.CLASS_VETO, reason=f"{cls.name} avoids {host}") if host == self.host else ADMIT


@dataclass
class World:
    """Hosts batch1, batch2, login1 (arm) in one group port, solo1 on a port of its
    own (``start_object`` only), vault v1; fixed secrets and clock, so two worlds
    built alike grant the same tokens."""

    host_list: tuple[str, ...] = ()
    max_instances: int | None = None
    veto: str | None = None
    impl: bool = False
    solo_broken: bool = False
    clock: Clock = field(default_factory=Clock)

    def __post_init__(self) -> None:
        self.hosts = [HostObject(n, Resources(cpus=4), attributes={"arch": "arm" if n == "login1" else "x86"},
                                 secret=n.encode() * 8, clock=self.clock) for n in GROUPED]
        self.g = SpyGroup("g", self.hosts)
        self.solo = HostObject("solo1", Resources(cpus=4), attributes={"arch": "x86"}, secret=b"solo" * 8, clock=self.clock)
        self.v = VaultObject("v1", Resources(storage_gb=10), serves=("batch*", "solo*", "login*"), secret=b"v1" * 8,
                             clock=self.clock)
        ports: dict[str, Any] = {n: self.g for n in GROUPED}
        ports["solo1"] = Broken(self.solo) if self.solo_broken else self.solo
        impls = (ImplementationSpec(arch="x86", entry="m:C"),) if self.impl else ()
        self.foo = ClassObject("Foo", hosts=ports, vaults={"v1": self.v}, host_list=self.host_list,
                               max_instances=self.max_instances, policy=NoHost(self.veto) if self.veto else None,
                               implementations=impls)
        self.serial = 0

    def token(self, host: str) -> ReservationToken:
        self.serial += 1
        rq = ReservationRequest(request_id=f"r{self.serial}", resource=host, holder=ANN, resources=Resources(cpus=0.5))
        got = self.solo.make_reservation(rq) if host == "solo1" else self.g.make_reservations([rq])[0]
        assert isinstance(got, ReservationToken), got
        return got

    def vtoken(self) -> ReservationToken:
        self.serial += 1
        got = self.v.make_reservation(ReservationRequest(request_id=f"v{self.serial}", resource="v1", holder=ANN,
                                                         resources=Resources(storage_gb=1)))
        assert isinstance(got, ReservationToken), got
        return got

    def req(self, host: str, *, space: bool = False, **kw: Any) -> CreateRequest:
        token = kw.pop("token", None) or self.token(host if host != "nowhere" else "batch1")
        vt = kw.pop("vault_token", None) or (self.vtoken() if space else None)
        return CreateRequest(host=host, token=token, vault_token=vt, **kw)

    def free_storage(self) -> float:
        return float(self.v.dynamic_attributes()["free_storage_gb"])

    def state(self) -> tuple:
        """Everything a create can change: the class's instances, every host's and the vault's holdings."""
        return (sorted(i.model_dump_json() for i in self.foo.list_instances()),
                [r.audit_view().model_dump_json() for r in (*self.hosts, self.solo, self.v)],
                self.v.list_uses())


def _forged(t: ReservationToken) -> ReservationToken:
    return t.model_copy(update={"end": 99.0})


# (world settings, the refused item (made in the world), its code, who refuses, how many group start calls)
ROWS: list[tuple[dict, Callable[[World], CreateRequest], str, str]] = [
    (dict(host_list=("batch*", "solo*")), lambda w: w.req("login1"), codes.CLASS_HOST_LIST, "Foo"),
    (dict(veto="batch2"), lambda w: w.req("batch2", space=True), codes.CLASS_VETO, "Foo"),
    (dict(), lambda w: w.req("nowhere"), codes.RESOURCE_UNKNOWN, "nowhere"),
    (dict(), lambda w: w.req("batch1", token=w.token("batch2")), codes.TOKEN_WRONG_ISSUER, "Foo"),
    (dict(impl=True), lambda w: w.req("login1", space=True), codes.CLASS_NO_IMPLEMENTATION, "Foo"),
    (dict(), lambda w: w.req("batch2", space=True, vault="v9"), codes.RESOURCE_UNKNOWN, "v9"),
    (dict(), lambda w: w.req("batch2", vault_token=_forged(w.vtoken())), codes.TOKEN_FORGED, "v1"),
    (dict(), lambda w: w.req("batch2", space=True, token=_forged(w.token("batch2"))), codes.TOKEN_FORGED, "batch2"),
    (dict(), lambda w: w.req("batch2", holder=BOB), codes.TOKEN_WRONG_HOLDER, "batch2"),
    (dict(solo_broken=True), lambda w: w.req("solo1", space=True), codes.RESOURCE_ERROR, "solo1"),
]
IDS = ["host-list", "class-veto", "unknown-host", "wrong-issuer", "no-implementation", "unknown-vault",
       "vault-token-forged", "host-token-forged", "wrong-holder", "host-port-raises"]


@pytest.mark.parametrize("settings_, bad, code, by", ROWS, ids=IDS)
def test_each_refusal_beside_successes(settings_: dict, bad: Callable[[World], CreateRequest], code: str,
                                       by: str) -> None:
    w = World(**settings_)
    batch = [w.req("batch1", space=True), bad(w), w.req("batch1"), w.req("solo1" if not w.solo_broken else "batch1")]
    free_before = w.free_storage()
    out = w.foo.create_instances(batch)
    assert len(out) == len(batch)
    assert isinstance(out[1], Refusal) and (out[1].code, out[1].by) == (code, by), out[1]
    assert all(isinstance(o, InstanceRef) for i, o in enumerate(out) if i != 1), out
    assert [o.host for o in out if isinstance(o, InstanceRef)] == [r.host for i, r in enumerate(batch) if i != 1]
    assert w.free_storage() == free_before  # vault space stays reserved (used or given back), never lost
    assert len(w.v.list_uses()) == 1  # only the first item's use: the refused one's was never taken or was given back
    assert sorted(i.instance_id for i in w.foo.list_instances()) == sorted(o.instance_id for i, o in enumerate(out)
                                                                         if i != 1)
    assert w.g.start_calls and len(w.g.start_calls) == 1  # one batched start for every grouped host


def test_a_token_used_twice_in_one_batch_starts_once() -> None:
    w = World()
    tok = w.token("batch1")
    out = w.foo.create_instances([w.req("batch1", token=tok), w.req("batch2"), w.req("batch1", token=tok)])
    assert isinstance(out[0], InstanceRef) and isinstance(out[1], InstanceRef)
    assert isinstance(out[2], Refusal) and out[2].code == codes.TOKEN_USED
    assert w.g.start_calls == [3]


def test_max_instances_counts_what_the_batch_accepted_and_what_its_hosts_refused() -> None:
    w = World(max_instances=2)
    out = w.foo.create_instances([w.req("batch1"), w.req("batch2", holder=BOB), w.req("batch2"), w.req("login1")])
    # the host refused the second, so its slot went to the third; the fourth finds the class full
    assert [o.code if isinstance(o, Refusal) else "ok" for o in out] == ["ok", codes.TOKEN_WRONG_HOLDER, "ok",
                                                                        codes.CLASS_MAX_INSTANCES]
    assert w.g.start_calls == [2, 1]  # a second round only for what waited on the first's outcome


def test_a_vault_token_shared_by_two_items_serves_the_second_when_the_first_host_refuses() -> None:
    w = World()
    vt = w.vtoken()
    out = w.foo.create_instances([w.req("batch1", vault_token=vt, holder=BOB), w.req("batch2", vault_token=vt)])
    assert isinstance(out[0], Refusal) and out[0].code == codes.TOKEN_WRONG_HOLDER
    assert isinstance(out[1], InstanceRef) and list(w.v.list_uses().values()) == [vt.token_id]


def test_every_port_is_asked_before_any_answer_is_awaited() -> None:
    log: list[str] = []

    class Remote:
        def __init__(self, host: HostObject) -> None:
            self.host = host

        def send_starts(self, starts):  # type: ignore[no-untyped-def]
            log.append(f"send {self.host.name} x{len(starts)}")

            def collect():  # type: ignore[no-untyped-def]
                log.append(f"collect {self.host.name}")
                return [self.host.start_object(s.token, s.class_name, s.holder) for s in starts]

            return collect

        def start_object(self, *a: Any, **kw: Any) -> Any:
            raise AssertionError("a port with send_starts is sent batches")

    w = World()
    foo = ClassObject("Foo", hosts={"solo1": Remote(w.solo), "batch1": Remote(w.hosts[0])})
    out = foo.create_instances([w.req("solo1"), w.req("batch1"), w.req("solo1")])
    assert all(isinstance(o, InstanceRef) for o in out)
    assert log == ["send solo1 x2", "send batch1 x1", "collect solo1", "collect batch1"]


def test_create_instance_is_the_batch_of_one() -> None:
    w = World()
    ref = w.foo.create_instance("batch1", None, w.token("batch1"))
    assert isinstance(ref, InstanceRef) and w.g.start_calls == [1]
    assert w.foo.create_instances([]) == [] and w.g.start_calls == [1]


# --- the batch is the same as one create after another ------------------------------

HOSTS = ("batch1", "batch2", "login1", "solo1", "nowhere")
item = st.tuples(st.sampled_from(HOSTS), st.sampled_from(("own", "other", "forged", "reuse")),
                 st.sampled_from(("none", "fresh", "reuse", "forged", "unknown")), st.booleans())
world = st.fixed_dictionaries({"host_list": st.sampled_from(((), ("batch*", "solo*"))),
                               "max_instances": st.none() | st.integers(0, 4),
                               "veto": st.none() | st.sampled_from(GROUPED), "impl": st.booleans(),
                               "solo_broken": st.booleans()})


def _items(w: World, specs: list[tuple[str, str, str, bool]]) -> list[CreateRequest]:
    out: list[CreateRequest] = []
    last, last_v = None, None
    for host, tk, vk, bob in specs:
        own = host if host != "nowhere" else "batch1"
        if tk == "reuse" and last is not None:
            tok = last
        else:
            tok = w.token(own if tk != "other" else ("batch2" if own != "batch2" else "solo1"))
            tok = _forged(tok) if tk == "forged" else tok
        if vk == "reuse" and last_v is not None:
            vt: ReservationToken | None = last_v
        else:
            vt = None if vk == "none" else w.vtoken()
            vt = _forged(vt) if vk == "forged" and vt is not None else vt
        last, last_v = tok, vt or last_v
        out.append(CreateRequest(host=host, token=tok, vault_token=vt, vault="v9" if vk == "unknown" else None,
                                 holder=BOB if bob else None))
    return out


def _outcome(o: InstanceRef | Refusal) -> str:
    return o.model_dump_json()


@settings(max_examples=150, deadline=None)
@given(world, st.lists(item, max_size=8))
def test_a_batch_is_each_create_in_turn(conf: dict, specs: list) -> None:
    one, many = World(**conf), World(**conf)
    seq = [one.foo.create_instance(r.host, r.vault, r.token, r.args, vault_token=r.vault_token, holder=r.holder)
           for r in _items(one, specs)]
    batch = many.foo.create_instances(_items(many, specs))
    assert [_outcome(o) for o in batch] == [_outcome(o) for o in seq]
    assert many.state() == one.state()
