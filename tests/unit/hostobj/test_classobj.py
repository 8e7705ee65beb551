"""Class objects: host list, max instances, own veto, vault space, via a host group."""

from __future__ import annotations

import pytest

from legionrm.errors import ConfigError
from legionrm import codes
from legionrm.hostobj import build_class, build_host, build_vault
from legionrm.hostobj.classobj import ClassObject, ClassPolicy
from legionrm.hostobj.group import HostGroup
from legionrm.hostobj.host import HostObject
from legionrm.hostobj.policies import ADMIT, AllowGroups
from legionrm.hostobj.vault import VaultObject
from legionrm.models import (
    ClassSpec,
    Holder,
    HostSpec,
    InstanceRef,
    Refusal,
    ReservationRequest,
    Resources,
    VaultSpec,
)

ANN = Holder(user="ann", class_name="Foo")


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def setup(**cls_kw):
    clock = Clock()
    g = HostGroup("g", [HostObject(n, Resources(cpus=4), clock=clock) for n in ("batch1", "batch2", "login1")])
    v = VaultObject("v1", Resources(storage_gb=10), serves=("batch*",), clock=clock)
    foo = ClassObject("Foo", hosts={n: g for n in g.names()}, vaults={"v1": v}, **cls_kw)
    return g, v, foo


def reserve(g: HostGroup, host: str, rid: str):
    return g.make_reservations([ReservationRequest(request_id=rid, resource=host, holder=ANN, resources=Resources(cpus=1), vault="v1")])[0]


def vtoken(v: VaultObject, rid: str, gb: float = 4):
    return v.make_reservation(ReservationRequest(request_id=rid, resource="v1", holder=ANN, resources=Resources(storage_gb=gb)))


def test_create_with_host_and_vault_tokens() -> None:
    g, v, foo = setup()
    ref = foo.create_instance("batch1", "v1", reserve(g, "batch1", "a"), {"n": 1}, vault_token=vtoken(v, "va"))
    assert isinstance(ref, InstanceRef) and ref.host == "batch1" and ref.vault == "v1" and ref.class_name == "Foo"
    assert v.dynamic_attributes()["free_storage_gb"] == 6
    assert foo.destroy_instance(ref.instance_id) and not foo.destroy_instance(ref.instance_id)
    assert g.list_instances() == [] and v.dynamic_attributes()["free_storage_gb"] == 10


@pytest.mark.parametrize(
    "cls_kw, host, code",
    [
        (dict(host_list=("batch*",)), "login1", codes.CLASS_HOST_LIST),
        (dict(max_instances=0), "batch1", codes.CLASS_MAX_INSTANCES),
        (dict(), "nowhere", codes.RESOURCE_UNKNOWN),
    ],
    ids=["host-list", "max-instances", "unknown-host"],
)
def test_class_level_refusals(cls_kw: dict, host: str, code: str) -> None:
    g, v, foo = setup(**cls_kw)
    tok = reserve(g, "login1" if host == "login1" else "batch1", "a")
    out = foo.create_instance(host, None, tok)
    assert isinstance(out, Refusal) and out.code == code


class NoFriday(ClassPolicy):
    def __init__(self, host: str) -> None:
        self.host = host

    def admit_placement(self, cls, host, vault, token):
        return Refusal(code=codes.CLASS_VETO, reason=f"{cls.name} avoids {host}") if host == self.host else ADMIT


def test_class_veto_and_host_veto_give_the_vault_space_back() -> None:
    g, v, foo = setup(policy=NoFriday("batch2"))
    out = foo.create_instance("batch2", "v1", reserve(g, "batch2", "a"))
    assert out.code == codes.CLASS_VETO and out.by == "Foo" and "avoids batch2" in out.reason
    vt = vtoken(v, "vb")
    bad = reserve(g, "batch1", "b").model_copy(update={"end": 99.0})  # altered: the host refuses
    out = foo.create_instance("batch1", "v1", bad, vault_token=vt)
    assert out.code == codes.TOKEN_FORGED
    assert v.list_uses() == {} and v.dynamic_attributes()["free_storage_gb"] == 6  # space back in the reservation
    assert foo.list_instances() == []
    ref = foo.create_instance("batch1", "v1", reserve(g, "batch1", "c"), vault_token=vt)  # the vault token still works
    assert isinstance(ref, InstanceRef) and len(v.list_uses()) == 1


def test_max_instances_counts_own_instances() -> None:
    g, v, foo = setup(max_instances=1)
    ref = foo.create_instance("batch1", None, reserve(g, "batch1", "a"))
    assert foo.create_instance("batch1", None, reserve(g, "batch1", "b")).code == codes.CLASS_MAX_INSTANCES
    g.stop_objects([ref], "preempted")
    assert foo.instance_stopped(ref.instance_id)
    assert isinstance(foo.create_instance("batch1", None, reserve(g, "batch1", "b")), InstanceRef)


# --- building from specs ----------------------------------------------------------


class OwnedHost(HostObject):
    def __init__(self, *a, group: str = "x", **kw) -> None:
        super().__init__(*a, **kw)
        self.group = group


