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

Over Ray the group crosses packed: its items as one JSON text
(:func:`pack_items`, read back by :func:`unpack_items`), its replies as one
pickle (:func:`pack_replies`: the exceptions among them cross as themselves).
One string and one bytes object cost Ray's serialization less than a list of
tuples each way (about a millisecond of CPU a group, gateway and Scheduler
together, and as much off its round trip: ``benchmarks/README.md``, round
gw500f), and the Scheduler checks the group's proof over the text before it
reads a single item.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii
from typing import Any, NamedTuple


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
        return (f'{{"id":{_text(self.request_id)},"ok":{"true" if self.ok else "false"},'
                f'"state":{_text(self.state)},"response":{self.response}}}')


_text = encode_basestring_ascii
"""A string as ``json.dumps`` writes it (what its encoder calls for one: ``ensure_ascii``), without its wrapping."""


class Cancelled(NamedTuple):
    """A cancel's answer: the request's RequestInfo after it, as JSON."""

    info: str


def pack_items(items: Sequence[Submit | Cancel]) -> str:
    """``items`` as one JSON text (see the module doc): ``["s", user, request]`` a submit,
    ``["c", user, request_id, reason]`` a cancel, in order; TypeError for anything else."""
    rows: list[tuple[str, ...]] = []
    for item in items:
        if type(item) is Submit:
            rows.append(("s", *item))
        elif type(item) is Cancel:
            rows.append(("c", *item))
        else:
            raise TypeError(f"a group holds Submit and Cancel items, not {type(item).__name__}")
    return json.dumps(rows, separators=(",", ":"))


def unpack_items(text: str) -> list[Submit | Cancel] | None:
    """The items :func:`pack_items` made ``text`` of; None when ``text`` is anything else (not JSON,
    not a list, a row of another kind or length, a field that is not text)."""
    try:
        rows = json.loads(text)
    except ValueError:
        return None
    if type(rows) is not list:
        return None
    items: list[Submit | Cancel] = []
    for row in rows:
        if type(row) is not list or not all(type(v) is str for v in row):
            return None
        if len(row) == 3 and row[0] == "s":
            items.append(Submit(row[1], row[2]))
        elif len(row) == 4 and row[0] == "c":
            items.append(Cancel(row[1], row[2], row[3]))
        else:
            return None
    return items


def pack_replies(replies: list[Any]) -> bytes:
    """A group's replies (:class:`Submitted`, :class:`Cancelled`, exceptions that pickle) as one pickle,
    as the Scheduler answers the gateway (which reads Ray's answers as pickles anyway)."""
    return pickle.dumps(replies, protocol=pickle.HIGHEST_PROTOCOL)


def unpack_replies(packed: bytes) -> list[Any]:
    """The replies :func:`pack_replies` packed (at the gateway: the answer of its own Scheduler)."""
    replies = pickle.loads(packed)
    if not isinstance(replies, list):
        raise TypeError(f"a group's replies are a list, not {type(replies).__name__}")
    return replies
