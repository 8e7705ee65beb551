"""The Collection core: membership, heartbeats, staleness, access, hierarchy."""

from __future__ import annotations

import pytest

from legionrm.collection.collection import Collection
from legionrm.errors import CollectionError, MILSyntaxError, UnknownResourceError
from legionrm.models import AccessPolicy, Identity
from legionrm.testing import FakeClock, host, vault


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def coll(clock: FakeClock) -> Collection:
    c = Collection(heartbeat_interval_s=5, stale_after=3, clock=clock)
    c.join(host("a1", cpus=8, arch="x86_64", memory_gb=32.0))
    c.join(host("a2", cpus=16, arch="x86_64", memory_gb=64.0))
    c.join(host("s1", cpus=4, arch="sparc", access=AccessPolicy(allow_users=("alice",))))
    c.join(host("g1", cpus=24, arch="x86_64", gpus=4, access=AccessPolicy(deny_users=("visitor",))))
    c.join(host("d1", cpus=4, arch="x86_64", access=AccessPolicy(allow_classes=("Shell",))))
    c.join(vault("v1", storage_gb=1000))
    return c


@pytest.mark.parametrize(
    "query, expected",
    [
        ("true", ["a1", "a2", "d1", "g1", "s1", "v1"]),
        ("$cpus >= 16", ["a2", "g1"]),
        ('$arch == "sparc"', ["s1"]),
        ('$kind == "vault"', ["v1"]),
        ('$name == "a1"', ["a1"]),
        ("$gpus > 0", ["g1"]),  # undefined on the others: not a match
        ("not ($gpus > 0)", []),  # undefined stays unknown under not
        ("$memory_gb / $cpus >= 4", ["a1", "a2"]),
    ],
    ids=["all", "cpus", "string-eq", "kind", "name", "undefined-not-matched", "not-undefined", "arith"],
)
def test_query_answers(coll: Collection, query: str, expected: list[str]) -> None:
    assert coll.query(query).names == expected


@pytest.mark.parametrize(
    "caller, expected",
    [
        (Identity(user="alice"), ["a1", "a2", "g1", "s1", "v1"]),
        (Identity(user="bob"), ["a1", "a2", "g1", "v1"]),
        (Identity(user="visitor"), ["a1", "a2", "v1"]),
        (Identity(user="bob", class_name="Shell"), ["a1", "a2", "d1", "g1", "v1"]),
        (Identity(user="alice", class_name="Shell"), ["a1", "a2", "d1", "g1", "s1", "v1"]),
    ],
    ids=["allowed-user", "other-user", "denied-user", "allowed-class", "user-and-class"],
)
def test_query_with_caller_returns_only_resources_that_accept_them(coll: Collection, caller, expected) -> None:
    assert coll.query("true", caller).names == expected


def test_reserved_bookkeeping_never_leaks_into_answers(coll: Collection) -> None:
    rec = coll.query('$name == "a1"').records[0]
    assert not any(k.startswith("@") for k in rec.attributes)
    assert rec.attributes == {"name": "a1", "kind": "host", "cpus": 8, "arch": "x86_64", "memory_gb": 32.0}
    assert coll.snapshot().attribute_names() == ["arch", "cpus", "gpus", "kind", "memory_gb", "name", "storage_gb"]
    assert not any(k.startswith("@") for k in coll.retrieve_all_attributes("a1"))


# Queries naming the bookkeeping the Collection used to keep under '_' names:
# they are ordinary (unexported) attributes now, undefined on every resource.
@pytest.mark.parametrize(
    "query", ["$_off == false", "$_access >= 0", "$_heartbeat > 0", "$_expires > 0"],
    ids=["off", "access", "heartbeat", "expires"],
)
def test_queries_cannot_see_bookkeeping(coll: Collection, query: str) -> None:
    assert coll.query(query).names == []


def test_owner_cannot_export_reserved_attributes(coll: Collection) -> None:
    with pytest.raises(CollectionError, match="reserved"):
        coll.join(host("x", **{"@access": 0}))
    with pytest.raises(CollectionError, match="reserved"):
        coll.update("a1", {"@off": True})


