"""The intake's compact form (:mod:`legionrm.models.intake`): a request crosses as its JSON and comes
back equal; a submit's answer becomes the SubmitResult the model itself would write; a group packed
reads back as its items, anything else as nothing, and its replies cross with their exceptions."""

from __future__ import annotations

import json

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from legionrm.auth.errors import AuthRefusedError
from legionrm.errors import SchedulingError
from legionrm.models import PlacementFailure, SchedulerResponse, SchedulingRequest
from legionrm.models.api import SubmitResult
from legionrm.models.intake import (
    Cancel,
    Cancelled,
    Submit,
    Submitted,
    pack_items,
    pack_replies,
    unpack_items,
    unpack_replies,
)
from legionrm.request_file import load_request

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples" / "requests").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_a_request_crosses_as_its_json_and_comes_back_equal(path: Path) -> None:
    request = load_request(path, user="alice")
    assert SchedulingRequest.model_validate_json(request.model_dump_json()) == request


@pytest.mark.parametrize("rid, ok, state", [("r1", True, "running"), ('a "quoted" \\ id', False, "pending"),
                                            ("ünï-çødé", False, "refused")], ids=["placed", "quoted", "unicode"])
def test_a_submits_answer_is_the_submit_result_the_model_writes(rid: str, ok: bool, state: str) -> None:
    response = SchedulerResponse(request_id=rid, ok=ok, state=state, message="m", failures=(
        PlacementFailure(key="*", resource="h1", code="queue.held", reason="held", stage="plan"),))
    got = Submitted(rid, ok, state, response.model_dump_json())
    want = SubmitResult(id=rid, ok=ok, state=state, response=response)
    assert SubmitResult.model_validate_json(got.result_json()) == want


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)  # any text: quotes, escapes, line breaks


@given(TEXT, st.booleans(), TEXT)
def test_a_submits_answer_is_written_as_json_dumps_writes_its_strings(rid: str, ok: bool, state: str) -> None:
    got = Submitted(rid, ok, state, "{}").result_json()
    assert got == (f'{{"id":{json.dumps(rid)},"ok":{json.dumps(ok)},"state":{json.dumps(state)},"response":{{}}}}')
ITEM = st.one_of(st.builds(Submit, TEXT, TEXT), st.builds(Cancel, TEXT, TEXT, TEXT))


@given(st.lists(ITEM, max_size=8))
def test_a_packed_group_reads_back_as_its_items(items: list[Submit | Cancel]) -> None:
    back = unpack_items(pack_items(items))
    assert back == items and [type(i) for i in back] == [type(i) for i in items]  # type: ignore[union-attr]


@pytest.mark.parametrize("text", ['not json', '{"s": 1}', '[["s", "alice"]]', '[["c", "alice", "r1"]]',
                                  '[["s", "alice", "{}", "x"]]', '[["x", "alice", "{}"]]', '[["s", "alice", 3]]',
                                  '[["s", null, "{}"]]', '["s", "alice", "{}"]', '[{"s": "alice"}]'],
                         ids=["not-json", "not-a-list", "a-short-submit", "a-short-cancel", "a-long-submit",
                              "another-kind", "a-number", "a-null", "a-row-not-in-a-list", "an-object-row"])
def test_a_text_not_packed_as_items_reads_as_none(text: str) -> None:
    assert unpack_items(text) is None


def test_only_items_are_packed() -> None:
    with pytest.raises(TypeError, match="Submit and Cancel"):
        pack_items([("alice", "{}")])  # type: ignore[list-item]


def test_replies_cross_packed_with_their_exceptions() -> None:
    replies = [Submitted("r1", True, "pending", "{}"), Cancelled("{}"),
               AuthRefusedError("auth.not_owner", "not yours", "scheduler"), SchedulingError("no request 'x'")]
    back = unpack_replies(pack_replies(replies))
    assert back[:2] == replies[:2] and [type(r) for r in back] == [type(r) for r in replies]
    assert (back[2].code, back[2].reason, back[2].by) == ("auth.not_owner", "not yours", "scheduler")
    assert str(back[3]) == "no request 'x'"
