"""Vault objects: storage reservations with the token rules, host pairing, host veto."""

from __future__ import annotations

import pytest

from legionrm import codes
from legionrm.hostobj.policies import ADMIT
from legionrm.hostobj.vault import VaultObject
from legionrm.models import (
    Holder,
    Refusal,
    ReservationRequest,
    ReservationToken,
    Resources,
)

ANN = Holder(user="ann")


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def req(rid: str = "r1", gb: float = 60, **kw) -> ReservationRequest:
    return ReservationRequest(request_id=rid, resource="v1", holder=ANN, resources=Resources(storage_gb=gb), timeout_s=5, **kw)


def vault(clock=None, **kw) -> VaultObject:
    return VaultObject("v1", Resources(storage_gb=100), serves=("batch*", "gpu1"), clock=clock or Clock(), **kw)


def test_space_is_reserved_used_and_released() -> None:
    v = vault()
    tok = v.make_reservation(req())
    assert v.make_reservation(req("r2")).code == codes.CAPACITY
    use = v.use(tok, "batch3", ANN)
    assert isinstance(use, str) and v.list_uses() == {use: tok.token_id}
    assert v.use(tok, "batch3", ANN).code == codes.TOKEN_USED
    assert v.dynamic_attributes()["free_storage_gb"] == 40
    assert v.release(use) == Resources(storage_gb=60)
    assert v.release(use).code == codes.INSTANCE_UNKNOWN
    assert v.dynamic_attributes()["free_storage_gb"] == 100


def test_unused_space_expires() -> None:
    clock = Clock()
    v = vault(clock)
    tok = v.make_reservation(req(gb=100))
    clock.t = 5
    assert v.use(tok, "batch1", ANN).code == codes.TOKEN_EXPIRED
    assert isinstance(v.make_reservation(req("r2", gb=100)), ReservationToken)


def test_pairing_and_token_rules() -> None:
    v = vault()
    tok = v.make_reservation(req())
    assert v.use(tok, "gpu2", ANN).code == codes.VAULT_INCOMPATIBLE
    assert v.use(tok, "batch1", Holder(user="eve")).code == codes.TOKEN_WRONG_HOLDER
    assert v.use(tok.model_copy(update={"resources": Resources(storage_gb=1)}), "batch1", ANN).code == codes.TOKEN_FORGED
    assert v.make_reservation(req("r3", gb=1), for_host="login1").code == codes.VAULT_INCOMPATIBLE


class Picky(VaultObject):
    def admit_host(self, host: str):
        if host == "batch9":
            return Refusal(code=codes.POLICY_HOST, reason="batch9 writes too much")
        return ADMIT


def test_owner_vetoes_a_host() -> None:
    v = Picky("v1", Resources(storage_gb=100), clock=Clock())
    r = v.make_reservation(req(), for_host="batch9")
    assert r.code == codes.POLICY_HOST and r.by == "v1"
    tok = v.make_reservation(req(), for_host="batch1")
    assert v.use(tok, "batch9", ANN).code == codes.POLICY_HOST
    assert isinstance(v.use(tok, "batch1", ANN), str)
    rec = v.record()
    assert rec.kind == "vault" and rec.attributes["storage_gb"] == 100


def _boom(host: str):
    raise RuntimeError("owner bug")


@pytest.mark.parametrize(
    "answer, admitted",
    [
        pytest.param(lambda host: ADMIT, True, id="admit"),
        pytest.param(lambda host: False, False, id="bare-false"),
        pytest.param(lambda host: None, False, id="forgot-to-return"),
        pytest.param(_boom, False, id="hook-raises"),
    ],
)
def test_host_veto_answer_is_read_safely(answer, admitted: bool) -> None:
    v = vault()
    v.admit_host = answer  # type: ignore[method-assign]
    tok = v.make_reservation(req())
    out = v.use(tok, "batch1", ANN)
    assert isinstance(out, str) == admitted, out
    if not admitted:
        assert out.code == codes.POLICY and out.by == "v1" and v.list_uses() == {}
        assert v.make_reservation(req("r2", gb=1), for_host="batch1").code == codes.POLICY