# (id, attributes of the joining host, query, matches): every name MIL can
# write ([A-Za-z_][A-Za-z0-9_]*) is the owner's to export.
UNDERSCORE_ATTRS = [
    ("leading-underscore", {"_site": "uva"}, '$_site == "uva"', True),
    ("double-underscore", {"__x": 1}, "$__x == 1", True),
    ("old-reserved-name", {"_off": True}, "$_off", True),
    ("old-reserved-access", {"_access": 3}, "$_access == 3", True),
]


@pytest.mark.parametrize(
    "attrs,query,expected", [c[1:] for c in UNDERSCORE_ATTRS], ids=[c[0] for c in UNDERSCORE_ATTRS]
)
def test_underscore_attributes_are_exported_and_queried(coll: Collection, attrs: dict, query: str, expected: bool) -> None:
    coll.join(host("u1", **attrs))
    assert (coll.query(query).names == ["u1"]) is expected
    assert coll.query('$name == "u1"').names == ["u1"]  # still available: bookkeeping untouched
    assert coll.retrieve_all_attributes("u1") == {"name": "u1", "kind": "host", **attrs}


def test_heartbeat_none_withdraws_an_attribute(coll: Collection) -> None:
    coll.update("a1", {"load": 0.5})
    coll.update("a1", {"load": None})
    assert "load" not in coll.retrieve_all_attributes("a1")
    assert coll.query("$load < 1").names == []


# (id, caller given as a bare user name, expected): the same as Identity(user=...)
STRING_CALLERS = [
    ("allowed-user", "alice", ["a1", "a2", "g1", "s1", "v1"]),
    ("denied-user", "visitor", ["a1", "a2", "v1"]),
]


@pytest.mark.parametrize("caller,expected", [c[1:] for c in STRING_CALLERS], ids=[c[0] for c in STRING_CALLERS])
def test_caller_may_be_a_user_name(coll: Collection, caller: str, expected: list[str]) -> None:
    assert coll.query("true", caller).names == expected
    assert coll.query("true", caller).names == coll.query("true", Identity(user=caller)).names


def test_heartbeat_merges_partial_attributes(coll: Collection) -> None:
    coll.update("a1", {"load": 0.5, "cpus": 6})
    attrs = coll.retrieve_all_attributes("a1")
    assert attrs["load"] == 0.5 and attrs["cpus"] == 6 and attrs["arch"] == "x86_64"
    assert coll.query("$load < 1").names == ["a1"]


def test_rejoin_replaces_the_record(coll: Collection) -> None:
    coll.update("a1", {"load": 0.5})
    coll.join(host("a1", cpus=2))
    assert coll.retrieve_all_attributes("a1") == {"name": "a1", "kind": "host", "cpus": 2}


def test_stale_resources_are_left_out_unless_asked(coll: Collection, clock: FakeClock) -> None:
    clock.advance(14)
    coll.update("a1")  # only a1 keeps beating
    clock.advance(2)  # others now 16 s silent > 3 intervals of 5 s
    assert coll.query("true").names == ["a1"]
    assert len(coll.query("true", include_unavailable=True).names) == 6
    assert coll.record("a2").available is False
    coll.update("a2")
    assert coll.query("true").names == ["a1", "a2"]


def test_vary_off_and_on(coll: Collection) -> None:
    coll.vary_off("a2")
    assert "a2" not in coll.query("true").names
    assert coll.record("a2").available is False
    coll.update("a2")  # a heartbeat does not undo an operator's vary_off
    assert "a2" not in coll.query("true").names
    coll.vary_on("a2")
    assert "a2" in coll.query("true").names


