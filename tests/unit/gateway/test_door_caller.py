"""The door's Caller, made once per user and shared, is the one it made afresh for every call.

``_caller`` keeps a user's :class:`Caller` (name, roles, groups as the registry holds them) and
hands the same frozen object to their later calls; with ``--as`` it checks and builds one each
time.  Held here equal to the plain spelling (a new ``Caller`` per call, the ``--as`` checks
first) on a table of callers, over a sequence that changes a user's roles and groups between
calls (a cached Caller must never outlive the registry entry it was made of).
"""

from __future__ import annotations

from typing import Any

import pytest
from multidict import CIMultiDict

from legionrm import codes
from legionrm.auth.errors import AuthRefusedError
from legionrm.auth.principals import Principal
from legionrm.gateway.door import _caller
from legionrm.models.api import AS_HEADER, Caller

KEY = "A" * 43 + "="


def user(name: str, roles: tuple[str, ...] = ("user",), groups: tuple[str, ...] = ()) -> Principal:
    return Principal(name=name, public_key=KEY, roles=roles, groups=groups)


class Principals:
    """The registry the ``--as`` check asks (``principal(name)``)."""

    def __init__(self, *ps: Principal) -> None:
        self.by_name = {p.name: p for p in ps}
        self.by_name["host:h1"] = Principal(name="host:h1", kind="host", public_key=KEY)

    def principal(self, name: str) -> Principal | None:
        return self.by_name.get(name)


class Req:
    def __init__(self, as_user: str | None) -> None:
        self.headers = CIMultiDict({AS_HEADER: as_user} if as_user is not None else {})


def plain(request: Req, principal: Principal, principals: Principals) -> Caller:
    """The door's Caller as it was made before it was kept per user: afresh, every call."""
    as_user = request.headers.get(AS_HEADER)
    if as_user:
        if "admin" not in principal.roles:
            raise AuthRefusedError(codes.AUTH_FORBIDDEN, f"--as {as_user}: only an administrator acts as another user; "
                                   f"{principal.name!r} is not one", "gateway")
        target = principals.principal(as_user)
        if target is None or not target.is_user:
            raise AuthRefusedError(codes.AUTH_UNKNOWN_USER, f"--as {as_user}: no such user", "gateway")
    return Caller(user=principal.name, roles=principal.roles, groups=principal.groups, acting_as=as_user or None)


ANN, BOB, ROOT = user("ann"), user("bob", groups=("genomics",)), user("root", roles=("admin", "user"))
# each step: (who signs, the --as header or None); the principal of a name may change from one step to the next
STEPS: list[tuple[Principal, str | None]] = [
    (ANN, None), (ANN, None), (BOB, None), (ROOT, None), (ANN, ""),
    (ROOT, "ann"), (ROOT, "bob"), (ROOT, "nobody"), (ROOT, "host:h1"), (ANN, "bob"), (BOB, "bob"),
    (user("ann", roles=("admin", "user")), None),  # ann made an administrator: her next call says so
    (user("ann", roles=("admin", "user")), "bob"),
    (user("ann", groups=("physics",)), None),      # and then a plain user of another group
    (ANN, None), (ROOT, None),
]


def answer(make: Any, request: Req, principal: Principal, principals: Principals) -> tuple[str, str, str] | Caller:
    try:
        return make(request, principal, principals)
    except AuthRefusedError as exc:
        return ("refused", exc.code, str(exc))


@pytest.mark.parametrize("rounds", [1, 3], ids=["once", "three-times"])
def test_the_kept_caller_is_the_plain_one(rounds: int) -> None:
    principals = Principals(ANN, BOB, ROOT)
    callers: dict[Any, Caller] = {}
    kept = lambda r, p, ps: _caller(r, p, ps, callers)  # noqa: E731
    for _ in range(rounds):
        for who, as_user in STEPS:
            got, want = answer(kept, Req(as_user), who, principals), answer(plain, Req(as_user), who, principals)
            assert got == want, (who.name, who.roles, as_user)
            if isinstance(want, Caller):  # the same bytes in /whoami, and the same fields
                assert got.model_dump_json() == want.model_dump_json()
                assert type(got) is Caller and got.model_fields_set == want.model_fields_set


def test_a_user_s_calls_share_one_caller_until_their_entry_changes() -> None:
    callers: dict[Any, Caller] = {}
    principals = Principals(ANN)
    first = _caller(Req(None), ANN, principals, callers)
    assert _caller(Req(None), user("ann"), principals, callers) is first
    assert _caller(Req(None), user("ann", groups=("g",)), principals, callers) is not first
