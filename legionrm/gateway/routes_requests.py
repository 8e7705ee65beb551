"""The request routes: submit, list, show, cancel, logs (``/api/v1/requests...``); the
accounting records of finished instances (``/api/v1/history``); the queue's hold, release,
update and top (``/api/v1/requests/ID/hold``...), and its views, the fair-share tree and the
pending requests' priorities (``/api/v1/share``, ``/api/v1/prio``).

A submitted request is a request file's tables (or its TOML text) with
``--set`` overrides; its ``[identity]``, when present, must name the caller
(else ``auth.identity``), and the caller's name replaces it anyway: the
identity is the key that signed the call, nothing the request says.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Awaitable, Callable
from typing import Any, get_args

from aiohttp import web

from legionrm import codes
from legionrm.auth.errors import AuthRefusedError
from legionrm.errors import ConfigError
from legionrm.gateway.door import INTAKE, PLANE, answer, body_of, refusal, status_of, user_of
from legionrm.gateway.plane import Unavailable
from legionrm.gateway.several.schedulers import each, find, roster, routed
from legionrm.models import FINAL_STATES, RequestInfo, RequestState, SchedulingRequest, WorkEnd
from legionrm.models.api import (
    ApiError,
    CancelBody,
    CancelResult,
    EventList,
    HistoryList,
    LogsResult,
    RequestList,
    SubmitBody,
)
from legionrm.models.priority import PrioReport, UpdateBody
from legionrm.request_file import parse_request
from legionrm.scheduler.watch.settle import page_cursor
from legionrm.tomlio import loads_toml

STATES = get_args(RequestState)  # every state a request may be in, in its life's order


def request_from(doc: dict[str, Any] | None, toml: str | None, overrides: dict[str, str], rid: str | None,
                 user: str) -> SchedulingRequest:
    """The :class:`SchedulingRequest` a submit body describes, as ``user``'s (see the module doc)."""
    if (doc is None) == (toml is None):
        raise ConfigError("give the request as `request` (its tables) or `toml` (its text), one of them", file="body")
    # the caller's doc is left as it was: --set changes nested tables (a deep copy), the rest only the top
    doc = (loads_toml(toml, file="request") if toml is not None else
           copy.deepcopy(doc or {}) if overrides else dict(doc or {}))
    for key, value in overrides.items():
        set_key(doc, key, value)
    ident = doc.get("identity")
    if isinstance(ident, dict) and ident.get("user") not in (None, user):
        raise AuthRefusedError(codes.AUTH_IDENTITY, f"the request's [identity] names {ident.get('user')!r} but the call "
                               f"is signed by {user!r}: leave [identity] out, or name yourself", "gateway")
    doc["identity"] = {**(ident if isinstance(ident, dict) else {}), "user": user}
    if rid is not None:
        doc["request_id"] = rid
    return parse_request(doc, file="request")


def set_key(doc: dict[str, Any], dotted: str, text: str) -> None:
    """``--set a.b=value``: ``value`` read as a TOML value (``12``, ``true``, ``"x"``), else as text;
    a number in the path indexes a list (``object.0.count``)."""
    try:
        value: Any = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    parts = dotted.split(".")
    node: Any = doc
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"--set {dotted}: {part!r} is not an index of that list", file="--set")
            if last:
                node[int(part)] = value
            node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ConfigError(f"--set {dotted}: {'.'.join(parts[:i])} is not a table", file="--set")


async def submit(request: web.Request) -> web.Response:
    body: SubmitBody = await body_of(request, SubmitBody)
    req = request_from(body.request, body.toml, body.set, body.id, user_of(request))
    # in a batch with the others arriving now for the same scheduler; its answer (a SubmitResult) as it came
    got = await request.app[INTAKE].submit(user_of(request), req, to=f"scheduler:{routed(request, req)}")
    return web.Response(text=got.result_json(), content_type="application/json",
                        status=201 if got.ok or got.state == "pending" else 200)  # 200: answered, not taken


