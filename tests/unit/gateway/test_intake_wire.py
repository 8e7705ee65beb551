"""The intake's compact form (:mod:`legionrm.models.intake`): a request crosses as its JSON and comes
back equal; a submit's answer becomes the SubmitResult the model itself would write."""

from __future__ import annotations

from pathlib import Path

import pytest

from legionrm.models import PlacementFailure, SchedulerResponse, SchedulingRequest
from legionrm.models.api import SubmitResult
from legionrm.models.intake import Submitted
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
