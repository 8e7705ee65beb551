"""What the planner keeps of a snapshot's table (:func:`base_table`, :func:`query_mask`, :func:`accepts_mask`,
:func:`vaults_of`) is kept while the same table shows the same resources available, and
no longer: a host whose heartbeat expires with no write to the Collection (the table the
same object) leaves every answer at once, as a snapshot read afresh shows it."""

from __future__ import annotations

import pytest

from legionrm.collection.collection import Collection
from legionrm.models import AccessPolicy, Identity
from legionrm.scheduler.planning.snapmasks import accepts_mask, query_mask, vaults_of
from legionrm.scheduler.planning.snaptables import base_table
from legionrm.testing import FakeClock, host, vault

WINDOW = 15.0  # heartbeat 5 s, stale after 3


def collection() -> tuple[Collection, FakeClock]:
    """h1 and v1 joined at 0 (stale after WINDOW), h2 reported at 10: one table from 10 on."""
    clock = FakeClock(0.0)
    c = Collection(heartbeat_interval_s=5, stale_after=3, clock=clock)
    for r in (host("h1", cpus=4), host("h2", cpus=8), vault("v1", storage_gb=10.0)):
        c.join(r)
    clock.advance(10.0)
    c.update("h2", {"load": 0.0})
    return c, clock


def answers(c: Collection) -> tuple[list[str], list[str], list[str]]:
    snap = c.snapshot()
    mask = query_mask(snap, "$cpus >= 4")
    return ([str(n) for n in base_table(snap).names], sorted(str(n) for n in snap.table.names[mask]),
            vaults_of(snap).names)


@pytest.mark.parametrize("at, hosts, vaults", [
    (10.0, ["h1", "h2"], ["v1"]),
    (WINDOW, ["h1", "h2"], ["v1"]),  # (stale only past its window)
    (WINDOW + 1, ["h2"], []),
    (10.0 + WINDOW + 1, [], []),
], ids=["reported", "last-moment", "h1-v1-stale", "all-stale"])
def test_the_answers_kept_follow_staleness(at: float, hosts: list[str], vaults: list[str]) -> None:
    c, clock = collection()
    table = c.snapshot().table
    first = answers(c)  # (kept from 10 on)
    assert first == (["h1", "h2"], ["h1", "h2"], ["v1"])
    clock.now = at
    snap = c.snapshot()
    assert snap.table is table  # no write: the same table, read at another time
    assert answers(c) == (hosts, hosts, vaults)
    fresh = c.snapshot()
    assert sorted(fresh.names('$kind == "host"')) == hosts and fresh.names('$kind == "vault"') == vaults


def test_the_table_is_built_once_while_the_same_hosts_are_available() -> None:
    c, clock = collection()
    built = base_table(c.snapshot())
    clock.advance(3.0)
    assert base_table(c.snapshot()) is built  # the same table, the same hosts available
    clock.now = WINDOW + 1
    assert base_table(c.snapshot()) is not built


@pytest.mark.parametrize("caller, accepted", [
    (Identity(user="alice"), ["h1", "h2"]),
    (Identity(user="bob"), ["h2"]),
    (Identity(user="bob", groups=("staff",)), ["h1", "h2"]),
    (Identity(user="alice", class_name="Shell"), ["h2"]),
], ids=["allowed", "denied", "by-group", "denied-class"])
def test_the_access_answers_kept_are_each_callers_own(caller: Identity, accepted: list[str]) -> None:
    clock = FakeClock(0.0)
    c = Collection(heartbeat_interval_s=5, stale_after=3, clock=clock)
    c.join(host("h1", cpus=4, access=AccessPolicy(allow_users=("alice",), allow_groups=("staff",),
                                                  deny_classes=("Shell",))))
    c.join(host("h2", cpus=4))
    snap = c.snapshot()
    for other in (Identity(user="alice"), Identity(user="bob")):  # (others asked first, on the same table)
        accepts_mask(snap, other)
    got = accepts_mask(c.snapshot(), caller)
    assert sorted(str(n) for n in snap.table.names[got]) == accepted
    assert got.tolist() == snap.accepts(caller).tolist()
