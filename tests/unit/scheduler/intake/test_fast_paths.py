"""The group intake's cheaper spellings give what the general ones give: a group's events told at once
(RequestBook.tell_all) as told one by one, a group's claims taken at once (RequestQueue.claim_each) as
one by one, a row rewritten in place (KeyedStore's upsert) as replaced, and a user's request copied once
at the door as it was copied twice."""

from __future__ import annotations

import sqlite3
from contextlib import ExitStack

import pytest

from legionrm.auth import VerifiedCaller
from legionrm.models import Identity, RequestEvent, StatusEvent
from legionrm.scheduler.door import SchedulerDoor
from legionrm.scheduler.entry import Entry
from legionrm.scheduler.requests import RequestBook
from legionrm.state.sqlite import KeyedStore
from legionrm.testing import FakeClock
from tests.unit.scheduler.intake.test_group import held, system
from tests.unit.scheduler.test_lifecycle import req

TOLD = [("a", "pending", "submitted"), ("a", "pending", "queue.held: held"), ("b", "cancelled", "bye"),
        ("c", "pending", "submitted"), ("b", "failed", "x")]


def _book(many: bool, wants: frozenset[str] | None) -> tuple[RequestBook, list[StatusEvent]]:
    heard: list[StatusEvent] = []
    return RequestBook(FakeClock(), listener=heard.append, listener_many=heard.extend if many else None,
                       wants=None if wants is None else (lambda status, instance: status in wants)), heard


@pytest.mark.parametrize("many", [True, False], ids=["to-listener-many", "to-listener"])
@pytest.mark.parametrize("wants", [None, frozenset({"pending"}), frozenset()], ids=["all", "only-pending", "none"])
def test_a_groups_events_told_at_once_are_those_told_one_by_one(many, wants) -> None:
    entries = {rid: Entry(request=req(rid, user=f"u-{rid}"), submitted=1.0) for rid in "abc"}
    one, heard_one = _book(many, wants)
    for rid, status, reason in TOLD:
        one.tell(entries[rid], status, reason)  # type: ignore[arg-type]
    group, heard_group = _book(many, wants)
    group.tell_all([(entries[rid], status, reason) for rid, status, reason in TOLD])  # type: ignore[misc]
    assert [e.model_dump() for e in heard_group] == [e.model_dump() for e in heard_one]
    assert [e.model_fields_set for e in heard_group] == [e.model_fields_set for e in heard_one]
    assert len(heard_group) == sum(1 for _, s, _ in TOLD if wants is None or s in wants)


@pytest.mark.parametrize("many", [True, False], ids=["to-listener-many", "to-listener"])
@pytest.mark.parametrize("wants", [None, frozenset({"started"}), frozenset()], ids=["all", "only-started", "none"])
def test_an_entrys_instance_events_told_at_once_are_those_told_one_by_one(many, wants) -> None:
    entry = Entry(request=req("a", user="u-a"), submitted=1.0)
    told = [("on h1", "a~i1"), ("on h2", "a~i2"), ("on h1", "a~i3")]
    one, heard_one = _book(many, wants)
    for reason, object_id in told:
        one.tell(entry, "started", reason, object_id)
    group, heard_group = _book(many, wants)
    group.tell_many(entry, "started", told)
    assert [e.model_dump() for e in heard_group] == [e.model_dump() for e in heard_one]
    assert [e.model_fields_set for e in heard_group] == [e.model_fields_set for e in heard_one]
    assert len(heard_group) == (0 if wants == frozenset() else len(told))


