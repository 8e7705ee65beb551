"""The home is the service's (issue 24, item 7): what legionrm writes under
its home is 0600 (files) or 0700 (directories), whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from legionrm import homefs
from legionrm.auth.guard import ensure_home
from legionrm.auth.registry import Registry
from legionrm.state.requests import RequestStore


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest usual umask (a shared account's): legionrm must not rely on the caller's."""
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_private_dir_makes_every_missing_parent_0700(tmp_path, open_umask) -> None:
    made = homefs.private_dir(tmp_path / "a" / "b" / "c")
    assert [mode(p) for p in (made, made.parent, made.parent.parent)] == [0o700] * 3


def test_an_existing_shared_directory_is_left_alone(tmp_path, open_umask) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)  # as /tmp
    homefs.private_file(shared / "x.db")
    assert mode(shared) == 0o1777 and mode(shared / "x.db") == 0o600
    assert homefs.tighten(shared) == 0 and mode(shared) == 0o1777


def test_write_private_replaces_a_readable_file_with_a_0600_one(tmp_path, open_umask) -> None:
    target = tmp_path / "home" / "up.json"
    target.parent.mkdir()
    target.write_text("old")
    os.chmod(target, 0o644)
    homefs.write_private(target, '{"key": "secret"}')
    assert target.read_text() == '{"key": "secret"}' and mode(target) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["up.json"]  # no temporary file left


def test_open_private_appends_to_a_0600_log(tmp_path, open_umask) -> None:
    log = tmp_path / "home" / "logs" / "up.log"
    for line in ("one\n", "two\n"):
        with homefs.open_private(log, "a") as f:
            f.write(line)
    assert log.read_text() == "one\ntwo\n" and mode(log) == 0o600 and mode(log.parent) == 0o700


def test_a_state_store_and_sqlites_wal_and_shm_files_are_0600(tmp_path, open_umask) -> None:
    store = RequestStore(tmp_path / "home" / "state" / "scheduler.db")
    try:
        names = {p.name: mode(p) for p in (tmp_path / "home" / "state").iterdir()}
        assert {"scheduler.db", "scheduler.db-wal", "scheduler.db-shm"} <= set(names), names
        assert set(names.values()) == {0o600}, names
    finally:
        store.close()


def test_the_registry_and_its_keys_are_private(tmp_path, open_umask) -> None:
    home = tmp_path / "home"
    ensure_home(home, operator="ops")
    Registry(home / "auth").add_agent("host", "h1")
    assert list(homefs.exposed(home)) == []


def test_exposed_finds_what_others_may_read_but_not_what_is_handed_out(tmp_path) -> None:
    home = tmp_path / "home"
    users = homefs.private_dir(home / "auth" / "users")
    (users / "ann.credentials").write_text("handed out")
    os.chmod(users / "ann.credentials", 0o644)
    (home / "up.json").write_text("{}")
    os.chmod(home / "up.json", 0o644)
    logs = home / "logs"
    logs.mkdir(mode=0o755)
    os.chmod(logs, 0o755)
    assert sorted((p.name, m) for p, m in homefs.exposed(home)) == [("logs", 0o755), ("up.json", 0o644)]
    assert homefs.tighten(home) == 2
    assert list(homefs.exposed(home)) == [] and mode(logs) == 0o700 and mode(home / "up.json") == 0o600
    assert mode(users / "ann.credentials") == 0o644  # the administrator's to hand out, as they chose


def test_private_umask_makes_what_a_library_creates_private(tmp_path) -> None:
    old = homefs.private_umask()
    try:
        (tmp_path / "made-by-a-library").write_text("x")
        (tmp_path / "dir-by-a-library").mkdir()
    finally:
        os.umask(old)
    assert mode(tmp_path / "made-by-a-library") == 0o600 and mode(tmp_path / "dir-by-a-library") == 0o700