# (id, what happens after the operator's vary_off, still out): only vary_on and
# leave undo it; a heartbeat, a re-join and a sub-collection poll do not.
VARY_OFF_STICKS = [
    ("heartbeat", lambda c, top: c.update("s1", {"load": 0.1}), True),
    ("rejoin", lambda c, top: c.join(host("s1", cpus=8)), True),
    ("subcollection-poll", lambda c, top: top.poll_subcollections(force=True), True),
    ("vary-on", lambda c, top: c.vary_on("s1"), False),
    ("leave-and-rejoin", lambda c, top: (c.leave("s1"), c.join(host("s1", cpus=8))), False),
]


@pytest.mark.parametrize("event,still_off", [c[1:] for c in VARY_OFF_STICKS], ids=[c[0] for c in VARY_OFF_STICKS])
def test_vary_off_holds_until_vary_on_or_leave(clock: FakeClock, event, still_off: bool) -> None:
    # the same events on a directly joined resource and on one served from a sub-collection
    site = Collection(clock=clock, name="site")
    site.join(host("s1", cpus=8))
    top = Collection(clock=clock, name="top")
    top.add_subcollection("site", site)
    top.poll_subcollections()
    direct = Collection(clock=clock, name="direct")
    direct.join(host("s1", cpus=8))
    for c in (top, direct):
        c.vary_off("s1")
        event(c, top)
        assert (c.query("true").names == []) is still_off, c.name
        assert c.record("s1").available is not still_off


def test_vary_on_does_not_revive_what_the_subcollection_reports_unavailable(clock: FakeClock) -> None:
    site = Collection(clock=clock, name="site")
    site.join(host("s1", cpus=8))
    site.vary_off("s1")
    top = Collection(clock=clock, name="top")
    top.add_subcollection("site", site)
    top.poll_subcollections()
    top.vary_on("s1")
    assert top.query("true").names == []
    site.vary_on("s1")
    top.poll_subcollections(force=True)
    assert top.query("true").names == ["s1"]


# (id, the refused change): the store refuses the value, and the Collection
# must keep no trace of it (it used to keep the record while the store did not).
REFUSED_CHANGES = [
    ("heartbeat-list-value", lambda c: c.update("a1", {"x": [1, 2]})),
    ("heartbeat-int-beyond-64-bits", lambda c: c.update("a1", {"cpus": 2**70})),
    ("heartbeat-empty-name", lambda c: c.update("a1", {"": 1})),
    ("rejoin-int-beyond-64-bits", lambda c: c.join(host("a1", cpus=2**70))),
    ("join-int-beyond-64-bits", lambda c: c.join(host("new", cpus=2**70))),
]


@pytest.mark.parametrize("change", [c[1] for c in REFUSED_CHANGES], ids=[c[0] for c in REFUSED_CHANGES])
def test_a_refused_change_leaves_no_trace(coll: Collection, change) -> None:
    before = {n: coll.retrieve_all_attributes(n) for n in coll.names()}
    with pytest.raises(CollectionError):
        change(coll)
    assert {n: coll.retrieve_all_attributes(n) for n in coll.names()} == before
    assert coll.query("true", include_unavailable=True).names == sorted(before)


def test_leave_is_idempotent_and_unknown_names_are_clear_errors(coll: Collection) -> None:
    assert coll.leave("a1") is True
    assert coll.leave("a1") is False
    assert "a1" not in coll.query("true").names
    with pytest.raises(UnknownResourceError, match="a1"):
        coll.update("a1", {"load": 1})
    with pytest.raises(UnknownResourceError, match="nope"):
        coll.retrieve_all_attributes("nope")


def test_bad_query_raises_before_anything(coll: Collection) -> None:
    with pytest.raises(MILSyntaxError) as err:
        coll.query("$cpus >= ")
    assert err.value.line == 1 and "^" in str(err.value)


def test_snapshot_is_immutable(coll: Collection) -> None:
    snap = coll.snapshot()
    coll.update("a1", {"cpus": 64})
    coll.leave("a2")
    coll.join(host("n1", cpus=99))
    assert snap.names("$cpus >= 16") == ["a2", "g1"]
    assert coll.snapshot().names("$cpus >= 16") == ["a1", "g1", "n1"]


