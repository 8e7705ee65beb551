"""Vault objects: storage reservations with the token rules, host pairing, host veto."""

from __future__ import annotations

import pytest

from legionrm.hostobj import codes
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
