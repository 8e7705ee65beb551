"""The Scheduler's requests in SQLite: :class:`RequestStore`.

One row per request holds the request, its state and reason, its history,
its instances and its last failures, as JSON (pydantic's own form, so a
reload gives back the same models).  :meth:`RequestStore.put` replaces the
row in one transaction: the store always holds each request as it was after
its last transition.  Thread-safe (one connection behind a lock).

A finished request whose accounting is written leaves the live table
(:meth:`RequestStore.settle`, in one transaction) for ``requests_finished``,
the durable history: one row per request with the columns ``list`` pages and
filters on (user, state, submitted, ended).  :meth:`RequestStore.load` (what
a restart reads) then reads live work only; :meth:`RequestStore.finished`,
:meth:`RequestStore.finished_page` and :meth:`RequestStore.finished_counts`
read the history.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic_core import to_json

from legionrm.models import (
    EnactResult,
    InstanceInfo,
    InstanceRef,
    PlacementFailure,
    RequestEvent,
    SchedulingRequest,
)
from legionrm.state.sqlite import KeyedStore, StateError

SETTLED_PARSED = 4096
"""How many settled requests the store keeps parsed (more than a ``list`` of the recent ones shows)."""


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
        with self._lock:
            self._db.execute("CREATE TABLE IF NOT EXISTS requests_finished (id TEXT PRIMARY KEY, user TEXT NOT NULL, "
                             "state TEXT NOT NULL, submitted REAL NOT NULL, ended REAL NOT NULL, body TEXT NOT NULL)")
            self._db.execute("CREATE INDEX IF NOT EXISTS requests_finished_order ON requests_finished (submitted, id)")
            self._db.execute("CREATE INDEX IF NOT EXISTS requests_finished_ended ON requests_finished (ended)")
        self._settled: dict[str, StoredRequest] = {}
        """A settled row's body -> the request it holds: the recent ones are read at every ``list`` (the
        dashboard's and the gauges' polls), and a settled row never changes (settled again, it is another body)."""

    def put(self, *, request: SchedulingRequest, submitted: float, state: str, reason: str,
            history: list[RequestEvent], instances: dict[str, InstanceInfo], refs: dict[str, InstanceRef],
            failures: tuple[PlacementFailure, ...], earliest_start: float | None, attempts: int,
            held: EnactResult | None = None) -> None:
        """Write one request as it is now (replacing what was stored)."""
        self.put_many([dict(request=request, submitted=submitted, state=state, reason=reason, history=history,
                            instances=instances, refs=refs, failures=failures, earliest_start=earliest_start,
                            attempts=attempts, held=held)], durable=False)

    def put_many(self, items: list[dict[str, Any]], durable: bool = True, wait: bool = True) -> int:
        """Write many requests (each the keyword arguments of :meth:`put`) in one transaction:
        all or none; ``durable`` (the default): synced to the disk before this returns (a group commit),
        or, with ``wait = False``, once :meth:`synced` returns for the ticket this returns."""
        return self._put_rows([(item["request"].request_id, _body(**item)) for item in items], durable=durable,
                              wait=wait)

    def load(self) -> Iterator[StoredRequest]:
        """Every stored request of the live table (not the settled history), oldest first."""
        items = [json.loads(body) for _, body in self._rows()]
        for d in sorted(items, key=lambda d: (d["submitted"], d["request"]["request_id"])):
            yield _stored(d)

    # --- the finished requests' history -------------------------------------------------

    def settle(self, ended: dict[str, float]) -> None:
        """Move each finished request of ``ended`` (id -> when it ended) from
        the live table to the history, in one transaction (unknown ids:
        nothing); :class:`~legionrm.state.StoreFault` with nothing moved if the write fails."""
        if not ended:
            return
        cols = ("SELECT id, json_extract(body, '$.request.identity.user'), json_extract(body, '$.state'), "
                "json_extract(body, '$.submitted'), ?, body FROM requests WHERE id = ?")

        def work(db: sqlite3.Connection) -> None:
            for rid, at in ended.items():
                db.execute(f"INSERT OR REPLACE INTO requests_finished {cols}", (at, rid))
                db.execute("DELETE FROM requests WHERE id = ?", (rid,))

        self._write(work)

    def finished(self, request_id: str) -> StoredRequest | None:
        """One settled request, or None."""
        rows = self._read("SELECT body FROM requests_finished WHERE id = ?", (request_id,))
        return _stored(json.loads(rows[0][0])) if rows else None

    def finished_page(self, *, user: str | None = None, state: str | None = None, after: tuple[float, str] | None = None,
                      limit: int = 1000, recent: tuple[float, int] | None = None) -> list[StoredRequest]:
        """Settled requests, oldest first (by submit time, then id), of
        ``user``, in ``state``, after the key ``after`` (a page's cursor), at
        most ``limit``; with ``recent = (since, keep)`` only those that ended at
        or after ``since`` and are among the ``keep`` that ended last."""
        source = "requests_finished"
        args: list[object] = []
        if recent is not None:
            source = ("(SELECT * FROM requests_finished WHERE ended >= ? ORDER BY ended DESC, id DESC LIMIT ?)")
            args += [recent[0], recent[1]]
        where, wargs = _where(user, state, after)
        sql = f"SELECT body FROM {source}{where} ORDER BY submitted, id LIMIT ?"
        rows = self._read(sql, (*args, *wargs, limit))
        return [self._parsed(r[0]) for r in rows]

    def _parsed(self, body: str) -> StoredRequest:
        """The settled request ``body`` holds, parsed once (a copy of its lists and maps each time)."""
        item = self._settled.get(body)
        if item is None:
            if len(self._settled) >= SETTLED_PARSED:
                self._settled.clear()
            item = self._settled[body] = _stored(json.loads(body))
        return dataclasses.replace(item, history=list(item.history), instances=dict(item.instances),
                                   refs=dict(item.refs))

    def finished_counts(self, *, user: str | None = None, recent: tuple[float, int] | None = None) -> dict[str, int]:
        """How many settled requests (of ``user``; ``recent`` as in :meth:`finished_page`) are in each state."""
        source, args = "requests_finished", list[object]()
        if recent is not None:
            source = "(SELECT * FROM requests_finished WHERE ended >= ? ORDER BY ended DESC, id DESC LIMIT ?)"
            args = [recent[0], recent[1]]
        where, wargs = _where(user, None, None)
        rows = self._read(f"SELECT state, COUNT(*) FROM {source}{where} GROUP BY state", (*args, *wargs))
        return {str(s): int(n) for s, n in rows}


def _body(*, request: SchedulingRequest, submitted: float, state: str, reason: str, history: list[RequestEvent],
          instances: dict[str, InstanceInfo], refs: dict[str, InstanceRef], failures: tuple[PlacementFailure, ...],
          earliest_start: float | None, attempts: int, held: EnactResult | None = None) -> str:
    """One request's row body: its fields as JSON, pydantic's own form (so a reload gives back the same models),
    written by pydantic's serializer in one pass (a time that is not finite as JSON's ``Infinity``, as ``json`` does)."""
    return to_json({
        "request": request, "submitted": submitted, "state": state, "reason": reason, "history": history,
        "instances": instances, "refs": refs, "failures": failures[:20], "earliest_start": earliest_start,
        "attempts": attempts, "held": held,
    }, inf_nan_mode="constants").decode()


def _where(user: str | None, state: str | None, after: tuple[float, str] | None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    args: list[object] = []
    if user is not None:
        clauses.append("user = ?")
        args.append(user)
    if state is not None:
        clauses.append("state = ?")
        args.append(state)
    if after is not None:
        clauses.append("(submitted, id) > (?, ?)")
        args += [after[0], after[1]]
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


def _stored(d: dict) -> StoredRequest:
    try:
        return StoredRequest(
            request=SchedulingRequest.model_validate(d["request"]), submitted=d["submitted"], state=d["state"],
            reason=d["reason"], history=[RequestEvent.model_validate(e) for e in d["history"]],
            instances={k: InstanceInfo.model_validate(v) for k, v in d["instances"].items()},
            refs={k: InstanceRef.model_validate(v) for k, v in d["refs"].items()},
            failures=tuple(PlacementFailure.model_validate(f) for f in d["failures"]),
            earliest_start=d["earliest_start"], attempts=d["attempts"],
            held=EnactResult.model_validate(d["held"]) if d.get("held") else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"the state store holds a damaged request: {exc}") from None
