"""Who may do what: users on their own things, owners on their hosts, admins on the system."""

from __future__ import annotations

import pytest

from legionrm import codes
from legionrm.auth.proof import VerifiedCaller
from legionrm.auth.roles import (
    Allowed,
    may_act_on,
    may_change_policy,
    may_write_record,
    require_admin,
)
from legionrm.models import Refusal

ANN = VerifiedCaller(name="ann", kind="user", roles=("user",))
OWNER = VerifiedCaller(name="olga", kind="user", roles=("owner", "user"), owns=("h1",))
ADMIN = VerifiedCaller(name="root", kind="user", roles=("admin", "user"))
HOST = VerifiedCaller(name="host:h1", kind="host")
VAULT = VerifiedCaller(name="vault:h1", kind="vault")
SCHED = VerifiedCaller(name="scheduler:main", kind="scheduler")


def code_of(out: Allowed | Refusal) -> str:
    assert isinstance(out, (Allowed, Refusal))
    return "ok" if out else out.code


CASES = [
    ("own-request", lambda: may_act_on(ANN, "ann"), "ok"),
    ("someone-elses-request", lambda: may_act_on(ANN, "bob"), codes.AUTH_NOT_OWNER),
    ("admin-not-by-default", lambda: may_act_on(ADMIN, "bob"), codes.AUTH_NOT_OWNER),
    ("admin-where-allowed", lambda: may_act_on(ADMIN, "bob", admin_may=True), "ok"),
    ("user-not-admin-even-if-allowed", lambda: may_act_on(ANN, "bob", admin_may=True), codes.AUTH_NOT_OWNER),
    ("agent-named-like-user", lambda: may_act_on(VerifiedCaller(name="host:ann", kind="host"), "host:ann"), codes.AUTH_NOT_OWNER),
    ("admin-adds-users", lambda: require_admin(ADMIN, "add_user"), "ok"),
    ("user-adds-users", lambda: require_admin(ANN, "add_user"), codes.AUTH_FORBIDDEN),
    ("owner-stops-system", lambda: require_admin(OWNER, "stop_system"), codes.AUTH_FORBIDDEN),
    ("agent-is-never-admin", lambda: require_admin(VerifiedCaller(name="scheduler:x", kind="scheduler", roles=("admin",))), codes.AUTH_FORBIDDEN),
    ("owner-own-host", lambda: may_change_policy(OWNER, "h1"), "ok"),
    ("owner-other-host", lambda: may_change_policy(OWNER, "h2"), codes.AUTH_NOT_OWNER),
    ("user-any-host", lambda: may_change_policy(ANN, "h1"), codes.AUTH_FORBIDDEN),
    ("admin-is-not-an-owner", lambda: may_change_policy(ADMIN, "h1"), codes.AUTH_FORBIDDEN),
    ("owns-without-owner-role", lambda: may_change_policy(VerifiedCaller(name="x", kind="user", owns=("h1",)), "h1"), codes.AUTH_FORBIDDEN),
    ("host-writes-own-record", lambda: may_write_record(HOST, "h1"), "ok"),
    ("host-writes-own-record-of-kind", lambda: may_write_record(HOST, "h1", "host"), "ok"),
    ("host-writes-other-record", lambda: may_write_record(HOST, "h2"), codes.AUTH_WRONG_RESOURCE),
    ("vault-writes-host-record-same-name", lambda: may_write_record(VAULT, "h1", "host"), codes.AUTH_WRONG_RESOURCE),
    ("user-writes-record", lambda: may_write_record(VerifiedCaller(name="h1", kind="user"), "h1"), codes.AUTH_WRONG_RESOURCE),
    ("admin-writes-record", lambda: may_write_record(ADMIN, "h1"), codes.AUTH_WRONG_RESOURCE),
    ("scheduler-writes-record", lambda: may_write_record(SCHED, "main"), codes.AUTH_WRONG_RESOURCE),
]


@pytest.mark.parametrize("check, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_roles(check, want: str) -> None:
    out = check()
    assert code_of(out) == want
    if isinstance(out, Refusal):
        assert out.by == "auth" and out.reason


def test_every_role_code_has_a_case() -> None:
    assert set(codes.ROLE_CODES) <= {c[-1] for c in CASES}


def test_refusal_names_the_action() -> None:
    assert "add user" in require_admin(ANN, "add_user").reason