@pytest.mark.parametrize("ids, held_elsewhere, claimed", [
    (["a", "b", "c"], set(), [True, True, True]),
    (["a", "b", "a"], set(), [True, True, False]),
    (["a", "b", "c"], {"b"}, [True, False, True]),
    (["b", "b"], {"b"}, [False, False]),
    ([], set(), []),
], ids=["all-free", "a-repeated-id", "one-held-by-another-attempt", "held-and-repeated", "none"])
def test_claims_taken_at_once_are_those_taken_one_by_one(tmp_path, ids, held_elsewhere, claimed) -> None:
    queue = system(tmp_path / "r.db").scheduler.queue
    with ExitStack() as others:
        for rid in held_elsewhere:
            assert others.enter_context(queue.claim(rid))
        with ExitStack() as one:
            assert [one.enter_context(queue.claim(rid)) for rid in ids] == claimed
        with ExitStack() as group:
            assert queue.claim_each(ids, group) == claimed
            assert all(queue.attempting(rid) for rid in ids)
        assert {rid for rid in ids if queue.attempting(rid)} == held_elsewhere  # only its own let go
    assert not any(queue.attempting(rid) for rid in ids)


@pytest.mark.parametrize("first, then, delete", [
    ({"a": "1", "b": "2"}, {"c": "3"}, []),
    ({"a": "1", "b": "2"}, {"a": "1-longer-body" * 50, "b": "x"}, []),
    ({"a": "1", "b": "2", "c": "3"}, {"b": "22", "d": "4"}, ["a", "zz"]),
    ({}, {}, ["a"]),
], ids=["new-rows", "rewritten-rows", "mixed-with-deletes", "only-an-unknown-delete"])
def test_rows_written_in_place_are_the_rows_replaced(tmp_path, first, then, delete) -> None:
    store = KeyedStore(tmp_path / "k.db", "things", "name", "test store")
    store._put_rows(first.items())
    store._put_rows(then.items(), delete, durable=True)
    reference = sqlite3.connect(":memory:")  # what INSERT OR REPLACE and DELETE leave
    reference.execute("CREATE TABLE things (name TEXT PRIMARY KEY, body TEXT NOT NULL)")
    for rows, gone in ((first, []), (then, delete)):
        reference.executemany("INSERT OR REPLACE INTO things (name, body) VALUES (?, ?)", rows.items())
        reference.executemany("DELETE FROM things WHERE name = ?", [(k,) for k in gone])
    assert sorted(store._rows()) == sorted(reference.execute("SELECT name, body FROM things").fetchall())
    store.close()


@pytest.mark.parametrize("roles, hold, priority", [
    (("user",), None, None), (("user",), "user", None), (("user",), "admin", None), (("user", "admin"), "admin", None),
    (("user", "admin"), None, 5), (("user",), "user", 5),
], ids=["user-plain", "user-held", "user-claims-an-admin-hold", "admin-held", "admin-priority", "user-priority"])
def test_a_request_copied_once_at_the_door_is_the_one_copied_twice(tmp_path, roles, hold, priority) -> None:
    door = SchedulerDoor(system(tmp_path / "r.db").scheduler)
    who = VerifiedCaller(name="alice", kind="user", groups=("g1",), roles=roles, call="intake_batch")
    request = held("a1", user="mallory").model_copy(update={"hold": hold, "priority": priority,
                                                            "identity": Identity(user="mallory", class_name="W")})
    got = door.admit(who, request)
    twice = request.model_copy(update={"identity": who.identity(request.identity.class_name)})  # main's spelling
    if "admin" not in roles and priority is None and hold is not None:
        twice = twice.model_copy(update={"hold": "user"})
    if "admin" not in roles and priority is not None:  # refused, as its user's (the answer names them)
        assert got.state == "refused" and got.failures[0].code == "request.priority"
        return
    assert got == twice and got.model_fields_set == twice.model_fields_set
    assert got.model_dump_json() == twice.model_dump_json()


def test_an_entry_without_instances_has_no_exit_code_whatever_its_history() -> None:
    entry = Entry(request=req("a"), submitted=1.0)
    for state in ("pending", "cancelled", "pending", "failed"):
        entry.history.append(RequestEvent(at=2.0, state=state))
        assert entry.exit_code() is None and entry.info().exit_code is None
