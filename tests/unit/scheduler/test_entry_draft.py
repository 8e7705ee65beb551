"""An entry's draft (what a write makes it) is the copy ``dataclasses.replace`` gives:
every field the same or as changed, its history, instances and refs copied (a change to
the draft leaves the entry as it was), a change of one of them kept, and a name no field
has refused."""

from __future__ import annotations

import dataclasses

import pytest

from legionrm.models import InstanceInfo, RequestEvent
from legionrm.scheduler.entry import Entry
from tests.unit.scheduler.test_lifecycle import req


def entry() -> Entry:
    e = Entry(request=req("r1"), submitted=5.0, state="running", reason="started", attempts=2)
    e.history.append(RequestEvent(at=5.0, state="pending", reason="submitted"))
    e.instances["i1"] = InstanceInfo(id="i1", host="h0", started_at=6.0)
    return e


@pytest.mark.parametrize("changes", [
    {},
    {"state": "completed", "reason": "done"},
    {"attempts": 0, "failures": ()},
    {"history": []},
    {"instances": {}, "refs": {}},
], ids=["none", "state", "fields", "history", "maps"])
def test_a_draft_is_the_replaced_copy(changes: dict[str, object]) -> None:
    e = entry()
    want = dataclasses.replace(e, **{"history": list(e.history), "instances": dict(e.instances),
                                     "refs": dict(e.refs), **changes})
    got = e.draft(**changes)
    assert got == want and type(got) is Entry
    assert list(vars(got)) == [f.name for f in dataclasses.fields(Entry)]  # (the fields in their order)
    got.history.append(RequestEvent(at=9.0, state="completed"))
    got.instances["i2"] = InstanceInfo(id="i2", host="h1", started_at=9.0)
    assert len(e.history) == 1 and list(e.instances) == ["i1"]  # the entry is as it was


def test_a_draft_refuses_a_name_no_field_has() -> None:
    with pytest.raises(TypeError):
        entry().draft(stat="completed")
