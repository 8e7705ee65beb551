"""A batch of heartbeats (``Collection.update_many``) leaves the Collection
exactly as the same heartbeats one by one would, refusing the same ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.collection.attrvalues import common_tag
from legionrm.collection.collection import Collection
from legionrm.errors import CollectionError, UnknownResourceError
from legionrm.mil import values as V
from legionrm.testing import FakeClock, host

NAMES = ["h1", "h2", "h3"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-1e3, 1e3, allow_nan=False),
                   st.sampled_from(["a", "b"]), st.just(2**70))  # 2**70: refused (not 64-bit)
UPDATE = st.tuples(st.sampled_from(NAMES + ["ghost"]),
                   st.dictionaries(st.sampled_from(["load", "free_cpus", "tag", "fresh", "@off"]), VALUES, max_size=3))  # (@off: refused)


def fleet() -> Collection:
    c = Collection(clock=FakeClock())
    for n in NAMES:
        c.join(host(n, cpus=8, load=0.5, free_cpus=8, tag="x"))
    return c


def state(c: Collection) -> tuple:
    snap = c.snapshot()
    table = snap.table
    cols = {a: [table.column(a).value(r, table.strings.strings) if table.column(a) else None
                for r in range(len(table.names))] for a in table.attribute_names()}
    return ({n: c.retrieve_all_attributes(n) for n in NAMES}, sorted(snap.names('$load > 0')),
            {a: dict(zip(table.names.tolist(), v)) for a, v in cols.items()})


@settings(max_examples=150, deadline=None)
@given(st.lists(UPDATE, max_size=8))
def test_a_batch_equals_the_heartbeats_one_by_one(updates) -> None:
    one, batch = fleet(), fleet()
    errors_one = []
    for name, attrs in updates:
        try:
            one.update(name, attrs)
        except (UnknownResourceError, CollectionError) as exc:
            errors_one.append(type(exc))
    try:
        batch.update_many(updates)
        raised = None
    except (UnknownResourceError, CollectionError) as exc:
        raised = type(exc)
    assert state(batch) == state(one)
    assert raised == (errors_one[0] if errors_one else None)


@pytest.mark.parametrize("bad", [{"@heartbeat": 1.0}, {"load": 2**70}], ids=["reserved-name", "int-too-big"])
def test_a_refused_heartbeat_changes_nothing_and_the_others_apply(bad) -> None:
    c = fleet()
    with pytest.raises(CollectionError):
        c.update_many([("h1", bad), ("h2", {"load": 7.5})])
    assert c.retrieve_all_attributes("h1")["load"] == 0.5
    assert c.retrieve_all_attributes("h2")["load"] == 7.5


@pytest.mark.parametrize("vals, tag", [
    ([1, 2, 3], V.INT),
    ([True, False], V.BOOL),
    ([True, 1], None),  # (bool is an int to Python, not to MIL)
    ([1.5, 2.0], V.FLOAT),
    ([1, 2.0], None),
    (["a", "b"], V.STR),
    ([V.UNDEFINED, V.UNDEFINED], V.UNDEF),
    ([V.UNDEFINED, 1], None),
    ([], None),
], ids=["ints", "bools", "bool-and-int", "floats", "int-and-float", "strings", "undefined", "undefined-and-int", "none"])
def test_common_tag(vals: list, tag: int | None) -> None:
    assert common_tag(vals) == tag
