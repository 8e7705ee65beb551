"""The dashboard's pages, served by the gateway: ``/`` and ``/api/state``.

The page shows every host and everyone's work, so it is the administrator's:
``legionrm up`` prints its URL with a key (``?key=...``), which the page
keeps as an HTTP-only cookie for its own fetches of ``/api/state``.  Each
poll makes the same calls as the API, through the same control plane, signed
by the gateway acting for that administrator; a part that fails is one line
in the view's ``errors`` (:func:`legionrm.gateway.dashboard.view.build_view`).
Every scheduler is asked for its status and its requests: the page lists
each scheduler's queue, and the requests of them all.  ``up --no-dashboard``
leaves these pages out; the API stays.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from importlib import resources
from typing import Any

from aiohttp import web

from legionrm import codes
from legionrm.gateway.dashboard.view import Poll, build_view
from legionrm.gateway.door import PLANE, SETTINGS, refusal, status_of
from legionrm.gateway.several.schedulers import roster_of, scheduler_rows

KEY_COOKIE = "legionrm_dashboard_key"
CALL_TIMEOUT_S = 5.0
POLLS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("records", "collection", "snapshot", {}),
    ("reports", "scheduler", "cycle_reports", {"after": 0, "timeout_s": 0.0}),
    ("enactor", "enactor", "stats", {}),
)
"""Each part of a poll asked once: its name, the actor, the call and its arguments."""
EACH: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("status", "status", {}),
    ("requests", "list_requests", {"user": None, "state": None}),
)
"""Each part of a poll asked of every scheduler (``scheduler:NAME``): its name, the call, its arguments."""


def add(app: web.Application) -> None:
    app.router.add_get("/", page)
    app.router.add_get("/api/state", state)


def _refused(request: web.Request) -> web.Response | None:
    key = request.app[SETTINGS].get("dashboard_key") or ""
    given = request.query.get("key") or request.cookies.get(KEY_COOKIE) or ""
    if key and hmac.compare_digest(given.encode(), key.encode()):
        return None
    return refusal(403, codes.AUTH_NO_PROOF, "the dashboard shows every host and everyone's work: open the URL "
                   "`legionrm up` printed (it carries the administrator's key)")


async def page(request: web.Request) -> web.Response:
    if (refused := _refused(request)) is not None:
        return refused
    text = resources.files("legionrm.gateway.dashboard").joinpath("page.html").read_text(encoding="utf-8")
    out = web.Response(text=text, content_type="text/html", headers={"Cache-Control": "no-store"})
    out.set_cookie(KEY_COOKIE, request.app[SETTINGS]["dashboard_key"], httponly=True, samesite="Strict")
    return out


async def poll(app: web.Application, user: str | None = None) -> dict[str, Any]:
    """One poll of the system as ``user`` (default: the dashboard's administrator) -> the view the page draws."""
    settings, plane = app[SETTINGS], app[PLANE]
    user = user or settings["dashboard_user"]
    errors: list[str] = []

    async def ask(target: str, method: str, args: dict[str, Any]) -> Any:
        try:
            return await asyncio.wait_for(plane.call(user, target, method, args), CALL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 -- one line in the page, the rest still shows
            _, code, reason, _ = status_of(exc)
            errors.append(f"{target}.{method}: {code}: {(reason.splitlines() or [''])[0]}")
            return None

    r = roster_of(plane)
    targets = ["scheduler", *(f"scheduler:{n}" for n in r.names[1:])]  # the default first, as ever
    snap, reports, enactor, *per = await asyncio.gather(
        *(ask(t, m, a) for _, t, m, a in POLLS), *(ask(t, m, a) for _, m, a in EACH for t in targets))
    status, requests = per[:len(r.names)], per[len(r.names):]
    records = [snap.record(n) for n in snap.resource_names()] if snap is not None else None
    every = [i for got in requests if got is not None for i in got]  # every scheduler's requests
    view = build_view(Poll(now=time.time(), records=records, requests=every if any(g is not None for g in requests)
                           else None, status=status[0], schedulers=list(scheduler_rows(r, status)),
                           report=reports[-1] if reports else None, enactor=enactor, errors=sorted(errors)))
    view["info"] = settings["info"]
    return view


async def state(request: web.Request) -> web.Response:
    if (refused := _refused(request)) is not None:
        return refused
    return web.json_response(await poll(request.app), headers={"Cache-Control": "no-store"})
