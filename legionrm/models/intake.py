"""The gateway's intake as it crosses to a Scheduler: compact tuples of text, one Ray call a group.

The submits and cancels that reach the gateway together go to a Scheduler as
one ``intake_batch`` call (one Ray call, one proof, one durable write), a list
of :class:`Submit` and :class:`Cancel` items; the reply is a list as long, one
:class:`Submitted` (a submit's answer), one :class:`Cancelled` (a cancel's), or
the exception that item met.  A request crosses as its
:class:`~legionrm.models.schedules.SchedulingRequest`'s JSON and an answer as
the JSON of its model (``model_dump_json``; the Scheduler validates a request
again with ``model_validate_json``), so neither side pickles a pydantic model
per item, the proof's digest covers plain text, and the gateway hands an
answer on to its caller as it came.
"""

from __future__ import annotations

import json
from typing import NamedTuple


class Submit(NamedTuple):
    """``user``'s submit of ``request`` (a SchedulingRequest's JSON)."""

    user: str
    request: str


class Cancel(NamedTuple):
    """``user``'s cancel of ``request_id``, for ``reason``."""

    user: str
    request_id: str
    reason: str


class Submitted(NamedTuple):
    """A submit's answer: what the gateway's status code needs, and the SchedulerResponse's JSON."""

    request_id: str
    ok: bool
    state: str
    response: str

    def result_json(self) -> str:
        """The :class:`~legionrm.models.api.SubmitResult` of this answer, as JSON, with the response's
        JSON as it came (a test holds it equal to the model's own)."""
        return (f'{{"id":{json.dumps(self.request_id)},"ok":{"true" if self.ok else "false"},'
                f'"state":{json.dumps(self.state)},"response":{self.response}}}')


class Cancelled(NamedTuple):
    """A cancel's answer: the request's RequestInfo after it, as JSON."""

    info: str