@pytest.mark.parametrize(
    "spoil, code",
    [
        pytest.param(lambda v, t, c: (v.cancel_reservation(t), t)[1], codes.TOKEN_CANCELLED, id="cancelled"),
        pytest.param(lambda v, t, c: (setattr(c, "t", 5), t)[1], codes.TOKEN_EXPIRED, id="expired"),
        pytest.param(lambda v, t, c: VaultObject("v2", Resources(storage_gb=100), clock=c).make_reservation(
            req().model_copy(update={"resource": "v2"})), codes.TOKEN_WRONG_ISSUER, id="other-vault"),
        pytest.param(lambda v, t, c: t.model_copy(update={"expires_at": 1e12}), codes.TOKEN_FORGED, id="altered-expiry"),
    ],
)
def test_vault_token_rules(spoil, code: str) -> None:
    clock = Clock()
    v = vault(clock)
    tok = v.make_reservation(req())
    out = v.use(spoil(v, tok, clock), "batch1", ANN)
    assert isinstance(out, Refusal) and out.code == code, out


# --- objects' persistent state: bytes accounted == bytes stored ----------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from legionrm.objstate import GB, DirectoryShelf, MemoryShelf  # noqa: E402


def small_vault(shelf=None, **kw) -> VaultObject:
    return VaultObject("v1", Resources(storage_gb=1000 / GB), serves=("batch*",), clock=Clock(), shelf=shelf, **kw)


@pytest.mark.parametrize("size, host, quota, code", [
    (400, "batch1", None, None),
    (1001, "batch1", None, codes.CAPACITY),
    (10, "gpu7", None, codes.VAULT_INCOMPATIBLE),
    (400, "batch1", 300 / GB, codes.STATE_QUOTA),
    (300, "batch1", 300 / GB, None),
], ids=["fits", "over-capacity", "host-not-served", "over-quota", "at-quota"])
def test_put_state_checks_pairing_quota_and_capacity(size, host, quota, code) -> None:
    v = small_vault(quota_gb=quota)
    got = v.put_state("obj1", b"x" * size, "ann", host)
    if code is None:
        assert got == size and v.stored() == {"obj1": size} and v.get_state("obj1") == b"x" * size
    else:
        assert isinstance(got, Refusal) and got.code == code and v.stored() == {}


def test_stored_bytes_take_space_from_reservations_and_come_back() -> None:
    v = small_vault()
    assert v.put_state("obj1", b"x" * 600, "ann") == 600
    r = ReservationRequest(request_id="r", resource="v1", holder=ANN, resources=Resources(storage_gb=500 / GB))
    assert v.make_reservation(r).code == codes.CAPACITY  # 600 stored + 500 > 1000
    assert v.dynamic_attributes()["stored_bytes"] == 600
    assert v.delete_state("obj1") is True and v.delete_state("obj1") is False
    assert isinstance(v.make_reservation(r), ReservationToken)
    assert v.get_state("obj1").code == codes.STATE_UNKNOWN


def test_replacing_a_state_accounts_only_the_new_bytes_and_a_refused_one_keeps_the_old() -> None:
    v = small_vault()
    v.put_state("obj1", b"a" * 700, "ann")
    assert v.put_state("obj1", b"b" * 900, "ann") == 900  # 900 fits once the old 700 are given back
    assert v.put_state("obj1", b"c" * 1200, "ann").code == codes.CAPACITY
    assert v.stored() == {"obj1": 900} and v.get_state("obj1") == b"b" * 900


def test_a_vault_books_the_state_it_finds_in_its_directory(tmp_path) -> None:
    small_vault(DirectoryShelf(tmp_path)).put_state("obj1", b"x" * 300, "ann")
    again = small_vault(DirectoryShelf(tmp_path))
    assert again.stored() == {"obj1": 300} and again.state_owner("obj1") == "?"
    assert again.put_state("obj2", b"y" * 800, "bob").code == codes.CAPACITY


@pytest.mark.parametrize("oid, data", [("../etc", b"x"), ("ok", "text")], ids=["bad-id", "not-bytes"])
def test_bad_state_puts_are_invalid(oid, data) -> None:
    assert small_vault().put_state(oid, data, "ann").code == codes.STATE_INVALID


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["o1", "o2", "o3"]), st.sampled_from(["ann", "bob"]),
                          st.integers(0, 700) | st.none()), max_size=25))
def test_bytes_accounted_equal_bytes_stored(ops) -> None:
    shelf = MemoryShelf()
    v = small_vault(shelf, quota_gb=800 / GB)
    for oid, user, size in ops:
        if size is None:
            v.delete_state(oid)
        else:
            v.put_state(oid, b"z" * size, user)
        held = sum(shelf.list().values())
        assert v.stored() == shelf.list()
        assert v.dynamic_attributes()["stored_bytes"] == held
        assert abs(float(v.calendar.usage_at(v.now())[0]) * GB - held) < 1e-3  # the calendar books exactly them
        assert held <= 1000
        for who in ("ann", "bob"):
            assert sum(n for o, n in v.stored().items() if v.state_owner(o) == who) <= 800