def test_build_host_with_a_policy_or_an_owner_class() -> None:
    spec = HostSpec(name="h", attributes={"cpus": 8, "memory_gb": 32}, policy="AllowGroups", policy_args={"names": ["lab"]})
    h = build_host(spec)
    assert isinstance(h.policy, AllowGroups) and h.capacity == Resources(cpus=8, memory_gb=32)
    assert h.record().access.allow_groups == ("lab",)
    owned = build_host(spec.model_copy(update={"policy": f"{__name__}:OwnedHost", "policy_args": {"group": "bio"}}))
    assert isinstance(owned, OwnedHost) and owned.group == "bio"
    with pytest.raises(ConfigError, match="host h.policy_args"):
        build_host(spec.model_copy(update={"policy": f"{__name__}:OwnedHost", "policy_args": {"nope": 1}}))
    with pytest.raises(ConfigError, match="neither"):
        build_host(spec.model_copy(update={"policy": "legionrm.models:Holder"}))


def test_build_vault_and_class() -> None:
    v = build_vault(VaultSpec(name="v", attributes={"storage_gb": 50}, serves=("a*",)))
    assert v.capacity.storage_gb == 50 and v.serves == ("a*",)
    c = build_class(ClassSpec(name="Foo", host_list=("a*",), max_instances=3, policy=f"{__name__}:NoFriday", policy_args={"host": "a1"}))
    assert isinstance(c.policy, NoFriday) and c.max_instances == 3
    with pytest.raises(ConfigError, match="bad policy_args"):
        build_class(ClassSpec(name="Foo", policy=f"{__name__}:NoFriday"))


@pytest.mark.parametrize(
    "named, issued, code",
    [
        pytest.param("batch1", "login1", codes.TOKEN_WRONG_ISSUER, id="token-of-an-unlisted-host"),
        pytest.param("batch1", "batch2", codes.TOKEN_WRONG_ISSUER, id="token-of-another-listed-host"),
        pytest.param("batch1", "batch1", None, id="token-of-the-named-host"),
    ],
)
def test_the_named_host_must_have_issued_the_token(named: str, issued: str, code: str | None) -> None:
    g, v, foo = setup(host_list=("batch*",))  # every host is carried by the same group port
    out = foo.create_instance(named, None, reserve(g, issued, "a"))
    if code is None:
        assert isinstance(out, InstanceRef) and out.host == named
    else:
        assert isinstance(out, Refusal) and out.code == code and out.by == "Foo"
        assert g.list_instances() == []  # nothing started on the issuer behind the class's back


class Sloppy(ClassObject):
    def admit_placement(self, host, vault, token):
        return None  # forgot to return a verdict


def test_a_muddled_class_veto_refuses() -> None:
    g = HostGroup("g", [HostObject("batch1", Resources(cpus=4), clock=Clock())])
    foo = Sloppy("Foo", hosts={"batch1": g})
    out = foo.create_instance("batch1", None, reserve(g, "batch1", "a"))
    assert isinstance(out, Refusal) and out.code == codes.POLICY and out.by == "Foo"


@pytest.mark.parametrize(
    "vault, from_vault, code",
    [
        pytest.param(None, "v1", None, id="vault-named-by-its-token-paired"),
        pytest.param(None, "v2", codes.VAULT_INCOMPATIBLE, id="vault-named-by-its-token-unpaired"),
        pytest.param("v2", "v2", codes.VAULT_INCOMPATIBLE, id="vault-named-unpaired"),
        pytest.param("v1", "v2", codes.TOKEN_WRONG_ISSUER, id="vault-token-of-another-vault"),
    ],
)
def test_the_vault_actually_used_is_the_one_the_host_checks(vault: str | None, from_vault: str, code: str | None) -> None:
    """The host checks its pairing with the vault whose space is taken, even
    when the caller names the vault only through its token."""
    clock = Clock()
    h = HostObject("batch1", Resources(cpus=4), vaults=("v1",), clock=clock)
    vaults = {n: VaultObject(n, Resources(storage_gb=10), clock=clock) for n in ("v1", "v2")}
    seen: list = []

    class Watchful(ClassPolicy):
        def admit_placement(self, cls, host, vault, token):
            seen.append(vault)
            return ADMIT

    foo = ClassObject("Foo", hosts={"batch1": h}, vaults=vaults, policy=Watchful())
    tok = h.make_reservation(ReservationRequest(request_id="a", resource="batch1", holder=ANN, resources=Resources(cpus=1)))
    vtok = vaults[from_vault].make_reservation(
        ReservationRequest(request_id="va", resource=from_vault, holder=ANN, resources=Resources(storage_gb=4))
    )
    out = foo.create_instance("batch1", vault, tok, vault_token=vtok)
    if code is None:
        assert isinstance(out, InstanceRef) and out.vault == from_vault and seen == [from_vault]
    else:
        assert isinstance(out, Refusal) and out.code == code, out
        assert h.list_instances() == [] and vaults[from_vault].list_uses() == {}  # the space was given back


def test_a_class_object_booted_anew_adopts_what_runs_and_can_stop_it() -> None:
    """A system booted on a kept book: the hosts kept an instance, a fresh class object counts it again
    (once; not another class's, not one on a host it cannot reach) and a destroy stops it on its host."""
    g, v, foo = setup()
    ref = foo.create_instance("batch1", None, reserve(g, "batch1", "a"))
    again = ClassObject("Foo", hosts={n: g for n in g.names()}, vaults={"v1": v})
    other = ref.model_copy(update={"instance_id": "x~1", "class_name": "Bar"})
    lost = ref.model_copy(update={"instance_id": "x~2", "host": "gone1"})
    assert again.adopt([ref, other, lost]) == 1 and again.adopt([ref]) == 0
    assert [r.instance_id for r in again.list_instances()] == [ref.instance_id]
    assert again.destroy_instance(ref.instance_id) and g.list_instances() == []
