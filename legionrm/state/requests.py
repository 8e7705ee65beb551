"""The Scheduler's requests in SQLite: :class:`RequestStore`.

One row per request holds the request, its state and reason, its history,
its instances and its last failures, as JSON (pydantic's own form, so a
reload gives back the same models).  :meth:`RequestStore.put` replaces the
row in one transaction: the store always holds each request as it was after
its last transition.  Thread-safe (one connection behind a lock).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from legionrm.models import (
    EnactResult,
    InstanceInfo,
    InstanceRef,
    PlacementFailure,
    RequestEvent,
    SchedulingRequest,
)
from legionrm.state.sqlite import KeyedStore


@dataclass(frozen=True)
class StoredRequest:
    """A request as the store gives it back."""

    request: SchedulingRequest
    submitted: float
    state: str
    reason: str
    history: list[RequestEvent]
    instances: dict[str, InstanceInfo]
    refs: dict[str, InstanceRef]
    failures: tuple[PlacementFailure, ...]
    earliest_start: float | None
    attempts: int
    held: EnactResult | None = None


class RequestStore(KeyedStore):
    """Requests by id in the SQLite file ``path`` (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "requests", "id", "state store")

    def put(self, *, request: SchedulingRequest, submitted: float, state: str, reason: str,
            history: list[RequestEvent], instances: dict[str, InstanceInfo], refs: dict[str, InstanceRef],
            failures: tuple[PlacementFailure, ...], earliest_start: float | None, attempts: int,
            held: EnactResult | None = None) -> None:
        """Write one request as it is now (replacing what was stored)."""
        body = json.dumps({
            "request": request.model_dump(mode="json"), "submitted": submitted, "state": state, "reason": reason,
            "history": [e.model_dump(mode="json") for e in history],
            "instances": {k: v.model_dump(mode="json") for k, v in instances.items()},
            "refs": {k: v.model_dump(mode="json") for k, v in refs.items()},
            "failures": [f.model_dump(mode="json") for f in failures[:20]],
            "earliest_start": earliest_start, "attempts": attempts,
            "held": held.model_dump(mode="json") if held is not None else None,
        })
        self._put_rows([(request.request_id, body)])

    def load(self) -> Iterator[StoredRequest]:
        """Every stored request, oldest first."""
        items = [json.loads(body) for _, body in self._rows()]
        for d in sorted(items, key=lambda d: (d["submitted"], d["request"]["request_id"])):
            yield StoredRequest(
                request=SchedulingRequest.model_validate(d["request"]), submitted=d["submitted"], state=d["state"],
                reason=d["reason"], history=[RequestEvent.model_validate(e) for e in d["history"]],
                instances={k: InstanceInfo.model_validate(v) for k, v in d["instances"].items()},
                refs={k: InstanceRef.model_validate(v) for k, v in d["refs"].items()},
                failures=tuple(PlacementFailure.model_validate(f) for f in d["failures"]),
                earliest_start=d["earliest_start"], attempts=d["attempts"],
                held=EnactResult.model_validate(d["held"]) if d.get("held") else None,
            )