async def list_requests(request: web.Request) -> web.Response:
    """The live and recent requests (``?all=1``: every one the history keeps), ``?limit=N`` a page,
    ``?cursor=C`` the page after the one whose ``next`` was C."""
    q = request.query
    user, state = q.get("user") or None, q.get("state") or None
    if state is not None and state not in STATES:
        return refusal(422, codes.REQUEST_INVALID, f"state {state!r} is not one of {', '.join(STATES)}")
    limit_text = q.get("limit")
    if limit_text is not None and not (limit_text.isdigit() and 0 < int(limit_text) <= 100_000):
        return refusal(422, codes.REQUEST_INVALID, f"limit {limit_text!r} is not a whole number from 1 to 100000")
    limit = int(limit_text) if limit_text else None
    pages = await _answered(request, "list_page", {
        "user": user, "state": state, "every": q.get("all", "").lower() in ("1", "true", "yes"), "limit": limit,
        "cursor": q.get("cursor") or None})
    return answer(merged_page([p if isinstance(p, RequestList) else RequestList.model_validate(p) for p in pages],
                              limit))


def merged_page(pages: list[RequestList], limit: int | None) -> RequestList:
    """One page of ``list`` from each scheduler's page after the same cursor, in the book's order
    (submit time, then id; every scheduler orders and pages by it): up to the first ``limit``, and
    no further than the end of any page that has more after it (what comes next there may come
    before the others' later requests), with the cursor after the last one given when there is more."""
    def key(i: RequestInfo) -> tuple[float, str]:
        return (i.submitted, i.id)

    ends = [key(p.requests[-1]) for p in pages if p.next is not None and p.requests]
    infos = sorted((i for p in pages for i in p.requests if not ends or key(i) <= min(ends)), key=key)
    more = bool(ends)
    if limit is not None and len(infos) > limit:
        infos, more = infos[:limit], True
    return RequestList(requests=tuple(infos), next=page_cursor(key(infos[-1])) if more and infos else None)


async def _answered(request: web.Request, method: str, args: dict[str, Any]) -> list[Any]:
    """``method`` on every scheduler; a scheduler that does not answer is left out, unless none
    does (a refusal, or any other error, is raised as it came)."""
    got = await each(request, method, args)
    errors = [r for _, r in got if isinstance(r, BaseException)]
    for exc in errors:
        if not isinstance(exc, Unavailable) or len(errors) == len(got):
            raise exc
    return [r for _, r in got if not isinstance(r, BaseException)]


async def _listed(request: web.Request, user: str | None, state: str | None) -> list[RequestInfo]:
    """The requests every scheduler holds (see :func:`_answered`)."""
    return [info for infos in await _answered(request, "list_requests", {"user": user, "state": state})
            for info in infos]


async def show(request: web.Request) -> web.Response:
    info = await find(request, "request_info", {"request_id": request.match_info["id"]})
    return answer(info)


async def _cancel(request: web.Request, rid: str, reason: str) -> RequestInfo | str:
    """The request's info after its cancel: a RequestInfo, or its JSON as the Scheduler's batch answered it."""
    names = roster(request).names
    if len(names) == 1:  # in a batch with the others arriving now; with several, the one that holds it
        return (await request.app[INTAKE].cancel(user_of(request), rid, reason, to=f"scheduler:{names[0]}")).info
    return await find(request, "cancel", {"request_id": rid, "reason": reason})  # type: ignore[no-any-return]


async def cancel_one(request: web.Request) -> web.Response:
    reason = (await body_of(request, CancelBody)).reason
    got = await _cancel(request, request.match_info["id"], reason)
    return web.Response(text=got, content_type="application/json") if isinstance(got, str) else answer(got)