def test_subcollections_are_served_as_our_own(clock: FakeClock) -> None:
    site_a = Collection(clock=clock, name="site-a")
    site_a.join(host("a1", cpus=8, site="a"))
    site_a.join(host("a2", cpus=2, site="a"))
    site_a.join(host("a3", cpus=32, site="a"))
    top = Collection(clock=clock, name="top")
    top.join(host("t1", cpus=4))
    top.add_subcollection("site-a", site_a, query="$cpus >= 4", interval_s=10)
    assert top.poll_subcollections() == {"site-a": 2}
    assert top.query("true").names == ["a1", "a3", "t1"]
    # not due yet: changes at the sub are not seen
    site_a.leave("a3")
    assert top.poll_subcollections() == {}
    clock.advance(10)
    assert top.poll_subcollections() == {"site-a": 1}
    assert top.query("true").names == ["a1", "t1"]
    top.remove_subcollection("site-a")
    assert top.query("true").names == ["t1"]


def test_a_failing_subcollection_keeps_the_last_answer(clock: FakeClock) -> None:
    class Broken:
        def query(self, *a, **k):
            raise RuntimeError("down")

    top = Collection(clock=clock)
    top.add_subcollection("broken", Broken())
    assert top.poll_subcollections() == {}
    with pytest.raises(MILSyntaxError):
        top.add_subcollection("bad", Broken(), query="((")


# (id, poll interval s, seconds after the last good poll, still served): a
# healthy sub-collection's resources stay available between polls however
# long the interval; once polls fail they go stale after stale_after (3) polls.
SUB_STALENESS = [
    ("long-interval-between-polls", 30.0, 29.0, True),
    ("long-interval-two-missed", 30.0, 89.0, True),
    ("long-interval-three-missed", 30.0, 91.0, False),
    ("short-interval-own-window", 2.0, 14.0, True),  # never less than our own 15 s window
    ("short-interval-stale", 2.0, 16.0, False),
]


@pytest.mark.parametrize(
    "interval,after,served", [c[1:] for c in SUB_STALENESS], ids=[c[0] for c in SUB_STALENESS]
)
def test_subcollection_resources_live_by_the_poll_interval(
    clock: FakeClock, interval: float, after: float, served: bool
) -> None:
    site = Collection(clock=clock, name="site")
    site.join(host("s1", cpus=8))
    top = Collection(clock=clock, name="top")  # 3 intervals of 5 s
    top.add_subcollection("site", site, interval_s=interval)
    assert top.poll_subcollections() == {"site": 1}

    class Down:
        def query(self, *a, **k):
            raise RuntimeError("down")

    top._subs["site"].source = Down()  # polls fail from now on
    t = 0.0
    while t < after:
        step = min(interval, after - t)
        clock.advance(step)
        t += step
        top.poll_subcollections()
    assert (top.query("true").names == ["s1"]) is served
    assert top.record("s1").available is served


def test_healthy_subcollection_with_default_interval_is_always_served(clock: FakeClock) -> None:
    site = Collection(clock=clock, name="site")
    site.join(host("s1", cpus=8))
    top = Collection(clock=clock, name="top")
    top.add_subcollection("site", site)  # default: every 30 s, longer than our 15 s window
    top.poll_subcollections()
    for _ in range(12):
        clock.advance(5)
        site.update("s1")
        top.poll_subcollections()
        assert top.query("true").names == ["s1"], clock.now


def test_resource_unavailable_at_the_subcollection_is_unavailable_here(clock: FakeClock) -> None:
    site = Collection(clock=clock, name="site")
    site.join(host("s1", cpus=8))
    site.join(host("s2", cpus=8))
    top = Collection(clock=clock, name="top")
    top.add_subcollection("site", site, interval_s=10)
    site.vary_off("s2")
    top.poll_subcollections()
    assert top.query("true").names == ["s1"]
    assert top.query("true", include_unavailable=True).names == ["s1", "s2"]
    site.vary_on("s2")
    clock.advance(10)
    top.poll_subcollections()
    assert top.query("true").names == ["s1", "s2"]
