"""The registry: users, groups and roles from one file; key files per user."""

from __future__ import annotations

import json
import os
import stat

import pytest

from legionrm.auth import keys
from legionrm.auth.errors import InvalidNameError, RegistryError, UnknownPrincipalError
from legionrm.auth.registry import Registry


def test_add_user_writes_a_0600_key_that_matches_the_registry(tmp_path) -> None:
    reg = Registry(tmp_path)
    cred = reg.add_user("ann", groups=["genomics", "physics"], roles=["owner"], owns=["h1"])
    path = reg.key_path("ann")
    assert path == tmp_path / "users" / "ann.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "users").st_mode) == 0o700
    loaded = keys.Credential.load("ann", path)
    assert loaded.public_key_b64 == cred.public_key_b64 == reg.user("ann").public_key
    assert reg.user("ann").roles == ("owner", "user")  # every user has the user role


def test_registry_survives_reload_from_disk(tmp_path) -> None:
    reg = Registry(tmp_path)
    reg.add_user("ann", groups=["genomics"], roles=["admin"])
    reg.add_user("bob")
    host = reg.add_agent("host", "node-01.example")
    again = Registry(tmp_path)
    assert again.list_users() == reg.list_users()
    assert [u.name for u in again.list_users()] == ["ann", "bob"]
    assert again.groups_of("ann") == ("genomics",) and again.roles_of("ann") == ("admin", "user")
    assert again.principal("host:node-01.example").public_key == host.public_key_b64
    assert "PRIVATE" not in (tmp_path / "registry.json").read_text()  # no secret in the registry


def test_two_registry_objects_on_one_home_both_land(tmp_path) -> None:
    a, b = Registry(tmp_path), Registry(tmp_path)
    a.add_user("ann")
    b.add_user("bob")  # b reloads under the lock before changing: ann is not lost
    assert [u.name for u in Registry(tmp_path).list_users()] == ["ann", "bob"]
    with pytest.raises(RegistryError, match="already exists"):
        b.add_user("ann")


def test_remove_user_deletes_the_key_file(tmp_path) -> None:
    reg = Registry(tmp_path)
    reg.add_user("ann")
    reg.remove_user("ann")
    assert not reg.key_path("ann").exists() and reg.principal("ann") is None
    with pytest.raises(UnknownPrincipalError, match="no user 'ann'"):
        reg.remove_user("ann")
    reg.add_user("ann")  # the name is free again, with a new key


def test_update_user_keeps_the_key(tmp_path) -> None:
    reg = Registry(tmp_path)
    cred = reg.add_user("ann", groups=["a"])
    out = reg.update_user("ann", groups=["b", "c"], roles=["owner"], owns=["h2"])
    assert (out.groups, out.roles, out.owns, out.public_key) == (("b", "c"), ("owner", "user"), ("h2",), cred.public_key_b64)
    assert Registry(tmp_path).groups_of("ann") == ("b", "c")


def test_add_agent_replaces_the_key_at_each_boot() -> None:
    reg = Registry(None)
    first, second = reg.add_agent("host", "h1"), reg.add_agent("host", "h1")
    assert first.name == "host:h1" and reg.principal("host:h1").public_key == second.public_key_b64 != first.public_key_b64
    assert reg.list_users() == [] and [a.name for a in reg.list_agents()] == ["host:h1"]
    assert reg.remove_agent("host", "h1") and not reg.remove_agent("host", "h1")


def test_user_and_agent_names_cannot_collide() -> None:
    reg = Registry(None)
    reg.add_user("h1")
    reg.add_agent("host", "h1")
    assert reg.principal("h1").kind == "user" and reg.principal("host:h1").kind == "host"
    with pytest.raises(UnknownPrincipalError):
        reg.user("host:h1")  # an agent is not a user


def test_unknown_user_lookups() -> None:
    reg = Registry(None)
    with pytest.raises(UnknownPrincipalError, match="no user 'zed'"):
        reg.groups_of("zed")
    assert reg.principal("zed") is None and reg.principal(123) is None  # type: ignore[arg-type]


BAD = [
    ("empty-name", {"name": ""}, "user name ''"),
    ("slash", {"name": "../etc"}, "user name '../etc'"),
    ("colon", {"name": "host:h1"}, "user name 'host:h1'"),
    ("space", {"name": "ann smith"}, "user name"),
    ("too-long", {"name": "a" * 65}, "at most 64"),
    ("not-text", {"name": 7}, "must be a string"),
    ("bad-group", {"name": "ann", "groups": ["ok", "no/pe"]}, "group name 'no/pe'"),
    ("bad-role", {"name": "ann", "roles": ["root"]}, "role 'root' is not one of user, owner, admin"),
    ("bad-host", {"name": "ann", "owns": ["a b"]}, "host name 'a b'"),
]


@pytest.mark.parametrize("kw, message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_names_are_refused_and_nothing_is_written(tmp_path, kw, message) -> None:
    reg = Registry(tmp_path)
    with pytest.raises(InvalidNameError, match=message.replace("(", r"\(")) as err:
        reg.add_user(**kw)
    assert isinstance(err.value, ValueError)
    assert reg.list_users() == [] and list((tmp_path / "users").iterdir()) == []


def test_a_string_group_is_one_group_not_its_letters() -> None:
    reg = Registry(None)
    reg.add_user("ann", groups="genomics")
    assert reg.groups_of("ann") == ("genomics",)


def test_an_existing_key_file_is_never_overwritten(tmp_path) -> None:
    reg = Registry(tmp_path)
    stray = keys.save_private_key(reg.key_path("ann"), keys.generate_private_key())
    before = stray.read_bytes()
    with pytest.raises(RegistryError, match="already exists"):
        reg.add_user("ann")
    assert stray.read_bytes() == before and reg.principal("ann") is None


CORRUPT = [
    ("not-json", "{"),
    ("wrong-version", json.dumps({"version": 99, "principals": []})),
    ("bad-role", None),
    ("duplicate", None),
]


@pytest.mark.parametrize("case", [c[0] for c in CORRUPT])
def test_a_corrupt_registry_file_is_refused_naming_the_file(tmp_path, case) -> None:
    reg = Registry(tmp_path)
    reg.add_user("ann")
    doc = json.loads((tmp_path / "registry.json").read_text())
    text = dict(CORRUPT)[case]
    if case == "bad-role":
        doc["principals"][0]["roles"] = ["root"]
        text = json.dumps(doc)
    elif case == "duplicate":
        doc["principals"].append(doc["principals"][0])
        text = json.dumps(doc)
    (tmp_path / "registry.json").write_text(text)
    with pytest.raises(RegistryError, match="registry.json: not a valid registry file"):
        Registry(tmp_path)


def test_a_users_os_account_is_kept_checked_and_changed(tmp_path) -> None:
    reg = Registry(tmp_path)
    reg.add_user("ann", os_user="ann_unix")
    reg.add_user("bob")
    again = Registry(tmp_path)
    assert (again.user("ann").os_user, again.user("bob").os_user) == ("ann_unix", None)  # None: the same name
    assert reg.update_user("bob", os_user="bob2").os_user == "bob2"
    for bad in ("Root!", "a b", "x" * 40, ""):
        with pytest.raises((InvalidNameError, ValueError), match="OS account"):
            reg.add_user(f"u{len(bad)}", os_user=bad)