async def cancel_many(request: web.Request) -> web.Response:
    """The ids given, or (``user`` / ``state``) every matching request the caller may see."""
    body: CancelBody = await body_of(request, CancelBody)
    ids = list(body.ids)
    if not ids and (body.user or body.state):
        infos = await _listed(request, body.user, body.state)
        ids = [i.id for i in infos if i.state not in FINAL_STATES]
    done, refused = [], {}
    for rid in ids:
        try:
            got = await _cancel(request, rid, body.reason)
            done.append(RequestInfo.model_validate_json(got) if isinstance(got, str) else got)
        except Exception as exc:  # noqa: BLE001 -- each id answers for itself
            _, code, reason, by = status_of(exc)
            refused[rid] = ApiError(code=code, reason=reason.splitlines()[0] if reason else code, by=by)
    return answer(CancelResult(cancelled=tuple(done), refused=refused))


async def events(request: web.Request) -> web.Response:
    """The request's status changes after ``?cursor=`` (``show --follow``); its owner's or an administrator's."""
    try:
        cursor = int(request.query.get("cursor", "0"))
    except ValueError:
        return refusal(422, codes.REQUEST_INVALID, "cursor must be a whole number")
    got = await find(request, "events_since", {"request_id": request.match_info["id"], "cursor": cursor})
    return answer(EventList(events=tuple(got)))


async def logs(request: web.Request) -> web.Response:
    """A request's output as its node's runner kept it (the tail under the cap): stdout and stderr of
    ``?instance=`` (default the first); its owner's or an administrator's (the Scheduler's door judges)."""
    q = request.query
    instance: int | str | None = q.get("instance")
    if isinstance(instance, str) and instance.isdigit():
        instance = int(instance)
    rid = request.match_info["id"]
    texts: dict[str, str] = {}
    for stream in ("stdout", "stderr"):
        data, _, _ = await find(request, "logs", {"request_id": rid, "instance": instance,
                                                  "stream": stream, "offset": 0, "limit": 1 << 20})
        texts[stream] = bytes(data).decode("utf-8", "replace")
    return answer(LogsResult(id=rid, stdout=texts["stdout"], stderr=texts["stderr"]))


async def history(request: web.Request) -> web.Response:
    """Finished instances' records (``legionrm history``), ``?user=&since=&until=&state=`` (times in
    seconds since the epoch); a user's own, an administrator's anyone's (the Scheduler's door judges)."""
    q = request.query
    ask: dict[str, Any] = {"user": q.get("user") or None, "state": q.get("state") or None}
    if ask["state"] is not None and ask["state"] not in get_args(WorkEnd):
        return refusal(422, codes.REQUEST_INVALID, f"state {ask['state']!r} is not one of {', '.join(get_args(WorkEnd))}")
    for key in ("since", "until"):
        try:
            ask[key] = float(q[key]) if q.get(key) else None
        except ValueError:
            return refusal(422, codes.REQUEST_INVALID, f"{key} must be seconds since the epoch, not {q[key]!r}")
    records = [r for got in await _answered(request, "history", ask) for r in got]  # each scheduler keeps its own
    return answer(HistoryList(records=tuple(sorted(records, key=lambda r: (r.end, r.instance_id)))))


def queue_verb(verb: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``hold`` / ``release`` (the request's owner or an administrator) or ``top`` (administrators)."""

    async def handle(request: web.Request) -> web.Response:
        return answer(await find(request, verb, {"request_id": request.match_info["id"]}))

    handle.__name__ = verb
    return handle


async def update(request: web.Request) -> web.Response:
    """An administrator sets a pending request's fixed priority, or its QoS."""
    body: UpdateBody = await body_of(request, UpdateBody)
    return answer(await find(request, "update", {
        "request_id": request.match_info["id"], "priority": body.priority, "qos": body.qos,
        "clear_priority": body.clear_priority}))


async def share(request: web.Request) -> web.Response:
    """The default scheduler's fair-share tree."""
    return answer(await request.app[PLANE].call(user_of(request), "scheduler", "share", {}))


async def prio(request: web.Request) -> web.Response:
    """Every scheduler's pending requests' factors (the weights: the first that answered's)."""
    reports = [r if isinstance(r, PrioReport) else PrioReport.model_validate(r)
               for r in await _answered(request, "prio", {})]
    return answer(PrioReport(weights=reports[0].weights, rows=tuple(row for r in reports for row in r.rows)))
